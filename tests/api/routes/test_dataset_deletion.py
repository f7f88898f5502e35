"""Deleting a dataset removes what it stored: its GeoPackage file, PostGIS table or COG and its
thumbnail go once the deletion commits, and the map server no longer knows the layer. A
rolled-back deletion keeps everything; a copy's data and its source's are independent.

SQLite runs store vectors as GeoPackage files, PostgreSQL runs as PostGIS tables; rasters are
COG files on both."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

import cartotheca  # noqa: F401  (PROJ_DATA before rasterio and mapnik)
from cartotheca.catalogue import resource_lifecycle
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.dataset_records import stored_of
from cartotheca.catalogue.thumbnails import thumbnail_path
from cartotheca.db.models import Dataset, Resource
from cartotheca.geodata import ingest
from cartotheca.geodata.storage.stores import raster_store, vector_store
from tests.api.routes.test_dataset_copies import (
    KINDS,
    POLYGON_MAP,
    RASTER_MAP,
    _principal,
    copied_id,
    copy_via_api,
    features,
    get_map,
)
from tests.api.routes.test_permissions_and_executions import wait
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import polygons_sld, publish_file, write_points, write_polygons, write_raster
from tests.ows.conftest import exception_code, wms
from tests.ows.wfs_fixtures import ows_exception, wfs


@pytest.fixture
def owner(db):
    return make_user(db, "dora")


@pytest.fixture
def auth(owner):
    return basic("dora", PASSWORD)


@pytest.fixture
def polygons(db, settings, owner, tmp_path):
    return publish_file(db, settings, owner, write_polygons(tmp_path), title="Polygons", sld=polygons_sld())


@pytest.fixture
def raster(db, settings, owner, tmp_path):
    return publish_file(db, settings, owner, write_raster(tmp_path), title="Raster")


class Stored:
    """What a dataset keeps outside the catalogue rows, noted before it is deleted."""

    def __init__(self, db, settings, resource: Resource):
        dataset = db.get(Dataset, resource.id)
        self.settings = settings
        self.storage, self.location = dataset.storage, dataset.location
        self.thumbnail = thumbnail_path(settings, resource.uuid)

    def data_exists(self) -> bool:
        if self.storage == "postgis":
            with vector_store(self.settings, "postgis").engine.connect() as conn:
                return conn.scalar(sa.text("SELECT to_regclass(:t)"), {"t": self.location}) is not None
        if self.storage == "cog":
            return Path(raster_store(self.settings).path(self.location)).exists()
        return (Path(self.settings.DATA_DIR) / "vector" / self.location).exists()

    def all_exist(self) -> bool:
        return self.data_exists() and self.thumbnail.is_file()

    def all_gone(self) -> bool:
        return not self.data_exists() and not self.thumbnail.exists()


def gone(db, resource_id: int) -> bool:
    db.rollback()
    return db.scalar(sa.select(sa.func.count()).where(Resource.id == resource_id)) == 0


def assert_layer_unknown(client, alternate: str, *, vector: bool) -> None:
    """WMS answers LayerNotDefined, WFS an unknown feature type, the tile server a 404."""
    assert exception_code(wms(client, request="GetMap", version="1.3.0", layers=alternate,
                              **POLYGON_MAP)) == "LayerNotDefined"
    if vector:
        response = wfs(client, request="GetFeature", version="2.0.0", typenames=alternate)
        assert ows_exception(response) == ("InvalidParameterValue", "typeName")
    assert client.get(f"/tiles/{alternate}/0/0/0.png").status_code == 404


def test_deleting_a_vector_dataset_drops_its_data_and_thumbnail(client, db, settings, auth, polygons):
    stored = Stored(db, settings, polygons)
    assert stored.storage == settings.STORAGE_BACKEND and stored.all_exist()
    alternate = polygons.alternate
    get_map(client, alternate, **POLYGON_MAP)  # the map server has looked the layer up
    assert features(client, alternate)

    # GeoNode's datasets endpoint offers no DELETE: the refusal leaves the data alone
    assert client.delete(f"/api/v2/datasets/{polygons.id}", headers=auth).status_code == 405
    assert stored.all_exist()
    assert client.delete(f"/api/v2/resources/{polygons.id}", headers=auth).status_code == 204
    assert stored.all_gone()
    assert_layer_unknown(client, alternate, vector=True)
    assert client.get(f"/thumbnails/{polygons.uuid}.png").status_code == 404


def test_deleting_a_raster_dataset_drops_its_cog_and_thumbnail(client, db, settings, auth, raster):
    stored = Stored(db, settings, raster)
    assert stored.storage == "cog" and stored.all_exist()
    get_map(client, raster.alternate, **RASTER_MAP)

    assert client.delete(f"/api/v2/resources/{raster.id}", headers=auth).status_code == 204
    assert stored.all_gone()
    cog = Path(raster_store(settings).path(stored.location))
    assert not list(cog.parent.glob(f"{cog.name}*"))  # no sidecar (.aux.xml, .ovr) stays either
    assert_layer_unknown(client, raster.alternate, vector=False)


def test_the_delete_execution_drops_the_data(client, db, settings, auth, polygons):
    stored = Stored(db, settings, polygons)
    done = wait(client, client.delete(f"/api/v2/resources/{polygons.id}/delete", headers=auth), auth)
    assert done["status"] == "finished", done
    assert stored.all_gone()
    assert_layer_unknown(client, polygons.alternate, vector=True)


def test_a_rolled_back_delete_keeps_everything(client, db, settings, owner, polygons, raster):
    kept = [Stored(db, settings, polygons), Stored(db, settings, raster)]
    before = get_map(client, polygons.alternate, **POLYGON_MAP)
    rows = catalogue.load_many(db, [polygons.id, raster.id])

    resource_lifecycle.delete_resources(db, _principal(db, settings, owner), settings, rows, kinds=KINDS)
    assert db.get(Dataset, polygons.id) is None  # deleted inside the transaction ...
    db.rollback()  # ... which does not commit

    assert all(stored.all_exist() for stored in kept)
    assert np.array_equal(get_map(client, polygons.alternate, **POLYGON_MAP), before)
    get_map(client, raster.alternate, **RASTER_MAP)
    # and the discarded post-commit actions do not fire on the session's next commit
    db.commit()
    assert all(stored.all_exist() for stored in kept)


def test_deleting_a_copy_keeps_the_source_and_the_other_way_round(client, db, settings, auth, polygons):
    source_map = get_map(client, polygons.alternate, **POLYGON_MAP)
    first = copied_id(copy_via_api(client, polygons, auth))
    second = copied_id(copy_via_api(client, polygons, auth))
    db.rollback()
    source, copies = Stored(db, settings, polygons), [Stored(db, settings, db.get(Resource, pk))
                                                      for pk in (first, second)]
    assert len({(s.storage, s.location) for s in (source, *copies)}) == 3
    assert all(s.all_exist() for s in (source, *copies))

    assert client.delete(f"/api/v2/resources/{first}", headers=auth).status_code == 204
    assert copies[0].all_gone() and source.all_exist() and copies[1].all_exist()
    assert np.array_equal(get_map(client, polygons.alternate, **POLYGON_MAP), source_map)

    second_alternate = db.get(Resource, second).alternate
    assert client.delete(f"/api/v2/resources/{polygons.id}", headers=auth).status_code == 204
    assert source.all_gone() and copies[1].all_exist()
    assert np.array_equal(get_map(client, second_alternate, **POLYGON_MAP), source_map)


def test_bulk_delete_drops_the_data_of_each(client, db, settings, owner, auth, polygons, raster, tmp_path):
    points = publish_file(db, settings, owner, write_points(tmp_path / "p"), title="Points")
    other = publish_file(db, settings, owner, write_points(tmp_path / "k", "kept"), title="Kept")
    resources = [polygons, raster, points]
    stored = [Stored(db, settings, r) for r in resources]
    kept = Stored(db, settings, other)
    assert all(s.all_exist() for s in (*stored, kept))

    response = client.request("DELETE", "/api/v2/resources", headers=auth,
                              json={"resources": [{"id": r.id} for r in resources]})
    assert response.status_code == 204, response.text
    assert all(s.all_gone() for s in stored)
    for resource in resources:
        assert_layer_unknown(client, resource.alternate, vector=resource is not raster)
    assert kept.all_exist()
    assert features(client, other.alternate)


def test_data_already_gone_is_no_error(client, db, settings, auth, polygons):
    stored = Stored(db, settings, polygons)
    ingest.discard(settings, stored_of(db.get(Dataset, polygons.id)))
    stored.thumbnail.unlink()
    pk = polygons.id
    assert client.delete(f"/api/v2/resources/{pk}", headers=auth).status_code == 204
    assert gone(db, pk)


def test_a_failed_drop_is_logged_and_the_delete_stands(client, db, settings, auth, raster, polygons,
                                                       caplog):
    stored, other = Stored(db, settings, raster), Stored(db, settings, polygons)
    cog = Path(raster_store(settings).path(stored.location))
    pk = raster.id
    body = {"resources": [{"id": raster.id}, {"id": polygons.id}]}
    cog.unlink()
    (cog / "in-the-way").mkdir(parents=True)  # a directory cannot be unlinked as a file
    try:
        with caplog.at_level(logging.ERROR, logger="cartotheca.ingest"):
            response = client.request("DELETE", "/api/v2/resources", headers=auth, json=body)
        assert response.status_code == 204, response.text
        assert "could not be dropped" in caplog.text
        assert gone(db, pk) and not stored.thumbnail.exists()
        assert other.all_gone()  # the failure stopped nothing else
    finally:
        shutil.rmtree(cog, ignore_errors=True)


def test_data_another_dataset_names_is_kept(client, db, settings, owner, auth, polygons):
    """Only hand-written rows can share stored data; the last of them to go drops it."""
    stored = Stored(db, settings, polygons)
    original = db.get(Dataset, polygons.id)
    twin = resource_lifecycle.create_resource(db, _principal(db, settings, owner), settings,
                                              {"title": "Twin"}, resource_type="dataset")
    db.add(Dataset(resource_id=twin.id, workspace=original.workspace, name=f"{original.name}_twin",
                   store=original.store, storage=original.storage, location=original.location,
                   layer=original.layer))
    db.commit()
    twin_id = twin.id

    assert client.delete(f"/api/v2/resources/{polygons.id}", headers=auth).status_code == 204
    assert stored.data_exists() and not stored.thumbnail.exists()
    assert client.delete(f"/api/v2/resources/{twin_id}", headers=auth).status_code == 204
    assert not stored.data_exists()


def _open_files() -> set[str]:
    fds = Path("/proc/self/fd")
    out = set()
    for fd in fds.iterdir():
        try:
            out.add(str(fd.resolve()))
        except OSError:
            continue
    return out


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to list open files")
def test_the_map_server_lets_go_of_deleted_files(client, db, settings, auth, polygons, raster):
    """The map server keeps built maps in a pool, each holding its data files open; deleting a
    dataset closes them, so the disk space comes back at once, not when the pool evicts them."""
    files = []
    for resource, view in ((raster, RASTER_MAP), (polygons, POLYGON_MAP)):
        get_map(client, resource.alternate, **view)
        stored = Stored(db, settings, resource)
        if stored.storage != "postgis":
            path = (raster_store(settings).path(stored.location) if stored.storage == "cog"
                    else Path(settings.DATA_DIR) / "vector" / stored.location)
            files.append(str(Path(path).resolve()))
    assert files and all(f in _open_files() for f in files), "the pooled maps hold the data open"
    for resource in (raster, polygons):
        assert client.delete(f"/api/v2/resources/{resource.id}", headers=auth).status_code == 204
    still_open = {f for f in _open_files() if any(f.startswith(name) for name in files)}
    assert not still_open, still_open
