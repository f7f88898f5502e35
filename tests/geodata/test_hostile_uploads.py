"""Hostile and broken uploads: each ends in a 4xx or an INVALID upload with a reason, and leaves
no resource, no dataset, no WMS layer and no file behind."""

from __future__ import annotations

import os
import re
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyogrio.raw
import pytest
import shapely
from fastapi.testclient import TestClient
from lxml import etree
from sqlalchemy import func, select

from cartotheca.db.models import Dataset, Resource, Upload
from cartotheca.geodata.storage import FeatureQuery, stored_layer
from cartotheca.geodata.storage.stores import vector_store
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata import fixtures as fx

XXE = ('<?xml version="1.0"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
       '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld">&xxe;'
       "</StyledLayerDescriptor>")
LAUGHS = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
          + "".join(f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
                    for i in range(1, 10))
          + ']><MD_Metadata xmlns="http://www.isotc211.org/2005/gmd">&lol9;</MD_Metadata>')


@dataclass
class Case:
    """One hostile upload: the form to send and the words the refusal must contain."""

    build: Callable[[Path], tuple[dict[str, Path], dict[str, str]]]
    reason: str
    settings: dict | None = None


def single(path_builder: Callable[[Path], Path], **fields: str):
    def build(tmp_path: Path):
        return fx.upload_files(path_builder(tmp_path)), fields
    return build


def zipped(members: dict[str, bytes], method=zipfile.ZIP_DEFLATED, symlink: str | None = None):
    def build(tmp_path: Path):
        path = tmp_path / "archive.zip"
        with zipfile.ZipFile(path, "w", compression=method) as archive:
            for name, data in members.items():
                archive.writestr(name, data)
            if symlink:
                info = zipfile.ZipInfo(symlink)
                info.create_system = 3
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                archive.writestr(info, "/etc/passwd")
        return {"base_file": path}, {}
    return build


def shapefile_parts(tmp_path: Path) -> dict[str, bytes]:
    shp = fx.write_points(tmp_path / "parts", "roads", driver="ESRI Shapefile")
    return {p.name: p.read_bytes() for p in shp.parent.iterdir()}


def zip_with_points(extra: dict[str, bytes], symlink: str | None = None):
    def build(tmp_path: Path):
        members = {f"roads/{k}": v for k, v in shapefile_parts(tmp_path).items()}
        members.update(extra)
        return zipped(members, symlink=symlink)(tmp_path)
    return build


def lying_zip(tmp_path: Path):
    """A zip whose headers say its 4 MB member holds 1000 bytes."""
    files, _ = zipped({"roads.csv": b"0" * (4 * 1024 * 1024)})(tmp_path)
    path = files["base_file"]
    data = path.read_bytes().replace((4 * 1024 * 1024).to_bytes(4, "little"), (1000).to_bytes(4, "little"))
    path.write_bytes(data)
    return files, {}


def with_extra(name: str, text: str):
    def build(tmp_path: Path):
        files = fx.upload_files(fx.write_points(tmp_path, driver="GeoJSON"))
        extra = tmp_path / ("meta.xml" if name == "xml_file" else "style.sld")
        extra.write_text(text)
        files[name] = extra
        return files, {}
    return build


def mismatched_parts(tmp_path: Path):
    files = fx.upload_files(fx.write_points(tmp_path, driver="ESRI Shapefile", count=10))
    other = fx.write_points(tmp_path / "other", driver="ESRI Shapefile", count=3)
    files["dbf_file"] = other.with_suffix(".dbf")
    return files, {}


def without(suffix: str):
    def build(tmp_path: Path):
        files = fx.upload_files(fx.write_points(tmp_path, driver="ESRI Shapefile"))
        files.pop({".shx": "shx_file", ".dbf": "dbf_file", ".prj": "prj_file"}[suffix])
        return files, {}
    return build


def corrupt_shp(tmp_path: Path):
    files = fx.upload_files(fx.write_points(tmp_path, driver="ESRI Shapefile"))
    shp = files["base_file"]
    shp.write_bytes(shp.read_bytes()[:100] + os.urandom(200))
    return files, {}


def png_named_shp(tmp_path: Path):
    files = fx.upload_files(fx.write_points(tmp_path, driver="ESRI Shapefile"))
    files["base_file"].write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(300))
    return files, {}


def text_file(name: str, content: bytes):
    def build(tmp_path: Path):
        path = tmp_path / name
        path.write_bytes(content)
        return {"base_file": path}, {}
    return build


def latin1_shapefile(tmp_path: Path) -> Path:
    path = tmp_path / "places.shp"
    pyogrio.raw.write(str(path), shapely.to_wkb(np.array([shapely.Point(1, 2), shapely.Point(3, 4)])),
                      [np.array(["Caf?", "Z?rich"], dtype=object)], ["name"],
                      driver="ESRI Shapefile", crs="EPSG:4326", geometry_type="Point")
    dbf = path.with_suffix(".dbf")
    dbf.write_bytes(dbf.read_bytes().replace(b"Caf?", b"Caf\xe9").replace(b"Z?rich", b"Z\xfcrich"))
    path.with_suffix(".cpg").unlink(missing_ok=True)
    return path


CASES = {
    "zip-slip": Case(zip_with_points({"../../evil.shp": b"x"}), "outside the archive"),
    "zip-absolute-path": Case(zip_with_points({"/tmp/evil.shp": b"x"}), "absolute path"),
    "zip-symlink": Case(zip_with_points({}, symlink="roads/link.dbf"), "symbolic link"),
    "zip-bomb-ratio": Case(zipped({"bomb.csv": b"0" * (16 * 1024 * 1024)}), "zip bomb"),
    "zip-bomb-size": Case(zipped({"a.csv": os.urandom(300_000), "b.csv": os.urandom(300_000)},
                                 method=zipfile.ZIP_STORED), "at most 500000",
                          settings={"MAX_UNZIPPED_SIZE": 500_000}),
    "zip-too-many-members": Case(zipped({f"f{i}.txt": b"x" for i in range(12)}), "members",
                                 settings={"MAX_ARCHIVE_MEMBERS": 10}),
    "zip-lying-sizes": Case(lying_zip, "more data than its header declares|Bad CRC"),
    "zip-nothing-usable": Case(zipped({"readme.txt": b"hello", "inner.zip": b"PK"}),
                               "no file of a supported format"),
    "xxe-in-xml-file": Case(with_extra("xml_file", XXE), "DTD"),
    "billion-laughs-in-xml-file": Case(with_extra("xml_file", LAUGHS), "DTD"),
    "xxe-in-sld-file": Case(with_extra("sld_file", XXE), "DTD"),
    "billion-laughs-in-sld-file": Case(with_extra("sld_file", LAUGHS), "DTD"),
    "sld-not-an-sld": Case(with_extra("sld_file", "<html><body/></html>"), "SLD"),
    "mismatched-shapefile-parts": Case(mismatched_parts, "do not belong together"),
    "missing-shx": Case(without(".shx"), "shx_file"),
    "missing-dbf": Case(without(".dbf"), "dbf_file"),
    "missing-prj": Case(without(".prj"), "prj_file"),
    "corrupt-shp": Case(corrupt_shp, "roads.shp|points.shp"),
    "empty-geojson": Case(text_file("empty.geojson", b""), "empty.geojson"),
    "empty-feature-collection": Case(text_file("none.geojson", b'{"type":"FeatureCollection","features":[]}'),
                                     "no features"),
    "png-named-shp": Case(png_named_shp, "points.shp"),
    "text-named-tif": Case(text_file("elevation.tif", b"not a GeoTIFF at all\n" * 20), "elevation.tif"),
    "geojson-that-is-not-json": Case(text_file("broken.geojson", b'{"type": "FeatureCollection", "feat'),
                                     "broken.geojson"),
    "unsupported-extension": Case(text_file("payload.exe", b"MZ\x90\x00"), "No handlers found"),
    "over-the-size-limit": Case(single(lambda p: fx.write_points(p, driver="GeoJSON")),
                                "Total upload size", settings={"DEFAULT_MAX_UPLOAD_SIZE": 1000}),
    "non-utf8-attributes-without-charset": Case(single(latin1_shapefile), "not valid utf-8"),
}


def files_under(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}


def wms_layers(client: TestClient) -> set[str] | None:
    """Layer names in the WMS capabilities, or None while the map server is not there."""
    response = client.get("/ows?service=WMS&version=1.3.0&request=GetCapabilities")
    if response.status_code != 200 or b"Capabilities" not in response.content:
        return None
    root = etree.fromstring(response.content)
    return {el.text for el in root.iter() if etree.QName(el).localname == "Name"
            and etree.QName(el.getparent()).localname == "Layer"}


def counts(db) -> tuple[int, int]:
    db.expire_all()
    return (db.scalar(select(func.count()).select_from(Resource)),
            db.scalar(select(func.count()).select_from(Dataset)))


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_hostile_upload_is_refused_and_leaves_nothing(case, make_app, db, settings, tmp_path):
    make_user(db, "ana")
    auth = basic("ana", PASSWORD)
    app = make_app(**(case.settings or {}))
    files, fields = case.build(tmp_path)
    with TestClient(app) as client:
        before_files = files_under(settings.DATA_DIR)
        before_layers = wms_layers(client)
        before_counts = counts(db)
        parts = [(field, (path.name, path.read_bytes(), "application/octet-stream"))
                 for field, path in files.items()]
        response = client.post(fx.UPLOAD_URL, headers=auth, data=fields, files=parts)
        if response.status_code == 200:
            record = fx.wait_execution(client, auth, response.json()["execution_id"])
            assert record["status"] == "failed", record
            [upload] = client.get("/api/v2/uploads", headers=auth).json()["uploads"]
            assert upload["state"] == "INVALID" and upload["complete"] is False
            reason = upload["error"]
            assert reason == record["log"]
        else:
            assert 400 <= response.status_code < 500, response.text
            reason = " ".join(response.json()["errors"])
            db.expire_all()
            assert db.scalar(select(func.count()).select_from(Upload)) == 0
        assert re.search(case.reason, reason), reason
        assert counts(db) == before_counts
        assert wms_layers(client) == before_layers
        assert files_under(settings.DATA_DIR) == before_files


def test_non_utf8_attributes_with_charset_are_published_correctly(client, db, settings, tmp_path):
    """The control case: the same file with its charset is published, and the checks above
    would have seen it (a new layer in the capabilities, new files)."""
    make_user(db, "ana")
    auth = basic("ana", PASSWORD)
    before_files, before_layers = files_under(settings.DATA_DIR), wms_layers(client)
    record = fx.upload_and_wait(client, auth, latin1_shapefile(tmp_path), charset="ISO-8859-1")
    assert record["status"] == "finished", record
    db.expire_all()
    dataset = db.scalar(select(Dataset))
    batch = vector_store(settings, dataset.storage).query(stored_layer(dataset), FeatureQuery())
    assert sorted(batch.properties["name"]) == ["Café", "Zürich"]
    assert dataset.charset == "iso8859-1"
    if before_layers is not None:
        assert wms_layers(client) - before_layers == {"geonode:places"}
    assert files_under(settings.DATA_DIR) != before_files


def test_malformed_multipart_is_a_400(client, db):
    make_user(db, "ana")
    response = client.post(fx.UPLOAD_URL, headers={**basic("ana", PASSWORD),
                                                   "Content-Type": "multipart/form-data; boundary=xyz"},
                           content=b"--xyz\r\nContent-Disposition: form-data; name=\"base_file\"; "
                                   b"filename=\"a.geojson\"\r\n\r\n{}")
    assert response.status_code == 400
    response = client.post(fx.UPLOAD_URL, headers=basic("ana", PASSWORD), json={"base_file": "x"})
    assert response.status_code == 415
