"""Export writers: each format is read back (GDAL through pyogrio, or openpyxl) and compared with
the features that went in. No database: batches are built here, as a store would return them."""

from __future__ import annotations

import datetime as dt
import io
import json
import zipfile

import numpy as np
import pytest
import rasterio
import shapely
from openpyxl import load_workbook

import cartotheca  # noqa: F401  (PROJ_DATA before rasterio)
from cartotheca.geodata import export
from cartotheca.geodata.storage import FeatureBatch, FieldInfo
from tests.geodata.fixtures import raster_pixels, write_raster
from tests.ows.wfs_fixtures import read_features

FIELDS = [FieldInfo("name", "xsd:string"), FieldInfo("count", "xsd:int"),
          FieldInfo("value", "xsd:double"), FieldInfo("day", "xsd:date")]
NAMES = ["Zürich", "São Paulo", "東京", "plain", "with, comma", 'with "quote"', "null value"]


def _feature(i: int) -> tuple[object, dict]:
    geometry = shapely.Polygon([(i, 40), (i + 1, 40), (i + 1, 41), (i, 41)]) if i % 2 else \
        shapely.MultiPolygon([shapely.box(i, 40, i + 0.5, 40.5), shapely.box(i + 0.6, 40, i + 1, 40.5)])
    return geometry, {"name": NAMES[i], "count": None if i == 6 else i * 10,
                      "value": i / 4, "day": dt.date(2024, 2, 1 + i)}


def _batches(batch_size: int = 3) -> list[FeatureBatch]:
    """Seven features in batches of three, like ``iter_batches`` would return them."""
    out = []
    for start in range(0, len(NAMES), batch_size):
        rows = [_feature(i) for i in range(start, min(start + batch_size, len(NAMES)))]
        out.append(FeatureBatch(
            fids=list(range(start + 1, start + 1 + len(rows))),
            geometries=np.array([g for g, _ in rows], dtype=object),
            properties={f.name: [p[f.name] for _, p in rows] for f in FIELDS}))
    return out


def _layer(**extra) -> export.ExportLayer:
    return export.ExportLayer(name="areas", fields=FIELDS, geometry_name="geom",
                              geometry_type="MultiPolygon", batches=_batches(), epsg=4326, **extra)


def _check(read: dict, name_key: str = "name") -> None:
    assert read[name_key] == NAMES
    for i, geometry in enumerate(read["geometries"]):
        expected, _ = _feature(i)
        assert shapely.equals_exact(shapely.normalize(geometry), shapely.normalize(expected), 1e-9) or \
            shapely.equals(geometry, expected), i


def test_geojson_streams_features_then_counts(tmp_path):
    chunks = list(export.geojson([_layer()], number_matched=70, crs_name="urn:ogc:def:crs:EPSG::4326"))
    assert len(chunks) >= 4  # one per batch, plus the opening and the tail
    body = json.loads(b"".join(chunks))
    assert body["numberMatched"] == 70 and body["numberReturned"] == 7 and body["totalFeatures"] == 70
    assert body["features"][0]["id"] == "areas.1"
    assert body["features"][6]["properties"]["count"] is None
    assert body["features"][2]["properties"]["day"] == "2024-02-03"
    path = tmp_path / "areas.geojson"
    path.write_bytes(b"".join(chunks))
    read = read_features(path)
    _check(read)
    assert list(read["count"][:6]) == [0, 10, 20, 30, 40, 50]


def test_csv_has_fid_attributes_and_wkt(tmp_path):
    path = tmp_path / "areas.csv"
    path.write_bytes(b"".join(export.csv_([_layer()])))
    header = path.read_text(encoding="utf-8").splitlines()[0]
    assert header == "FID,name,count,value,day,geom"
    read = read_features(path, GEOM_POSSIBLE_NAMES="geom", KEEP_GEOM_COLUMNS="NO")
    _check(read)
    assert read["FID"] == [f"areas.{i}" for i in range(1, 8)]
    assert read["count"][6] in ("", None)


def test_xlsx_one_row_per_feature():
    data = b"".join(export.xlsx([_layer()]))
    sheet = load_workbook(io.BytesIO(data), read_only=True)["areas"]
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0] == ("FID", "name", "count", "value", "day", "geom")
    assert [r[1] for r in rows[1:]] == NAMES
    assert rows[2][2] == 10 and rows[2][3] == 0.25
    assert shapely.equals(shapely.from_wkt(rows[2][5]), _feature(1)[0])


def test_kml_placemarks(tmp_path):
    path = tmp_path / "areas.kml"
    path.write_bytes(b"".join(export.kml([_layer()])))
    read = read_features(path)
    _check(read, "Name")  # the placemark name is the first text attribute
    assert [int(v) for v in read["count"][:6]] == [0, 10, 20, 30, 40, 50]


def test_shapefile_zip_has_all_parts_and_utf8(tmp_path):
    data = b"".join(export.shapefile_zip([_layer()]))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = sorted(archive.namelist())
        assert names == ["areas.cpg", "areas.dbf", "areas.prj", "areas.shp", "areas.shx"]
        assert archive.read("areas.cpg").decode().strip().upper() in ("UTF-8", "UTF8")
    path = tmp_path / "areas.zip"
    path.write_bytes(data)
    read = read_features(f"/vsizip/{path}")
    _check(read)
    assert read["crs"] == "EPSG:4326"
    assert [str(d)[:10] for d in read["day"]] == [f"2024-02-0{i}" for i in range(1, 8)]


def test_temporary_files_are_removed(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    stream = export.shapefile_zip([_layer()])
    assert len(list(tmp_path.iterdir())) == 1  # written before the first byte is sent
    b"".join(stream)
    assert list(tmp_path.iterdir()) == []
    partial = export.xlsx([_layer()])
    next(partial)
    partial.close()  # a client that goes away mid-download
    assert list(tmp_path.iterdir()) == []


def test_empty_layer_exports(tmp_path):
    empty = export.ExportLayer(name="none", fields=FIELDS, geometry_name="geom", geometry_type="Point",
                               batches=[], epsg=3857)
    assert json.loads(b"".join(export.geojson([empty])))["numberReturned"] == 0
    path = tmp_path / "none.zip"
    path.write_bytes(b"".join(export.shapefile_zip([empty])))
    read = read_features(f"/vsizip/{path}")
    assert read["name"] == [] and read["crs"] == "EPSG:3857"


@pytest.mark.parametrize("bounds", [(4.0, 44.0, 8.0, 48.0), (-10.0, 30.0, 2.0, 42.0)])
def test_geotiff_subset(tmp_path, bounds):
    source = write_raster(tmp_path)  # 64x48 over lon 0..16, lat 40..52: 0.25° pixels
    path = tmp_path / "subset.tif"
    path.write_bytes(b"".join(export.geotiff_subset(str(source), bounds)))
    with rasterio.open(path) as dst:
        left, bottom, right, top = dst.bounds
        assert (left, top) == (max(bounds[0], 0.0), min(bounds[3], 52.0))
        col, row = int(round(left / 0.25)), int(round((52.0 - top) / 0.25))
        expected = raster_pixels()[:, row:row + dst.height, col:col + dst.width]
        assert np.array_equal(dst.read(), expected)
