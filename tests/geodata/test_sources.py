"""Recognising and validating uploaded files, and unpacking archives safely (no database needed)."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

import numpy as np
import pyogrio.raw
import pytest
import shapely

from cartotheca.errors import InvalidInput
from cartotheca.geodata import archives, ingest, sources
from cartotheca.geodata.archives import ArchiveLimits, ArchiveRejected
from cartotheca.settings import Settings
from tests.geodata import fixtures as fx

LIMITS = ArchiveLimits(max_members=50, max_total=20 * 1024 * 1024, max_ratio=200)


def validate(tmp_path: Path, path: Path, **options) -> list:
    files = fx.upload_files(path)
    files.update(options.pop("files", {}))
    settings = Settings(DATA_DIR=tmp_path / "data")
    candidates = ingest.gather(files, tmp_path / "work", settings)
    return ingest.validate(candidates, ingest.IngestOptions.from_mapping(options))


def column(source, name: str) -> list:
    return source.values[name].to_pylist()


# -- names and kinds ------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "name"), [
    ("Roads 2024", "roads_2024"), ("Zürich-Straßen", "zurich_straen"), ("2024 roads", "layer_2024_roads"),
    ("__x__", "x"), ("", "layer"), ("a" * 80, "a" * 58),
])
def test_layer_names_are_sanitised(raw, name):
    assert sources.sanitize_name(raw) == name


def test_kinds_by_file_name():
    assert sources.kind_of("a.SHP") == "vector"
    assert sources.kind_of("a.tiff") == "raster"
    assert sources.kind_of("a.zip") == "archive"
    assert sources.kind_of("a.png") is None
    with pytest.raises(InvalidInput) as err:
        ingest.check_form({"base_file": "photo.png"})
    assert err.value.code == "importer_exception"


def test_form_needs_base_file_and_shapefile_parts():
    with pytest.raises(InvalidInput, match="base_file"):
        ingest.check_form({"dbf_file": "a.dbf"})
    with pytest.raises(InvalidInput, match="shx_file"):
        ingest.check_form({"base_file": "a.shp", "dbf_file": "a.dbf", "prj_file": "a.prj"})


# -- vector formats -------------------------------------------------------------------------


@pytest.mark.parametrize("driver", ["GPKG", "ESRI Shapefile", "GeoJSON", "FlatGeobuf"])
def test_points_validate_with_fields_bounds_and_crs(tmp_path, driver):
    [source] = validate(tmp_path, fx.write_points(tmp_path, driver=driver))
    assert source.kind == "vector"
    assert source.name == "points"
    assert source.geometry_type == "Point"
    assert source.feature_count == fx.POINT_COUNT
    assert source.srid == 4326
    assert source.bounds == pytest.approx((-10.0, 40.0, 8.0, 49.0))
    types = {f.name: f.type for f in source.fields}
    assert types["id"] in ("xsd:int", "xsd:long") and types["value"] == "xsd:double"
    assert types["name"] == "xsd:string" and types["observed"] in ("xsd:date", "xsd:dateTime")
    # FlatGeobuf's spatial index reorders features: compare as sets of pairs
    assert sorted(zip(column(source, "name"), column(source, "value"), strict=True)) == \
        sorted((r["name"], r["value"]) for r in fx.POINTS)


def test_projected_polygons_keep_their_crs(tmp_path):
    [source] = validate(tmp_path, fx.write_polygons(tmp_path, crs="EPSG:3857"))
    assert source.srid == 3857 and source.geometry_type == "Polygon"
    assert source.bounds[0] == pytest.approx(0.0, abs=1e-6)
    assert source.bounds[3] == pytest.approx(8399737.89, rel=1e-6)


def test_csv_with_lon_lat_columns_is_lonlat_points(tmp_path):
    [source] = validate(tmp_path, fx.write_points_csv(tmp_path, lon="Lon", lat="LAT"))
    assert source.srid == 4326 and source.geometry_type == "Point"
    assert [f.name for f in source.fields] == ["id", "name", "value", "category"]
    assert source.bounds == pytest.approx((-10.0, 40.0, 8.0, 49.0))


def test_csv_with_wkt_column(tmp_path):
    path = tmp_path / "shapes.csv"
    path.write_text('id,wkt,label\n1,"POLYGON ((0 0,1 0,1 1,0 0))",a\n'
                    '2,"MULTIPOLYGON (((2 2,3 2,3 3,2 2)))",b\n')
    [source] = validate(tmp_path, path)
    assert source.geometry_type == "MultiPolygon"  # single and multi parts of one kind
    assert [f.name for f in source.fields] == ["id", "label"]


def test_csv_without_coordinates_is_refused(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("id,name\n1,a\n")
    with pytest.raises(InvalidInput, match="no geometries|no usable extent"):
        validate(tmp_path, path)


def test_kml_is_lonlat(tmp_path):
    [source] = validate(tmp_path, fx.write_points(tmp_path, driver="KML"))
    assert source.srid == 4326 and source.feature_count == fx.POINT_COUNT


def test_geopackage_with_two_layers_gives_two_sources(tmp_path):
    path = fx.write_points(tmp_path, "both")
    lines = fx.write_lines(tmp_path)
    table = pyogrio.raw.read(str(lines))
    pyogrio.raw.write(str(path), table[2], table[3], list(table[0]["fields"]), layer="roads",
                      driver="GPKG", crs="EPSG:4326", geometry_type="LineString", append=False)
    found = validate(tmp_path, path)
    assert sorted(s.name for s in found) == ["both", "roads"]


def test_mixed_geometry_types_are_refused(tmp_path):
    path = tmp_path / "mixed.geojson"
    path.write_text('{"type":"FeatureCollection","features":['
                    '{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[1,2]}},'
                    '{"type":"Feature","properties":{},"geometry":{"type":"LineString",'
                    '"coordinates":[[1,2],[3,4]]}}]}')
    with pytest.raises(InvalidInput, match="mixes geometry types"):
        validate(tmp_path, path)


def test_empty_layer_is_refused(tmp_path):
    path = tmp_path / "empty.geojson"
    path.write_text('{"type":"FeatureCollection","features":[]}')
    with pytest.raises(InvalidInput, match="no features"):
        validate(tmp_path, path)


@pytest.mark.filterwarnings("ignore:'crs' was not provided")
def test_geopackage_without_crs_is_refused(tmp_path):
    path = tmp_path / "nocrs.gpkg"
    pyogrio.raw.write(str(path), shapely.to_wkb(np.array([shapely.Point(1, 2)])),
                      [np.array([1])], ["id"], driver="GPKG", geometry_type="Point")
    with pytest.raises(InvalidInput, match="no coordinate reference system"):
        validate(tmp_path, path)


def test_wrong_extension_is_named(tmp_path):
    path = tmp_path / "points.shp"
    fx.write_points(tmp_path, "real", driver="GeoJSON").rename(path)
    (tmp_path / "points.dbf").write_bytes(b"")
    (tmp_path / "points.shx").write_bytes(b"")
    (tmp_path / "points.prj").write_text("GEOGCS[]")
    with pytest.raises(InvalidInput, match="not a valid ESRI Shapefile|could not be read"):
        validate(tmp_path, path)


# -- shapefile parts ------------------------------------------------------------------------


def test_shapefile_without_prj_is_refused(tmp_path):
    path = fx.write_points(tmp_path, driver="ESRI Shapefile")
    path.with_suffix(".prj").unlink()
    with pytest.raises(InvalidInput, match=r"\.prj part"):
        validate(tmp_path, path)


def test_shapefile_parts_of_another_file_are_refused(tmp_path):
    path = fx.write_points(tmp_path, driver="ESRI Shapefile", count=10)
    other = fx.write_points(tmp_path / "other", driver="ESRI Shapefile", count=4)
    with pytest.raises(InvalidInput, match="do not belong together"):
        validate(tmp_path, path, files={"dbf_file": other.with_suffix(".dbf")})


def test_shapefile_parts_are_paired_whatever_their_names(tmp_path):
    path = fx.write_points(tmp_path, driver="ESRI Shapefile")
    renamed = {}
    for suffix, field in (("dbf", "dbf_file"), ("shx", "shx_file"), ("prj", "prj_file")):
        target = tmp_path / f"upload-part-{suffix}.{suffix}"
        os.replace(path.with_suffix(f".{suffix}"), target)
        renamed[field] = target
    [source] = validate(tmp_path, path, files=renamed)
    assert source.feature_count == fx.POINT_COUNT


# -- character sets -------------------------------------------------------------------------


def latin1_shapefile(tmp_path: Path, cpg: str | None = None) -> Path:
    path = tmp_path / "places.shp"
    pyogrio.raw.write(str(path), shapely.to_wkb(np.array([shapely.Point(1, 2), shapely.Point(3, 4)])),
                      [np.array(["Caf?", "Z?rich"], dtype=object)], ["name"],
                      driver="ESRI Shapefile", crs="EPSG:4326", geometry_type="Point")
    dbf = path.with_suffix(".dbf")
    dbf.write_bytes(dbf.read_bytes().replace(b"Caf?", b"Caf\xe9").replace(b"Z?rich", b"Z\xfcrich"))
    path.with_suffix(".cpg").unlink(missing_ok=True)
    if cpg is not None:
        path.with_suffix(".cpg").write_text(cpg)
    return path


def test_undecodable_text_without_charset_is_refused_naming_the_encoding(tmp_path):
    with pytest.raises(InvalidInput, match="not valid utf-8") as err:
        validate(tmp_path, latin1_shapefile(tmp_path))
    assert err.value.code == "invalid_encoding" and "charset" in err.value.message


def test_charset_decodes_the_attributes(tmp_path):
    [source] = validate(tmp_path, latin1_shapefile(tmp_path), charset="ISO-8859-1")
    assert column(source, "name") == ["Café", "Zürich"]
    assert source.source.encoding == "iso8859-1"


def test_cpg_file_wins_over_charset(tmp_path):
    [source] = validate(tmp_path, latin1_shapefile(tmp_path, cpg="1252"), charset="UTF-8")
    assert column(source, "name") == ["Café", "Zürich"]


def test_latin1_geojson_with_charset_is_transcoded(tmp_path):
    path = tmp_path / "cafe.geojson"
    path.write_bytes('{"type":"FeatureCollection","features":[{"type":"Feature","properties":'
                     '{"name":"Café"},"geometry":{"type":"Point","coordinates":[1,2]}}]}'.encode("latin-1"))
    with pytest.raises(InvalidInput, match="not valid utf-8"):
        validate(tmp_path, path)
    [source] = validate(tmp_path, path, charset="latin1")
    assert column(source, "name") == ["Café"]


def test_unknown_charset_is_refused():
    with pytest.raises(InvalidInput, match="unknown character set"):
        ingest.IngestOptions.from_mapping({"charset": "klingon-8"})


# -- time -----------------------------------------------------------------------------------


def test_time_picks_the_first_date_attribute(tmp_path):
    [source] = validate(tmp_path, fx.write_points(tmp_path, driver="ESRI Shapefile"), time="True")
    assert source.time_attribute == "observed"
    assert [str(v)[:10] for v in source.time_extent] == ["2024-01-01", "2024-01-10"]


def test_time_without_dates_is_refused(tmp_path):
    with pytest.raises(InvalidInput, match="no attribute holds dates"):
        validate(tmp_path, fx.write_lines(tmp_path), time="true")


# -- rasters --------------------------------------------------------------------------------


def test_geotiff_validates_with_its_facts(tmp_path):
    [source] = validate(tmp_path, fx.write_raster(tmp_path, bands=3, crs="EPSG:3857",
                                                  bounds=(0, 0, 6400, 4800)))
    assert source.kind == "raster" and source.srid == 3857
    assert source.info["bands"] == 3 and source.info["width"] == 64 and source.info["height"] == 48
    assert source.bounds == pytest.approx((0, 0, 6400, 4800))


def test_text_named_tif_is_refused(tmp_path):
    path = tmp_path / "fake.tif"
    path.write_text("this is not an image\n" * 10)
    with pytest.raises(InvalidInput, match="fake.tif"):
        validate(tmp_path, path)


# -- archives -------------------------------------------------------------------------------


def make_zip(path: Path, members: dict[str, bytes], *, method=zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_zipped_shapefile_is_found_with_its_parts(tmp_path):
    shp = fx.write_points(tmp_path / "src", "roads", driver="ESRI Shapefile")
    members = {f"data/{p.name}": p.read_bytes() for p in shp.parent.iterdir()}
    path = make_zip(tmp_path / "roads.zip", members)
    [source] = validate(tmp_path, path)
    assert source.name == "roads" and source.feature_count == fx.POINT_COUNT


@pytest.mark.parametrize(("name", "reason"), [
    ("../evil.txt", "outside the archive"), ("a/../../evil.txt", "outside the archive"),
    ("/etc/evil.txt", "absolute path"), ("C:/evil.txt", "absolute path"),
    ("..\\evil.txt", "outside the archive"),
])
def test_unsafe_member_names_are_refused(tmp_path, name, reason):
    path = make_zip(tmp_path / "bad.zip", {"ok.txt": b"x", name: b"evil"})
    with pytest.raises(ArchiveRejected, match=reason):
        archives.extract(path, tmp_path / "out", LIMITS)
    assert not (tmp_path / "out").exists() and not (tmp_path / "evil.txt").exists()


def test_symlink_member_is_refused(tmp_path):
    path = tmp_path / "link.zip"
    with zipfile.ZipFile(path, "w") as archive:
        info = zipfile.ZipInfo("passwd.shp")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/etc/passwd")
    with pytest.raises(ArchiveRejected, match="symbolic link"):
        archives.extract(path, tmp_path / "out", LIMITS)


def test_too_many_members_are_refused(tmp_path):
    path = make_zip(tmp_path / "many.zip", {f"f{i}.txt": b"x" for i in range(LIMITS.max_members + 1)})
    with pytest.raises(ArchiveRejected, match="members"):
        archives.check(path, LIMITS)


def test_bomb_by_ratio_is_refused_from_the_directory(tmp_path):
    path = make_zip(tmp_path / "bomb.zip", {"zeros.csv": b"0" * (8 * 1024 * 1024)})
    assert path.stat().st_size < 50_000
    with pytest.raises(ArchiveRejected, match="zip bomb"):
        archives.check(path, LIMITS)


def test_bomb_by_size_is_refused_from_the_directory(tmp_path):
    limits = ArchiveLimits(max_members=50, max_total=1024 * 1024, max_ratio=10_000)
    path = make_zip(tmp_path / "big.zip", {"a.csv": os.urandom(700_000), "b.csv": os.urandom(700_000)},
                    method=zipfile.ZIP_STORED)
    with pytest.raises(ArchiveRejected, match="at most 1048576"):
        archives.check(path, limits)


def test_headers_that_understate_sizes_are_caught_while_extracting(tmp_path):
    """A member whose central-directory size is forged small: the counted bytes stop it."""
    path = make_zip(tmp_path / "liar.zip", {"zeros.csv": b"0" * (4 * 1024 * 1024)})
    data = bytearray(path.read_bytes())
    real = (4 * 1024 * 1024).to_bytes(4, "little")
    fake = (1000).to_bytes(4, "little")
    assert data.count(real) == 2  # local header and central directory
    path.write_bytes(bytes(data).replace(real, fake))
    assert archives.check(path, LIMITS)[0].file_size == 1000  # the directory now looks harmless
    with pytest.raises(ArchiveRejected):
        archives.extract(path, tmp_path / "out", LIMITS)
    assert not (tmp_path / "out").exists()


def test_archive_without_data_files_is_refused(tmp_path):
    path = make_zip(tmp_path / "docs.zip", {"readme.txt": b"hello"})
    with pytest.raises(InvalidInput, match="no file of a supported format"):
        validate(tmp_path, path)


def test_not_a_zip_is_refused(tmp_path):
    path = tmp_path / "fake.zip"
    path.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ArchiveRejected, match="not a readable zip"):
        archives.check(path, LIMITS)
