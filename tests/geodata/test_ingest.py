"""Publishing files through the real ingest: rows, statistics, styles, and the data read back
from the store (GeoPackage on SQLite runs, PostGIS on PostgreSQL runs)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
import rasterio
import shapely
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.orm import selectinload

from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, principal_for
from cartotheca.catalogue.publishing import Journal, publish
from cartotheca.db.models import Dataset, DatasetAttribute, Resource, ResourcePermission, Style
from cartotheca.errors import InvalidInput
from cartotheca.geodata import ingest, sources
from cartotheca.geodata.ingest import IngestOptions
from cartotheca.geodata.storage import FeatureQuery, stored_layer
from cartotheca.geodata.storage.stores import raster_store, vector_store
from cartotheca.ows.thumbnails import MapThumbnails
from tests.factories import make_user
from tests.geodata import fixtures as fx


def dataset_of(db, resource: Resource) -> Dataset:
    db.expire_all()
    return db.scalar(select(Dataset).where(Dataset.resource_id == resource.id)
                     .options(selectinload(Dataset.attributes), selectinload(Dataset.styles)))


def read_back(settings, dataset: Dataset, out_crs: str | None = None):
    store = vector_store(settings, dataset.storage)
    return store.query(stored_layer(dataset), FeatureQuery(out_crs=out_crs))


def rows_by(batch, key: str) -> dict:
    names = list(batch.properties)
    out = {}
    for i in range(len(batch)):
        row = {n: batch.properties[n][i] for n in names}
        out[row[key]] = (row, batch.geometries[i])
    return out


def files_under(path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}


@pytest.fixture
def owner(db):
    return make_user(db, "ana")


@pytest.mark.parametrize("driver", ["GPKG", "ESRI Shapefile", "GeoJSON", "FlatGeobuf"])
def test_points_round_trip(db, settings, owner, tmp_path, driver):
    resource = fx.publish_file(db, settings, owner, fx.write_points(tmp_path, driver=driver))
    dataset = dataset_of(db, resource)
    assert resource.resource_type == "dataset" and resource.subtype == "vector"
    assert resource.title == "points" and resource.alternate == "geonode:points"
    assert resource.srid == "EPSG:4326" and resource.state == "PROCESSED"
    assert (resource.bbox_x0, resource.bbox_y0, resource.bbox_x1, resource.bbox_y1) == \
        pytest.approx((-10.0, 40.0, 8.0, 49.0))
    assert (resource.ll_minx, resource.ll_miny, resource.ll_maxx, resource.ll_maxy) == \
        pytest.approx((-10.0, 40.0, 8.0, 49.0))
    assert dataset.feature_count == fx.POINT_COUNT and dataset.native_srid == 4326
    assert dataset.storage == settings.STORAGE_BACKEND
    assert dataset.geometry_type == "Point"
    batch = read_back(settings, dataset)
    got = rows_by(batch, "name")
    assert len(got) == fx.POINT_COUNT
    for expected in fx.POINTS:
        row, geometry = got[expected["name"]]
        assert row["value"] == pytest.approx(expected["value"])
        assert row["category"] == expected["category"]
        assert int(row["id"]) == expected["id"]
        assert shapely.equals_exact(geometry, shapely.Point(expected["lon"], expected["lat"]), 1e-9)


def test_attributes_and_statistics(db, settings, owner, tmp_path):
    resource = fx.publish_file(db, settings, owner, fx.write_points(tmp_path))
    attributes = {a.attribute: a for a in dataset_of(db, resource).attributes}
    value = attributes["value"]
    values = np.array([r["value"] for r in fx.POINTS])
    assert value.attribute_type == "xsd:double" and value.count == fx.POINT_COUNT
    assert float(value.min) == 0.0 and float(value.max) == pytest.approx(13.5)
    assert float(value.average) == pytest.approx(values.mean())
    assert float(value.median) == pytest.approx(np.median(values))
    assert float(value.stddev) == pytest.approx(values.std(ddof=1))
    assert float(value.sum) == pytest.approx(values.sum())
    # identifiers and text have counts and unique values, no arithmetic
    assert attributes["id"].min == "NA" and attributes["id"].count == fx.POINT_COUNT
    assert attributes["category"].average == "NA"
    assert json.loads(attributes["category"].unique_values) == ["a", "b", "c"]
    geometry = [a for a in attributes.values() if a.attribute_type.startswith("gml:")]
    assert len(geometry) == 1 and geometry[0].display_order == 0
    assert [a.display_order for a in dataset_of(db, resource).attributes] == list(range(len(attributes)))


def test_projected_polygons_keep_native_crs_and_get_lonlat_bounds(db, settings, owner, tmp_path):
    resource = fx.publish_file(db, settings, owner, fx.write_polygons(tmp_path, crs="EPSG:3857"))
    dataset = dataset_of(db, resource)
    assert resource.srid == "EPSG:3857" and dataset.native_srid == 3857
    assert resource.bbox_x1 == pytest.approx(2226389.8158, rel=1e-6)
    assert (resource.ll_minx, resource.ll_miny, resource.ll_maxx, resource.ll_maxy) == \
        pytest.approx(fx.POLYGONS_BOUNDS, abs=1e-6)
    got = rows_by(read_back(settings, dataset, out_crs="EPSG:4326"), "name")
    for poly in fx.POLYGONS:
        row, geometry = got[poly["name"]]
        assert row["color"] == poly["color"]
        assert geometry.bounds == pytest.approx(poly["bounds"], abs=1e-6)


def test_csv_lonlat_points(db, settings, owner, tmp_path):
    resource = fx.publish_file(db, settings, owner, fx.write_points_csv(tmp_path, "stations"))
    dataset = dataset_of(db, resource)
    assert dataset.native_srid == 4326 and dataset.feature_count == fx.POINT_COUNT
    got = rows_by(read_back(settings, dataset), "name")
    assert shapely.equals_exact(got["point 3"][1], shapely.Point(-6, 42), 1e-9)


def test_raster_is_stored_as_a_pixel_identical_cog(db, settings, owner, tmp_path):
    source = fx.write_raster(tmp_path, bands=3, crs="EPSG:3857", bounds=(0, 0, 6400, 4800))
    resource = fx.publish_file(db, settings, owner, source, title="Heights")
    dataset = dataset_of(db, resource)
    assert resource.subtype == "raster" and resource.title == "Heights"
    assert dataset.storage == "cog" and dataset.raster_info["bands"] == 3
    assert resource.srid == "EPSG:3857"
    with rasterio.open(source) as src, rasterio.open(raster_store(settings).path(dataset.location)) as cog:
        assert cog.crs == src.crs and cog.transform.almost_equals(src.transform)
        assert np.array_equal(cog.read(), src.read())
    assert [a.attribute for a in dataset.attributes] == ["band_1", "band_2", "band_3"]


def test_names_are_unique_in_the_workspace(db, settings, owner, tmp_path):
    path = fx.write_points(tmp_path)
    first = fx.publish_file(db, settings, owner, path)
    second = fx.publish_file(db, settings, owner, path)
    third = fx.publish_file(db, settings, owner, path)
    assert [first.name, second.name, third.name] == ["points", "points_1", "points_2"]
    assert dataset_of(db, third).location != dataset_of(db, first).location


def test_skip_existing_layers(db, settings, owner, tmp_path):
    path = fx.write_points(tmp_path)
    fx.publish_file(db, settings, owner, path)
    with pytest.raises(InvalidInput, match="skipped"):
        fx.publish_file(db, settings, owner, path, skip_existing_layers="True")
    db.rollback()
    assert db.scalar(select(func.count()).select_from(Dataset)) == 1


def test_overwrite_replaces_the_data_and_keeps_the_resource(db, settings, owner, tmp_path):
    original = fx.publish_file(db, settings, owner, fx.write_points(tmp_path, count=10))
    old_location = dataset_of(db, original).location
    again = fx.publish_file(db, settings, owner, fx.write_points(tmp_path / "new", count=4),
                            overwrite_existing_layer="true", resource_pk=str(original.id))
    assert again.id == original.id and again.uuid == original.uuid
    dataset = dataset_of(db, again)
    assert dataset.feature_count == 4 and dataset.location != old_location
    assert len(read_back(settings, dataset)) == 4
    counts = {a.attribute: a.count for a in dataset.attributes}
    assert counts["value"] == 4
    assert db.scalar(select(func.count()).select_from(Dataset)) == 1


def test_time_enabled_dataset(db, settings, owner, tmp_path):
    resource = fx.publish_file(db, settings, owner, fx.write_points(tmp_path, driver="ESRI Shapefile"),
                               time="true")
    dataset = dataset_of(db, resource)
    assert resource.subtype == "vector_time" and dataset.has_time
    assert dataset.time_attribute == "observed"
    assert resource.temporal_extent_start.date().isoformat() == "2024-01-01"
    assert resource.temporal_extent_end.date().isoformat() == "2024-01-10"


def test_default_style_and_uploaded_sld(db, settings, owner, tmp_path):
    plain = fx.publish_file(db, settings, owner, fx.write_points(tmp_path))
    [style] = dataset_of(db, plain).styles
    assert style.is_default and style.name == "points" and "StyledLayerDescriptor" in style.sld_body
    styled = fx.publish_file(db, settings, owner, fx.write_polygons(tmp_path), sld=fx.polygons_sld())
    [style] = dataset_of(db, styled).styles
    assert "#ff00ff" in style.sld_body and style.is_default


def test_permissions_option_replaces_the_defaults(db, settings, owner, tmp_path):
    spec = json.dumps({"users": {"AnonymousUser": ["view_resourcebase"]}, "groups": {}})
    resource = fx.publish_file(db, settings, owner, fx.write_points(tmp_path), permissions=spec)
    anonymous_id, _ = internal_group_ids(db, settings)
    granted = set(db.scalars(select(ResourcePermission.codename).where(
        ResourcePermission.resource_id == resource.id, ResourcePermission.group_id == anonymous_id)))
    assert granted == {perms.VIEW}


def test_failed_publication_leaves_nothing(db, settings, owner, tmp_path):
    before = files_under(settings.DATA_DIR)
    bad_sld = "<StyledLayerDescriptor><NamedLayer/></StyledLayerDescriptor>"
    with pytest.raises(InvalidInput):
        fx.publish_file(db, settings, owner, fx.write_points(tmp_path), sld=bad_sld)
    db.rollback()
    assert db.scalar(select(func.count()).select_from(Resource)) == 0
    assert db.scalar(select(func.count()).select_from(Style)) == 0
    assert db.scalar(select(func.count()).select_from(DatasetAttribute)) == 0
    assert files_under(settings.DATA_DIR) == before


def layer_exists(settings, dataset) -> bool:
    """Whether the store still holds the dataset's layer (a file, or a PostGIS table)."""
    if dataset.storage == "postgis":
        engine = create_engine(settings.DATASTORE_URL)
        try:
            with engine.connect() as conn:
                return conn.scalar(text("SELECT to_regclass(:t)"), {"t": dataset.location}) is not None
        finally:
            engine.dispose()
    return any(p.endswith(dataset.location) for p in files_under(settings.DATA_DIR))


def test_rollback_after_publishing_drops_the_stored_data(db, settings, owner, tmp_path):
    before = files_under(settings.DATA_DIR)
    groups = InternalGroups(*internal_group_ids(db, settings))
    resource = publish(db, settings, principal_for(db, owner, groups, "job"),
                       fx.upload_files(fx.write_points(tmp_path)), {}, MapThumbnails())
    stored = db.scalar(select(Dataset).where(Dataset.resource_id == resource.id))
    assert len(read_back(settings, stored)) == fx.POINT_COUNT
    assert layer_exists(settings, stored)
    where = SimpleNamespace(storage=stored.storage, location=stored.location)
    db.rollback()
    assert db.scalar(select(func.count()).select_from(Resource)) == 0
    assert not layer_exists(settings, where)
    assert files_under(settings.DATA_DIR) == before


def test_journal_undo_removes_what_a_killed_attempt_wrote(db, settings, tmp_path):
    """What a retry (or the sweep) does first: everything the journal names is removed, a
    GeoPackage temporary of a write cut short included."""
    before = files_under(settings.DATA_DIR)
    [source] = ingest.validate(ingest.gather(fx.upload_files(fx.write_points(tmp_path)), tmp_path / "w",
                                             settings), IngestOptions())
    journal = Journal(tmp_path / "journal.jsonl")
    journal.note(what="store", kind="vector", name="killed_0123456789ab")
    stored = ingest.store(settings, source, "killed_0123456789ab")
    assert layer_exists(settings, SimpleNamespace(storage=stored.storage, location=stored.layer.location))
    if stored.storage == "geopackage":
        (settings.DATA_DIR / "vector" / ".killed_0123456789ab.0f0f.tmp.gpkg").write_bytes(b"partial")
    thumbnail = settings.DATA_DIR / "thumbnails" / "killed.png"
    thumbnail.parent.mkdir(exist_ok=True)
    thumbnail.write_bytes(b"png")
    journal.note(what="thumbnail", path=str(thumbnail))

    journal.undo(settings)

    assert not layer_exists(settings, SimpleNamespace(storage=stored.storage, location=stored.layer.location))
    assert files_under(settings.DATA_DIR) == before
    assert not (tmp_path / "journal.jsonl").exists()


def test_validation_keeps_layers_for_the_store_within_its_memory_budget(tmp_path):
    path = fx.write_points(tmp_path)
    candidate = sources.Candidate("vector", path, path.stem, "GPKG")
    [kept] = sources.inspect_vector(candidate, charset=None, time=False)
    assert kept.source.preloaded is not None and sum(b.num_rows for b in kept.source.preloaded.batches) \
        == kept.feature_count
    [streamed] = sources.inspect_vector(candidate, charset=None, time=False,
                                        budget=sources.PreloadBudget(10))
    assert streamed.source.preloaded is None  # too large for the budget: the store reads the file
    assert streamed.feature_count == kept.feature_count
