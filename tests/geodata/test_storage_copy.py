"""Copying stored data: the vector stores' ``copy`` (GeoPackage on SQLite runs, PostGIS on
PostgreSQL runs) and the COG store's ``copy_cog``. A copy reads back as the source does, has its
own spatial index, outlives its source, and a copy that cannot be made leaves nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pyogrio
import pyogrio.raw
import pytest
import rasterio
import shapely
import sqlalchemy as sa

import cartotheca  # noqa: F401  (pins PROJ_DATA before rasterio)
from cartotheca.errors import Conflict, InvalidInput, NotFound
from cartotheca.geodata.storage import FeatureQuery, SourceLayer, StoredLayer
from cartotheca.geodata.storage.gpkg_copy import renamed_trigger
from tests.geodata.fixtures import POINTS, POLYGONS, raster_pixels, write_points, write_polygons, write_raster


@pytest.fixture
def copy(store, store_name, written):
    """``copy(StoredLayer, prefix)`` → the copy, dropped after the test."""
    def run(layer: StoredLayer, prefix: str = "copy") -> StoredLayer:
        copied = store.copy(layer, store_name(prefix))
        written.append(copied)
        return copied
    return run


def _rows(store, layer: StoredLayer) -> list[tuple]:
    batch = store.query(layer, FeatureQuery(sort=[("fid", True)]))
    return [(fid, shapely.to_wkb(geometry), *values)
            for fid, geometry, *values in zip(batch.fids, batch.geometries, *batch.properties.values(),
                                              strict=True)]


def _tables(store) -> set[str]:
    with store.engine.connect() as conn:
        return set(conn.scalars(sa.text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")))


def test_copy_reads_back_as_the_source(store, write, copy, tmp_path):
    source = write(SourceLayer(path=str(write_points(tmp_path))), "points")
    copied = copy(source)
    assert copied.layer != source.layer and copied.location != source.location
    assert copied.storage == store.name
    assert (copied.feature_count, copied.srid, copied.geometry_type) == (len(POINTS), 4326, "Point")
    assert copied.fields == source.fields
    assert copied.bounds == pytest.approx(source.bounds)
    assert [c.name for c in store.table(copied).columns] == [c.name for c in store.table(source).columns]
    assert _rows(store, copied) == _rows(store, source)


def test_copy_keeps_a_working_spatial_index(store, write, copy, tmp_path):
    source = write(SourceLayer(path=str(write_polygons(tmp_path))), "polygons")
    copied = copy(source)
    # The bbox prefilter goes through the copy's own R-tree / GiST index.
    batch = store.query(copied, FeatureQuery(bbox=(12.0, 52.0, 13.0, 53.0)))
    assert batch.properties["name"] == ["north-east"]
    if store.name == "geopackage":
        connection = sqlite3.connect(store.root / copied.location)
        try:
            names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
            indexed = connection.execute(f'SELECT count(*) FROM "rtree_{copied.layer}_geom"').fetchone()[0]
            registry = connection.execute("SELECT table_name, identifier FROM gpkg_contents").fetchall()
        finally:
            connection.close()
        assert indexed == len(POLYGONS)
        assert registry == [(copied.layer, copied.layer)]
        assert not {n for n in names if source.layer in n}
        assert {f"rtree_{copied.layer}_geom_insert", f"trigger_insert_feature_count_{copied.layer}"} <= names
    else:
        with store.engine.connect() as conn:
            indexes = conn.scalars(sa.text("SELECT indexdef FROM pg_indexes WHERE tablename = :t"),
                                   {"t": copied.layer}).all()
        assert any("USING gist (geom)" in d for d in indexes)
        assert any("(fid)" in d and "UNIQUE" in d for d in indexes)


def test_gdal_reads_and_extends_the_copy(store, write, copy, tmp_path):
    """The copy is a layer GDAL (and so mapnik's OGR plugin, QGIS ...) opens under its new
    name; a feature added to it lands in its spatial index and its own fid sequence."""
    source = write(SourceLayer(path=str(write_polygons(tmp_path))), "polygons")
    copied = copy(source)
    new = shapely.box(30, 30, 31, 31)
    if store.name == "geopackage":
        path = str(store.root / copied.location)
        assert [name for name, _kind in pyogrio.list_layers(path)] == [copied.layer]
        pyogrio.raw.write(path, shapely.to_wkb(np.array([new])), [np.array(["added"], dtype=object)],
                          ["name"], layer=copied.layer, driver="GPKG", append=True, geometry_type="Polygon",
                          crs="EPSG:4326")
    else:
        with store.engine.begin() as conn:
            conn.execute(sa.text(f'INSERT INTO public."{copied.layer}" (geom, name) '
                                 "VALUES (ST_GeomFromText(:g, 4326), 'added')"), {"g": new.wkt})
    found = store.query(copied, FeatureQuery(bbox=(30.2, 30.2, 30.8, 30.8)))
    assert found.properties["name"] == ["added"] and found.fids == [len(POLYGONS) + 1]
    assert store.count(source, FeatureQuery()) == len(POLYGONS)


def test_copy_outlives_its_source(store, write, copy, tmp_path):
    source = write(SourceLayer(path=str(write_points(tmp_path))), "points")
    copied = copy(source)
    expected = _rows(store, copied)
    store.drop(source)
    assert _rows(store, copied) == expected


def test_copy_of_a_projected_layer_keeps_its_crs(store, write, copy, tmp_path):
    source = write(SourceLayer(path=str(write_points(tmp_path, crs="EPSG:3857"))), "mercator")
    copied = copy(source)
    assert copied.srid == 3857 and store.native_crs(copied) == "EPSG:3857"
    batch = store.query(copied, FeatureQuery(out_crs="EPSG:4326", sort=[("id", True)]))
    assert [round(g.x, 6) for g in batch.geometries] == [p["lon"] for p in POINTS]


def test_copy_to_a_taken_name_is_a_conflict(store, write, tmp_path):
    first = write(SourceLayer(path=str(write_points(tmp_path))), "points")
    second = write(SourceLayer(path=str(write_polygons(tmp_path))), "polygons")
    with pytest.raises(Conflict):
        store.copy(first, second.layer)
    assert store.count(second, FeatureQuery()) == len(POLYGONS)


@pytest.mark.parametrize("name", ["../escape", "Upper", "x" * 64])
def test_copy_names_are_checked(store, write, tmp_path, name):
    source = write(SourceLayer(path=str(write_points(tmp_path))), "points")
    with pytest.raises(InvalidInput):
        store.copy(source, name)


def test_copy_of_missing_data_is_not_found_and_leaves_nothing(store, store_name, write, tmp_path):
    source = write(SourceLayer(path=str(write_points(tmp_path))), "points")
    store.drop(source)
    before = _tables(store) if store.name == "postgis" else set(store.root.iterdir())
    name = store_name("copy")
    with pytest.raises(NotFound):
        store.copy(source, name)
    after = _tables(store) if store.name == "postgis" else set(store.root.iterdir())
    assert after == before


def test_renamed_trigger_leaves_a_column_named_like_the_layer_alone():
    sql = ('CREATE TRIGGER "rtree_geom_x_geom_update6" AFTER UPDATE OF "geom" ON "geom_x" '
           'WHEN OLD."geom_x" = 1 BEGIN UPDATE "rtree_geom_x_geom" SET minx = 0; END')
    assert renamed_trigger(sql, "geom_x", "copy", "geom") == (
        'CREATE TRIGGER "rtree_copy_geom_update6" AFTER UPDATE OF "geom" ON "copy" '
        'WHEN OLD."geom_x" = 1 BEGIN UPDATE "rtree_copy_geom" SET minx = 0; END')


# -- rasters --------------------------------------------------------------------------------


def test_cog_copy_has_the_same_pixels_and_outlives_its_source(cog_store, tmp_path):
    location = cog_store.write_cog(str(write_raster(tmp_path)), "elevation")
    copied = cog_store.copy_cog(location, "elevation_copy")
    assert copied == "elevation_copy.tif"
    cog_store.drop(location)
    with rasterio.open(cog_store.path(copied)) as cog:
        assert np.array_equal(cog.read(1), raster_pixels()[0])
        assert cog.tags(ns="IMAGE_STRUCTURE")["LAYOUT"] == "COG"
    assert not [p for p in Path(cog_store.root).iterdir() if p.name.startswith(".")]
    cog_store.drop(copied)


def test_cog_copy_refuses_taken_names_bad_names_and_missing_sources(cog_store, tmp_path):
    location = cog_store.write_cog(str(write_raster(tmp_path)), "elevation")
    with pytest.raises(Conflict):
        cog_store.copy_cog(location, "elevation")
    with pytest.raises(InvalidInput):
        cog_store.copy_cog(location, "../up")
    with pytest.raises(NotFound):
        cog_store.copy_cog("missing.tif", "copy_of_missing")
    assert sorted(p.name for p in Path(cog_store.root).iterdir()) == ["elevation.tif"]
    cog_store.drop(location)
