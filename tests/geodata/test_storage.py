"""The vector stores (GeoPackage on SQLite runs, PostGIS on PostgreSQL runs) and the COG store,
against small real files: what goes in comes back, filtered, sorted, paged and reprojected."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import mapnik
import numpy as np
import pyarrow as pa
import pyogrio.raw
import pytest
import rasterio
import shapely
import sqlalchemy as sa
from affine import Affine
from pyproj import Transformer

import cartotheca  # noqa: F401  (pins PROJ_DATA before rasterio and mapnik)
from cartotheca.errors import Conflict, InvalidInput, NotFound
from cartotheca.geodata.storage import FeatureQuery, SourceLayer, StoredLayer, gpkg_geometry
from cartotheca.geodata.storage._source import wkb_type_codes
from cartotheca.geodata.storage.postgis import _wkb_bounds, hex_ewkb
from tests.geodata.fixtures import (
    POINTS,
    POLYGONS,
    write_lines,
    write_points,
    write_points_csv,
    write_polygons,
)

CSV_OPTIONS = {"X_POSSIBLE_NAMES": "longitude", "Y_POSSIBLE_NAMES": "latitude",
               "KEEP_GEOM_COLUMNS": "NO", "AUTODETECT_TYPE": "YES"}


def point_xy(batch) -> list[tuple[float, float]]:
    return [(round(g.x, 9), round(g.y, 9)) for g in batch.geometries]


def all_ids(store, layer, **query) -> list[int]:
    return store.query(layer, FeatureQuery(**query)).properties["id"]


# -- writing --------------------------------------------------------------------------------


def test_write_points_describes_the_layer(store, write, tmp_path):
    layer = write(SourceLayer(path=str(write_points(tmp_path))), "points")
    assert layer.storage == store.name
    assert layer.feature_count == len(POINTS)
    assert layer.geometry_type == "Point"
    assert layer.srid == 4326 and "WGS 84" in layer.crs_wkt
    assert layer.bounds == pytest.approx((-10.0, 40.0, 8.0, 49.0))
    assert [(f.name, f.type) for f in layer.fields] == [
        ("id", "xsd:int"), ("name", "xsd:string"), ("value", "xsd:double"),
        ("category", "xsd:string"), ("observed", "xsd:date")]
    assert layer.geometry_column == "geom" and layer.fid_column == "fid"
    if store.name == "geopackage":
        assert layer.location == f"{layer.layer}.gpkg"
        assert (store.root / layer.location).is_file()
    else:
        assert layer.location == f"public.{layer.layer}"


def test_points_read_back_as_written(store, write, tmp_path):
    layer = write(SourceLayer(path=str(write_points(tmp_path))), "points")
    batch = store.query(layer, FeatureQuery())
    assert len(batch) == len(POINTS)
    assert point_xy(batch) == [(p["lon"], p["lat"]) for p in POINTS]
    assert batch.properties["name"] == [p["name"] for p in POINTS]
    assert batch.properties["value"] == [p["value"] for p in POINTS]
    assert batch.properties["observed"] == [p["observed"] for p in POINTS]
    assert list(batch.properties) == ["id", "name", "value", "category", "observed"]
    assert sorted(batch.fids) == batch.fids and len(set(batch.fids)) == len(POINTS)


@pytest.mark.parametrize("driver", ["GPKG", "GeoJSON", "ESRI Shapefile", "FlatGeobuf"])
def test_points_from_each_format(store, write, tmp_path, driver):
    layer = write(SourceLayer(path=str(write_points(tmp_path, driver=driver))), "points")
    batch = store.query(layer, FeatureQuery(sort=[("id", True)]))
    assert layer.feature_count == len(POINTS) and layer.srid == 4326
    assert point_xy(batch) == [(p["lon"], p["lat"]) for p in POINTS]
    assert batch.properties["category"] == [p["category"] for p in POINTS]


def test_csv_points_with_open_options(store, write, tmp_path):
    path = write_points_csv(tmp_path)
    layer = write(SourceLayer(path=str(path), open_options=CSV_OPTIONS, crs_wkt="EPSG:4326"), "csv")
    assert layer.feature_count == len(POINTS)
    # KEEP_GEOM_COLUMNS=NO: the coordinate columns became the geometry, not attributes
    assert [f.name for f in layer.fields] == ["id", "name", "value", "category"]
    assert dict((f.name, f.type) for f in layer.fields)["value"] == "xsd:double"
    batch = store.query(layer, FeatureQuery(sort=[("id", True)]))
    assert point_xy(batch) == [(p["lon"], p["lat"]) for p in POINTS]
    assert layer.srid == 4326


def test_lines_and_polygons(store, write, tmp_path):
    lines = write(SourceLayer(path=str(write_lines(tmp_path))), "lines")
    assert lines.geometry_type == "LineString" and lines.feature_count == 3
    got = store.query(lines, FeatureQuery())
    assert shapely.equals(got.geometries[1], shapely.LineString([(10, -10), (10, 10)]))
    assert got.properties["name"] == ["equator", "meridian", "diagonal"]

    polygons = write(SourceLayer(path=str(write_polygons(tmp_path, driver="ESRI Shapefile"))), "polygons")
    assert polygons.geometry_type == "Polygon" and polygons.feature_count == len(POLYGONS)
    assert polygons.bounds == pytest.approx((0.0, 40.0, 20.0, 60.0))
    got = store.query(polygons, FeatureQuery())
    for geometry, expected in zip(got.geometries, POLYGONS, strict=True):
        assert geometry.bounds == pytest.approx(expected["bounds"])


def test_mixed_single_and_multi_parts_are_stored_as_multi(store, write, tmp_path):
    path = tmp_path / "mixed.geojson"
    geometries = np.array([shapely.box(0, 0, 1, 1),
                           shapely.MultiPolygon([shapely.box(2, 2, 3, 3), shapely.box(4, 4, 5, 5)]),
                           shapely.box(6, 6, 7, 7)])
    pyogrio.raw.write(str(path), shapely.to_wkb(geometries), [np.array([1, 2, 3])], ["n"],
                      driver="GeoJSON", crs="EPSG:4326", geometry_type="Unknown")
    layer = write(SourceLayer(path=str(path)), "mixed")
    assert layer.geometry_type == "MultiPolygon"
    got = store.query(layer, FeatureQuery(sort=[("n", True)]))
    assert set(shapely.get_type_id(got.geometries)) == {6}
    assert shapely.equals(got.geometries[0], shapely.box(0, 0, 1, 1))
    assert shapely.area(got.geometries).tolist() == [1.0, 2.0, 1.0]


def test_multi_parts_found_in_a_later_batch(store, write, tmp_path):
    path = tmp_path / "late.geojson"
    multi = shapely.MultiPolygon([shapely.box(10, 10, 11, 11), shapely.box(12, 12, 13, 13)])
    geometries = np.array([shapely.box(i, i, i + 1, i + 1) for i in range(5)] + [multi])
    pyogrio.raw.write(str(path), shapely.to_wkb(geometries), [np.arange(6)], ["n"], driver="GeoJSON",
                      crs="EPSG:4326", geometry_type="Unknown")
    store.batch_size = 2  # the first batches hold single polygons only
    layer = write(SourceLayer(path=str(path)), "late")
    assert layer.geometry_type == "MultiPolygon" and layer.feature_count == 6
    got = store.query(layer, FeatureQuery(sort=[("n", True)]))
    assert set(shapely.get_type_id(got.geometries)) == {6}
    assert shapely.area(got.geometries).tolist() == [1.0] * 5 + [2.0]


def test_other_geometry_kinds_in_a_later_batch(store, write, tmp_path):
    path = tmp_path / "kinds.geojson"
    geometries = np.array([shapely.Point(0, 0), shapely.Point(1, 1), shapely.LineString([(0, 0), (2, 2)])])
    pyogrio.raw.write(str(path), shapely.to_wkb(geometries), [np.arange(3)], ["n"], driver="GeoJSON",
                      crs="EPSG:4326", geometry_type="Unknown")
    store.batch_size = 2
    layer = write(SourceLayer(path=str(path)), "kinds")
    assert layer.geometry_type == "Geometry"
    got = store.query(layer, FeatureQuery(sort=[("n", True)]))
    assert [g.geom_type for g in got.geometries] == ["Point", "Point", "LineString"]


def test_projected_source_keeps_its_crs(store, write, tmp_path):
    layer = write(SourceLayer(path=str(write_polygons(tmp_path, crs="EPSG:3857"))), "merc")
    assert layer.srid == 3857
    to_merc = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    assert layer.bounds == pytest.approx((*to_merc.transform(0.0, 40.0), *to_merc.transform(20.0, 60.0)))


def test_crs_without_an_epsg_code(store, write, tmp_path):
    custom = "+proj=laea +lat_0=45 +lon_0=5 +x_0=0 +y_0=0 +ellps=GRS80 +units=m +no_defs"
    to_custom = Transformer.from_crs("EPSG:4326", custom, always_xy=True)
    xs, ys = to_custom.transform([0.0, 5.0, 10.0], [40.0, 45.0, 50.0])
    path = tmp_path / "custom.gpkg"
    pyogrio.raw.write(str(path), shapely.to_wkb(shapely.points(xs, ys)), [np.array([1, 2, 3])], ["n"],
                      driver="GPKG", crs=custom, geometry_type="Point")
    layer = write(SourceLayer(path=str(path)), "custom")
    assert layer.srid is None and "Lambert" in layer.crs_wkt
    got = store.query(layer, FeatureQuery(bbox=(4.0, 44.0, 11.0, 51.0), bbox_crs="EPSG:4326",
                                          out_crs="EPSG:4326"))
    assert got.properties["n"] == [2, 3]
    assert np.allclose([(g.x, g.y) for g in got.geometries], [(5.0, 45.0), (10.0, 50.0)])


def test_non_utf8_shapefile_with_encoding(store, write, tmp_path):
    path = tmp_path / "latin.shp"
    names = np.array(["Café", "Göttingen", "Ñandú"], dtype=object)
    pyogrio.raw.write(str(path), shapely.to_wkb(shapely.points([0, 1, 2], [0, 1, 2])), [names], ["name"],
                      driver="ESRI Shapefile", encoding="ISO-8859-1", crs="EPSG:4326", geometry_type="Point")
    path.with_suffix(".cpg").unlink()  # nothing in the upload says the DBF is Latin-1
    assert "Café".encode("latin-1") in path.with_suffix(".dbf").read_bytes()
    layer = write(SourceLayer(path=str(path), encoding="ISO-8859-1"), "latin")
    assert store.query(layer, FeatureQuery()).properties["name"] == names.tolist()


def test_non_utf8_csv_with_encoding(store, write, tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("name,longitude,latitude\nCafé,1.5,2.5\nNaïve,3,4\n".encode("cp1252"))
    layer = write(SourceLayer(path=str(path), encoding="cp1252", open_options=CSV_OPTIONS), "latin")
    batch = store.query(layer, FeatureQuery())
    assert batch.properties["name"] == ["Café", "Naïve"]
    assert point_xy(batch) == [(1.5, 2.5), (3.0, 4.0)]
    assert store.distinct(layer, "name") == ["Café", "Naïve"]


def test_awkward_text_round_trips(store, write, tmp_path):
    path = tmp_path / "text.gpkg"
    texts = np.array(["", None, 'say "hi"', "one,two\nthree", "tab\there", "\\N"], dtype=object)
    pyogrio.raw.write(str(path), shapely.to_wkb(shapely.points(np.arange(6), np.arange(6))), [texts],
                      ["label"], driver="GPKG", crs="EPSG:4326", geometry_type="Point")
    layer = write(SourceLayer(path=str(path)), "text")
    assert store.query(layer, FeatureQuery()).properties["label"] == texts.tolist()
    assert store.count(layer, FeatureQuery(where=lambda t: t.c.label.is_(None))) == 1


def test_reserved_column_names_are_renamed(store, write, tmp_path):
    path = tmp_path / "reserved.csv"
    path.write_text("fid,geom,longitude,latitude\nfirst,second,1,2\n")
    layer = write(SourceLayer(path=str(path), open_options=CSV_OPTIONS), "reserved")
    assert [f.name for f in layer.fields] == ["fid_1", "geom_1"]
    batch = store.query(layer, FeatureQuery())
    assert batch.properties == {"fid_1": ["first"], "geom_1": ["second"]}


@pytest.mark.parametrize("name", ["../escape", "Upper", "with-dash", "1digit", "", "x" * 64, "a b"])
def test_names_are_checked(store, tmp_path, name):
    with pytest.raises(InvalidInput):
        store.write(SourceLayer(path=str(write_points(tmp_path))), name)


def test_existing_name_is_a_conflict_and_stays_intact(store, write, tmp_path):
    layer = write(SourceLayer(path=str(write_points(tmp_path))), "points")
    with pytest.raises(Conflict):
        store.write(SourceLayer(path=str(write_lines(tmp_path))), layer.layer)
    assert store.count(layer, FeatureQuery()) == len(POINTS)


def test_failed_write_leaves_nothing(store, store_name, storage_settings, tmp_path):
    path = tmp_path / "broken.gpkg"
    pyogrio.raw.write(str(path), shapely.to_wkb(shapely.points(np.arange(10), np.arange(10))),
                      [np.arange(10)], ["n"], driver="GPKG", crs="EPSG:4326", geometry_type="Point",
                      layer_options={"SPATIAL_INDEX": "NO"})
    # A valid GeoPackage header in front of bytes that are not WKB: GDAL passes them through
    # and the copy fails after the target was created.
    connection = sqlite3.connect(path)
    with connection:
        header = connection.execute("SELECT substr(geom, 1, 8) FROM broken WHERE fid = 5").fetchone()[0]
        connection.execute("UPDATE broken SET geom = ? WHERE fid = 5",
                           (header + b"\x01\x63\x00\x00\x00junk",))
    connection.close()
    name = store_name("broken")
    store.batch_size = 3  # the bad row comes in the second batch, after the target exists
    with pytest.raises(InvalidInput):
        store.write(SourceLayer(path=str(path)), name)
    if store.name == "geopackage":
        assert not store.root.exists() or list(store.root.iterdir()) == []
    else:
        with store.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT to_regclass(:t)"), {"t": f"public.{name}"}).scalar() is None


def test_unreadable_source_is_invalid_input(store, store_name, tmp_path):
    path = tmp_path / "nothing.geojson"
    path.write_text("{not json")
    with pytest.raises(InvalidInput):
        store.write(SourceLayer(path=str(path)), store_name())


def test_drop_is_idempotent(store, store_name, tmp_path):
    layer = store.write(SourceLayer(path=str(write_points(tmp_path))), store_name("points"))
    store.drop(layer)
    store.drop(layer)
    with pytest.raises(NotFound):
        store.query(layer, FeatureQuery())
    if store.name == "geopackage":
        assert not (store.root / layer.location).exists()


def test_drop_of_a_never_written_layer(store):
    location = "missing_layer.gpkg" if store.name == "geopackage" else "public.missing_layer"
    store.drop(StoredLayer(storage=store.name, location=location, layer="missing_layer",
                           geometry_column="geom", fid_column="fid", geometry_type="Point", srid=4326,
                           crs_wkt="", feature_count=0, bounds=None, fields=[]))


def test_location_is_never_a_path_outside_the_store(store):
    location = "../../etc/passwd" if store.name == "geopackage" else 'public."x"; DROP TABLE y'
    with pytest.raises(InvalidInput):
        store.drop(StoredLayer(storage=store.name, location=location, layer="x", geometry_column="geom",
                               fid_column="fid", geometry_type="Point", srid=4326, crs_wkt="",
                               feature_count=0, bounds=None, fields=[]))


# -- reading --------------------------------------------------------------------------------


@pytest.fixture
def points(write, tmp_path) -> StoredLayer:
    return write(SourceLayer(path=str(write_points(tmp_path))), "points")


@pytest.fixture
def polygons(write, tmp_path) -> StoredLayer:
    return write(SourceLayer(path=str(write_polygons(tmp_path))), "polygons")


def test_table_has_typed_columns(store, points):
    table = store.table(points)
    assert [c.name for c in table.columns] == ["fid", "geom", "id", "name", "value", "category", "observed"]
    assert isinstance(table.c.id.type, sa.Integer)
    assert isinstance(table.c.value.type, sa.Float)
    assert table.c.fid.primary_key


def test_bbox_query_uses_the_index_and_is_exact_for_points(store, points):
    got = store.query(points, FeatureQuery(bbox=(-6.5, 41.5, 0.5, 46.0)))
    # point i is at (-10 + 2i, 40 + i): i = 2..5 fall inside
    assert got.properties["id"] == [3, 4, 5, 6]
    assert store.count(points, FeatureQuery(bbox=(-6.5, 41.5, 0.5, 46.0))) == 4
    assert store.query(points, FeatureQuery(bbox=(100, 0, 101, 1))).fids == []


def test_bbox_in_another_crs(store, points):
    to_merc = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    bbox = (*to_merc.transform(-6.5, 41.5), *to_merc.transform(0.5, 46.0))
    assert all_ids(store, points, bbox=bbox, bbox_crs="EPSG:3857") == [3, 4, 5, 6]


def test_polygon_bbox_then_exact_predicate(store, polygons):
    window = shapely.box(4.5, 44.5, 5.0, 45.0)
    by_box = store.query(polygons, FeatureQuery(bbox=window.bounds))
    assert by_box.properties["name"] == ["south-west", "centre"]
    exact = store.query(polygons, FeatureQuery(
        bbox=(9.0, 49.0, 11.0, 51.0),
        geometry_predicate=lambda g: shapely.intersects(g, shapely.Point(9.5, 50.5))))
    assert exact.properties["name"] == ["north-west"]


@pytest.mark.parametrize("predicate, expected", [
    (lambda t: t.c.value > 9, [8, 9, 10]),
    (lambda t: t.c.category == "b", [2, 5, 8]),
    (lambda t: sa.and_(t.c.category.in_(["a", "c"]), t.c.id <= 4), [1, 3, 4]),
    (lambda t: t.c.name.like("point 1%"), [1, 10]),
    (lambda t: t.c.observed >= dt.date(2024, 1, 9), [9, 10]),
    (lambda t: t.c.name == "x' OR '1'='1", []),
])
def test_where_predicates(store, points, predicate, expected):
    assert all_ids(store, points, where=predicate) == expected
    assert store.count(points, FeatureQuery(where=predicate)) == len(expected)


def test_where_is_bound_not_pasted(store, points):
    table = store.table(points)
    sql = str(sa.select(table.c.fid).where(table.c.name == "it's").compile())
    assert "it's" not in sql and ":name_1" in sql


def test_sort_offset_limit(store, points):
    assert all_ids(store, points, sort=[("value", False)], offset=2, limit=3) == [8, 7, 6]
    assert all_ids(store, points, sort=[("category", True), ("id", False)], limit=4) == [10, 7, 4, 1]
    assert all_ids(store, points, offset=8) == [9, 10]
    assert all_ids(store, points, limit=0) == []


def test_paging_applies_after_the_geometry_predicate(store, points):
    east = FeatureQuery(geometry_predicate=lambda g: shapely.get_x(g) >= 0, offset=1, limit=2,
                        sort=[("id", False)])
    # x >= 0 for ids 6..10; descending, skip one, take two
    assert store.query(points, east).properties["id"] == [9, 8]
    assert store.count(points, east) == 5


def test_properties_and_fids(store, points):
    fids = store.query(points, FeatureQuery()).fids
    got = store.query(points, FeatureQuery(fids=[fids[1], fids[3]], properties=["name"]))
    assert got.fids == [fids[1], fids[3]]
    assert got.properties == {"name": ["point 2", "point 4"]}
    with pytest.raises(InvalidInput):
        store.query(points, FeatureQuery(properties=["nope"]))
    with pytest.raises(InvalidInput):
        store.query(points, FeatureQuery(sort=[("nope", True)]))


def test_out_crs_reprojects(store, points):
    got = store.query(points, FeatureQuery(out_crs="EPSG:3857"))
    to_merc = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    expected = [to_merc.transform(p["lon"], p["lat"]) for p in POINTS]
    assert np.allclose([(g.x, g.y) for g in got.geometries], expected)


def test_iter_batches(store, points):
    batches = list(store.iter_batches(points, FeatureQuery(sort=[("id", True)]), batch_size=3))
    assert [len(b) for b in batches] == [3, 3, 3, 1]
    assert [i for b in batches for i in b.properties["id"]] == list(range(1, 11))
    paged = list(store.iter_batches(points, FeatureQuery(offset=2, limit=5, out_crs="EPSG:3857"),
                                    batch_size=2))
    assert [i for b in paged for i in b.properties["id"]] == [3, 4, 5, 6, 7]
    assert shapely.get_x(paged[0].geometries[0]) == pytest.approx(-6.0 * 111319.49079327357)


def test_distinct(store, points):
    assert store.distinct(points, "category") == ["a", "b", "c"]
    assert store.distinct(points, "observed", limit=2) == [dt.date(2024, 1, 1), dt.date(2024, 1, 2)]
    with pytest.raises(InvalidInput):
        store.distinct(points, "geom")


def test_datetime_columns_compare_as_instants(store, write, tmp_path):
    path = tmp_path / "times.gpkg"
    stamps = np.array(["2024-05-01T10:00:00", "2024-05-01T10:00:00.500", "2024-05-02T00:00:00"],
                      dtype="datetime64[ms]")
    pyogrio.raw.write(str(path), shapely.to_wkb(shapely.points([0, 1, 2], [0, 1, 2])),
                      [stamps, np.array([1, 2, 3])], ["at", "n"], driver="GPKG", crs="EPSG:4326",
                      geometry_type="Point")
    layer = write(SourceLayer(path=str(path)), "times")
    assert dict((f.name, f.type) for f in layer.fields)["at"] == "xsd:dateTime"
    utc = dt.UTC
    later = lambda t: t.c.at > dt.datetime(2024, 5, 1, 10, 0, 0, 250000, tzinfo=utc)  # noqa: E731
    assert store.query(layer, FeatureQuery(where=later)).properties["n"] == [2, 3]
    exactly = lambda t: t.c.at == dt.datetime(2024, 5, 1, 10, 0, tzinfo=utc)  # noqa: E731
    assert store.query(layer, FeatureQuery(where=exactly)).properties["n"] == [1]
    values = store.distinct(layer, "at")
    assert [v.astimezone(utc).replace(tzinfo=None) if v.tzinfo else v for v in values] == [
        dt.datetime(2024, 5, 1, 10), dt.datetime(2024, 5, 1, 10, 0, 0, 500000), dt.datetime(2024, 5, 2)]


def test_mapnik_datasource_renders(store, polygons):
    params = store.mapnik_datasource(polygons)
    assert params["type"] == ("ogr" if store.name == "geopackage" else "postgis")
    m = mapnik.Map(100, 100, "epsg:4326")
    style = mapnik.Style()
    rule = mapnik.Rule()
    symbolizer = mapnik.PolygonSymbolizer()
    symbolizer.fill = mapnik.Color("#ff0000")
    rule.symbolizers.append(symbolizer)
    style.rules.append(rule)
    m.append_style("fill", style)
    layer = mapnik.Layer("polygons", "epsg:4326")
    layer.datasource = mapnik.Datasource(**params)
    layer.styles.append("fill")
    m.layers.append(layer)
    m.zoom_to_box(mapnik.Box2d(-5, 35, 25, 65))
    image = mapnik.Image(100, 100)
    mapnik.render(m, image)
    pixels = np.frombuffer(image.tobytes() if hasattr(image, "tobytes") else image.to_string(),
                           dtype=np.uint8).reshape(100, 100, 4)
    red = (pixels[..., 0] > 200) & (pixels[..., 1] < 50) & (pixels[..., 3] > 200)
    # the polygons cover lon 0..20, lat 40..60: two thirds of the map each way
    assert 0.35 < red.mean() < 0.55
    assert red[50, 50] and not red[5, 5]


# -- GeoPackage blobs -----------------------------------------------------------------------


def test_gpkg_blobs_decode_with_any_envelope():
    geometries = np.array([shapely.Point(1, 2), None, shapely.box(0, 0, 2, 3), shapely.Polygon(),
                           shapely.LineString([(0, 0, 1), (1, 1, 2)])], dtype=object)
    blobs = gpkg_geometry.encode(geometries, 4326)
    # The third blob without an envelope (flags: envelope indicator 0)
    bare = bytearray(blobs[2][:8])
    bare[3] = bare[3] & ~0b1110
    blobs[2] = bytes(bare) + blobs[2][8 + 32:]
    decoded = gpkg_geometry.decode(blobs)
    assert decoded[1] is None
    for got, expected in zip(decoded[[0, 2, 4]], geometries[[0, 2, 4]], strict=True):
        assert shapely.equals_exact(got, expected)
    assert decoded[3].is_empty


# -- rasters --------------------------------------------------------------------------------


def _write_raster(path: Path, data: np.ndarray, nodata=None) -> Path:
    bands, height, width = data.shape
    with rasterio.open(path, "w", driver="GTiff", width=width, height=height, count=bands,
                       dtype=data.dtype.name, crs="EPSG:3857", transform=Affine(10, 0, 1000, 0, -10, 2000),
                       nodata=nodata) as dst:
        dst.write(data)
    return path


@pytest.mark.parametrize("dtype, bands, nodata", [("uint8", 3, None), ("float32", 1, -9999.0),
                                                  ("int16", 1, None)])
def test_cog_is_lossless_tiled_with_overviews(cog_store, storage_settings, tmp_path, dtype, bands, nodata):
    rng = np.random.default_rng(7)
    data = (rng.random((bands, 1100, 1300)) * 200 - (50 if dtype != "uint8" else 0)).astype(dtype)
    if nodata is not None:
        data[0, :10, :10] = nodata
    source = _write_raster(tmp_path / "source.tif", data, nodata)
    location = cog_store.write_cog(str(source), "landcover")
    assert location == "landcover.tif"
    path = Path(cog_store.path(location))
    assert path == Path(storage_settings.raster_dir) / "cog" / "landcover.tif" and path.is_file()
    with rasterio.open(path) as cog:
        assert np.array_equal(cog.read(), data)
        assert cog.nodata == nodata
        assert cog.crs.to_epsg() == 3857
        assert cog.overviews(1) == [2, 4]
        assert cog.block_shapes == [(512, 512)] * bands
        assert cog.profile["tiled"] is True
        assert cog.tags(ns="IMAGE_STRUCTURE")["LAYOUT"] == "COG"
        assert cog.compression.name == "deflate"
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]
    with pytest.raises(Conflict):
        cog_store.write_cog(str(source), "landcover")
    cog_store.drop(location)
    cog_store.drop(location)
    assert not path.exists()


def test_cog_refuses_bad_names_and_unreadable_sources(cog_store, tmp_path):
    source = _write_raster(tmp_path / "s.tif", np.zeros((1, 8, 8), dtype="uint8"))
    with pytest.raises(InvalidInput):
        cog_store.write_cog(str(source), "../up")
    with pytest.raises(InvalidInput):
        cog_store.path("../../x.tif")
    broken = tmp_path / "broken.tif"
    broken.write_bytes(b"II*\x00not a tiff")
    with pytest.raises(InvalidInput):
        cog_store.write_cog(str(broken), "broken")
    assert not cog_store.root.exists() or list(cog_store.root.iterdir()) == []


def test_hex_ewkb_matches_shapely_for_every_kind_of_wkb():
    geometries = np.array([shapely.Point(1.5, -2), None, shapely.from_wkt("POINT EMPTY"),
                           shapely.box(0, 0, 2, 3), shapely.from_wkt("LINESTRING Z (0 0 1, 1 1 2)")],
                          dtype=object)
    expected = [None if g is None else shapely.to_wkb(shapely.set_srid(g, 3857), hex=True, include_srid=True)
                for g in geometries]
    little = pa.array([None if g is None else shapely.to_wkb(g, flavor="extended") for g in geometries],
                      pa.binary())
    big = pa.array([None if g is None else shapely.to_wkb(g, byte_order=0) for g in geometries], pa.binary())
    for column in (little, big, little.slice(1)):
        got = hex_ewkb(column, 3857).to_pylist()
        reference = expected[len(expected) - len(column):]
        assert [None if v is None else shapely.from_wkb(bytes.fromhex(v)) for v in got] == \
            [None if v is None else shapely.from_wkb(bytes.fromhex(v)) for v in reference]
        assert all(v is None or shapely.get_srid(shapely.from_wkb(bytes.fromhex(v))) == 3857 for v in got)
    points = pa.array([shapely.to_wkb(shapely.Point(x, -x)) for x in (3.0, -1.0, 7.5)], pa.binary())
    assert list(_wkb_bounds(points, wkb_type_codes(points))) == [-1.0, -7.5, 7.5, 1.0]
    assert _wkb_bounds(little, wkb_type_codes(little)) is None  # not only points: PostGIS measures
