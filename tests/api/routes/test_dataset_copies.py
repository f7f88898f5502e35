"""PUT /api/v2/resources/{id}/copy of a dataset: the copy is a new, independent layer with its
own data (GeoPackage file or PostGIS table, COG), name, alternate, attributes, style and
thumbnail, that maps, features and downloads exactly as its source, and outlives it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import rasterio
import sqlalchemy as sa
from sqlalchemy import func, select

import cartotheca  # noqa: F401  (PROJ_DATA before rasterio and mapnik)
from cartotheca.catalogue import dataset_copies, resource_lifecycle
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, principal_for
from cartotheca.catalogue.dataset_records import stored_of
from cartotheca.catalogue.families import build_kinds
from cartotheca.db.models import Dataset, Resource
from cartotheca.geodata import ingest
from cartotheca.geodata.storage import FeatureQuery
from cartotheca.geodata.storage.stores import vector_store
from cartotheca.ows import render
from cartotheca.ows.thumbnails import MapThumbnails
from tests.api.routes.test_permissions_and_executions import wait
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import (
    POLYGONS,
    polygons_sld,
    publish_file,
    raster_pixels,
    write_polygons,
    write_raster,
)
from tests.ows.conftest import wms
from tests.ows.wfs_fixtures import read_features, wfs
from tests.support.pixels import pixels

# The kinds as the app builds them: copies and deletions made directly, outside a request.
KINDS = build_kinds(MapThumbnails(), render.forget_data)
POLYGON_MAP = {"crs": "EPSG:4326", "bbox": "35,-5,65,25", "width": 120, "height": 120,
               "format": "image/png", "transparent": "TRUE"}
RASTER_MAP = {"crs": "EPSG:4326", "bbox": "40,0,52,16", "width": 64, "height": 48, "format": "image/png"}


@pytest.fixture
def owner(db):
    return make_user(db, "olga")


@pytest.fixture
def copier(db):
    make_user(db, "carl")
    return basic("carl", PASSWORD)


@pytest.fixture
def polygons(db, settings, owner, tmp_path):
    return publish_file(db, settings, owner, write_polygons(tmp_path), title="Polygons", sld=polygons_sld())


@pytest.fixture
def raster(db, settings, owner, tmp_path):
    return publish_file(db, settings, owner, write_raster(tmp_path), title="Raster")


def stored_names(settings) -> set[str]:
    """Every file of the file stores and every table of the PostGIS datastore."""
    names = set()
    for folder in (Path(settings.DATA_DIR) / "vector", Path(settings.raster_dir) / "cog"):
        if folder.exists():
            names |= {f"file:{p.name}" for p in folder.iterdir()}
    if settings.DATASTORE_URL:
        with vector_store(settings, "postgis").engine.connect() as conn:
            names |= {f"table:{t}" for t in conn.scalars(sa.text(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))}
    return names


def copy_via_api(client, resource, headers, defaults=None) -> dict:
    body = {"defaults": json.dumps(defaults)} if defaults is not None else None
    return wait(client, client.put(f"/api/v2/resources/{resource.id}/copy", headers=headers, data=body),
                headers)


def copied_id(done: dict) -> int:
    assert done["status"] == "finished", done
    return done["output_params"]["resources"][0]["id"]


def get_map(client, alternate: str, **params) -> np.ndarray:
    response = wms(client, request="GetMap", version="1.3.0", layers=alternate, **params)
    assert response.status_code == 200 and response.headers["content-type"] == "image/png", response.text
    return pixels(response.content)


def features(client, alternate: str) -> list[tuple]:
    response = wfs(client, request="GetFeature", version="2.0.0", typenames=alternate,
                   outputformat="application/json")
    assert response.status_code == 200, response.text
    found = response.json()["features"]
    return sorted((json.dumps(f["properties"], sort_keys=True), json.dumps(f["geometry"])) for f in found)


def drop_data(db, settings, resource) -> None:
    """Remove a dataset's stored data behind the catalogue's back (a store that lost it)."""
    ingest.discard(settings, stored_of(db.get(Dataset, resource.id)))


def test_vector_copy_is_an_independent_layer(client, db, settings, owner, copier, polygons, tmp_path):
    source_alternate = polygons.alternate
    source_map = get_map(client, source_alternate, **POLYGON_MAP)
    source_features = features(client, source_alternate)
    before = stored_names(settings)

    done = copy_via_api(client, polygons, copier, {"title": "Copy of Polygons"})
    pk = copied_id(done)
    record = client.get(f"/api/v2/datasets/{pk}", headers=copier).json()["dataset"]
    source_record = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    name = record["alternate"].split(":", 1)[1]
    assert record["alternate"] != source_alternate and record["alternate"] == f"geonode:{name}"
    assert name.startswith("polygons_") and len(name) == len("polygons_") + 32
    assert record["name"] == name and record["title"] == "Copy of Polygons"
    assert record["owner"]["username"] == "carl" and record["subtype"] == "vector"
    assert [a["attribute"] for a in record["attribute_set"]] == \
        [a["attribute"] for a in source_record["attribute_set"]]
    assert record["thumbnail_url"] != source_record["thumbnail_url"]
    assert client.get(record["thumbnail_url"].split("testserver", 1)[1]).status_code == 200
    layer_links = [link["url"] for link in record["links"]
                   if link["link_type"] in ("image", "data") and "/thumbnails/" not in link["url"]]
    assert layer_links and [url for url in layer_links if name not in url] == []
    # exactly one copy of the data: the route's trial run copied none
    assert len(stored_names(settings) - before) == 1
    assert np.array_equal(get_map(client, record["alternate"], **POLYGON_MAP), source_map)
    assert features(client, record["alternate"]) == source_features
    assert len(source_features) == len(POLYGONS)
    download = client.get(f"/datasets/{record['alternate']}/dataset_download")
    assert download.status_code == 200 and download.headers["content-type"] == "application/zip"
    path = tmp_path / "copy.zip"
    path.write_bytes(download.content)
    assert read_features(f"/vsizip/{path}")["name"] == [p["name"] for p in POLYGONS]

    # the source is untouched, then deleted, which drops its data: the copy goes on working
    db.rollback()
    assert db.get(Resource, polygons.id).alternate == source_alternate
    with_source = stored_names(settings)
    olga = basic("olga", PASSWORD)
    assert client.delete(f"/api/v2/resources/{polygons.id}", headers=olga).status_code == 204
    assert len(with_source - stored_names(settings)) == 1
    assert np.array_equal(get_map(client, record["alternate"], **POLYGON_MAP), source_map)
    assert features(client, record["alternate"]) == source_features
    assert client.get(f"/datasets/{record['alternate']}/dataset_download").status_code == 200


def test_raster_copy_is_an_independent_layer(client, db, settings, copier, raster, tmp_path):
    source_map = get_map(client, raster.alternate, **RASTER_MAP)
    pk = copied_id(copy_via_api(client, raster, copier))
    db.rollback()
    copy, dataset = db.get(Resource, pk), db.get(Dataset, pk)
    assert copy.alternate != raster.alternate and copy.title == "Raster" and copy.subtype == "raster"
    assert dataset.storage == "cog" and dataset.location != db.get(Dataset, raster.id).location
    assert np.array_equal(get_map(client, copy.alternate, **RASTER_MAP), source_map)

    with_source = stored_names(settings)
    assert client.delete(f"/api/v2/resources/{raster.id}", headers=basic("olga", PASSWORD)).status_code == 204
    assert len(with_source - stored_names(settings)) == 1
    assert np.array_equal(get_map(client, copy.alternate, **RASTER_MAP), source_map)
    download = client.get(f"/datasets/{copy.alternate}/dataset_download")
    assert download.status_code == 200 and download.headers["content-type"] == "image/tiff"
    path = tmp_path / "copy.tif"
    path.write_bytes(download.content)
    with rasterio.open(path) as src:
        assert np.array_equal(src.read(), raster_pixels())


@pytest.mark.parametrize("kind", ["vector", "raster"])
def test_a_copy_whose_storage_step_fails_leaves_nothing(client, db, settings, copier, polygons, raster,
                                                        kind):
    source = polygons if kind == "vector" else raster
    drop_data(db, settings, source)  # the store has nothing to copy: its copy step fails
    before = stored_names(settings)
    resources = db.scalar(select(func.count()).select_from(Resource))

    done = copy_via_api(client, source, copier)
    assert done["status"] == "failed", done
    db.rollback()
    assert db.scalar(select(func.count()).select_from(Resource)) == resources
    assert stored_names(settings) == before


def _principal(db, settings, user):
    return principal_for(db, user, InternalGroups(*internal_group_ids(db, settings)), "job")


def test_a_rolled_back_copy_drops_its_data_and_thumbnail(db, settings, owner, polygons):
    before = stored_names(settings)
    thumbnails = set((Path(settings.DATA_DIR) / "thumbnails").iterdir())
    source = db.get(Resource, polygons.id)
    clone = resource_lifecycle.copy_resource(db, _principal(db, settings, owner), settings, source, {},
                                             kinds=KINDS)
    assert len(stored_names(settings) - before) == 1
    assert clone.thumbnail_url and set((Path(settings.DATA_DIR) / "thumbnails").iterdir()) != thumbnails
    db.rollback()
    assert stored_names(settings) == before
    assert set((Path(settings.DATA_DIR) / "thumbnails").iterdir()) == thumbnails


def test_a_retried_copy_replaces_what_a_killed_attempt_stored(db, settings, owner, polygons):
    """The same execution id gives the same names; a killed attempt's data is removed first."""
    key = "0123456789abcdef0123456789abcdef"
    source = db.get(Resource, polygons.id)
    original = db.get(Dataset, polygons.id)
    store_name = f"{original.name}_{key[:12]}"
    dataset_copies.copy_data(settings, stored_of(original), store_name)  # the killed attempt's copy
    before = stored_names(settings)
    if original.storage == "geopackage":  # and the hidden file of a write it had begun
        (Path(settings.DATA_DIR) / "vector" / f".{store_name}.0badc0de.tmp.gpkg").write_bytes(b"half")
    clone = resource_lifecycle.copy_resource(db, _principal(db, settings, owner), settings, source, {},
                                             kinds=KINDS, key=key)
    db.commit()
    assert stored_names(settings) == before  # the leftover was replaced, not kept beside the copy
    copied = db.get(Dataset, clone.id)
    assert copied.name == dataset_copies.copy_name(original.name, key)
    assert copied.layer == store_name
    store = vector_store(settings, copied.storage)
    assert store.count(stored_of(copied).layer, FeatureQuery()) == len(POLYGONS)
    ingest.discard(settings, stored_of(copied))


def test_copy_name_follows_geonode():
    assert dataset_copies.copy_name("roads", "exec") == "roads_" + hashlib.md5(b"roads_exec").hexdigest()
    # too long for a PostgreSQL identifier: 50 characters of the name, 12 of the digest
    digest = hashlib.md5(("x" * 60 + "_exec").encode()).hexdigest()
    assert dataset_copies.copy_name("x" * 60, "exec") == "x" * 50 + digest[:12]
