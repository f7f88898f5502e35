"""Text stored with characters XML cannot carry (written straight into the database, as rows
from before such text was refused would be) never makes an OGC document unreadable: every
capabilities document, CSW record, feature collection and export is still a 200 that parses."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
import shapely
from lxml import etree
from sqlalchemy import insert, select, text

from cartotheca.catalogue import reference
from cartotheca.db.models import DatasetAttribute, Resource
from cartotheca.db.models.resources import resource_keywords
from tests.geodata.fixtures import _write, publish_file, write_raster
from tests.ows.wfs_fixtures import alternate

BAD = "\x01"
CSW = "/catalogue/csw"


@pytest.fixture
def stored(db, settings, owner, tmp_path, backend):
    """A vector dataset whose feature values hold a control character, and a raster; then the
    catalogue rows of both are edited with SQL to hold control characters too."""
    path = _write(tmp_path / "notes.gpkg",
                  np.array([shapely.Point(1, 1), shapely.Point(2, 2)]),
                  {"label": np.array([f"first{BAD}note", "second\x1fnote"], dtype=object)},
                  driver="GPKG", crs="EPSG:4326", geometry_type="Point")
    vector = publish_file(db, settings, owner, path, title="Notes")
    raster = publish_file(db, settings, owner, write_raster(tmp_path), title="Raster")
    keyword = reference.keywords_by_name(db, ["clean keyword"])[0]
    # PostgreSQL cannot hold NUL at all; SQLite can, so there it is stored too.
    nul = "\x00" if backend == "sqlite" else ""
    db.execute(insert(resource_keywords).values(resource_id=vector.id, keyword_id=keyword.id))
    db.commit()
    for resource in (vector, raster):
        db.execute(text("UPDATE resources SET title = :title, abstract = :abstract, purpose = :p,"
                        " supplemental_information = :p WHERE id = :id"),
                   {"title": f"{resource.title}{BAD}bad", "abstract": f"abs{nul}{BAD}tract",
                    "p": f"why{BAD}", "id": resource.id})
    db.execute(text("UPDATE keywords SET name = :name WHERE id = :id"),
               {"name": f"key{BAD}word{nul}", "id": keyword.id})
    db.execute(text("UPDATE dataset_attributes SET attribute_label = :label, description = :about"
                    " WHERE dataset_id = :id"), {"label": f"La{BAD}bel", "about": f"A{BAD}", "id": vector.id})
    db.execute(text("UPDATE users SET first_name = :name WHERE id = :id"),
               {"name": f"Ow{BAD}ner", "id": owner.id})
    db.commit()
    db.expire_all()
    assert db.scalar(select(Resource.title).where(Resource.id == vector.id)) == f"Notes{BAD}bad"
    labels = db.scalars(select(DatasetAttribute.attribute_label).where(
        DatasetAttribute.dataset_id == vector.id))
    assert f"La{BAD}bel" in list(labels)
    return vector, raster


def parsed_xml(response) -> etree._Element:
    assert response.status_code == 200, response.text[:500]
    return etree.fromstring(response.content)


CAPABILITIES = [
    {"service": "WMS", "version": "1.1.1"},
    {"service": "WMS", "version": "1.3.0"},
    {"service": "WFS", "version": "1.0.0"},
    {"service": "WFS", "version": "1.1.0"},
    {"service": "WFS", "version": "2.0.0"},
    {"service": "WCS", "version": "2.0.1"},
    {"service": "WMTS", "version": "1.0.0"},
]


def test_capabilities_stay_readable(client, stored):
    vector, raster = stored
    for params in CAPABILITIES:
        root = parsed_xml(client.get("/ows", params={**params, "request": "GetCapabilities"}))
        document = etree.tostring(root, encoding="unicode")
        if params["service"] in ("WMS", "WFS"):
            assert "Notesbad" in document, params  # the title, without its control character
        if params["service"] in ("WCS", "WMTS", "WMS"):
            assert "Rasterbad" in document, params
    for version in ("2.0.2", "3.0.0"):
        parsed_xml(client.get(CSW, params={"service": "CSW", "version": version,
                                           "request": "GetCapabilities"}))


CSW_SCHEMAS = {
    "2.0.2": ("http://www.opengis.net/cat/csw/2.0.2", "http://www.isotc211.org/2005/gmd"),
    "3.0.0": ("http://www.opengis.net/cat/csw/3.0", "http://www.isotc211.org/2005/gmd"),
}


def test_csw_records_stay_readable(client, stored):
    vector, raster = stored
    for version, schemas in CSW_SCHEMAS.items():
        for schema in schemas:
            common = {"service": "CSW", "version": version, "outputschema": schema,
                      "elementsetname": "full"}
            records = parsed_xml(client.get(CSW, params={
                **common, "request": "GetRecords", "typenames": "csw:Record", "resulttype": "results"}))
            found = etree.tostring(records, encoding="unicode")
            assert "Notesbad" in found and "Rasterbad" in found, (version, schema)
            one = parsed_xml(client.get(CSW, params={**common, "request": "GetRecordById",
                                                     "id": vector.uuid}))
            assert "keyword" in etree.tostring(one, encoding="unicode"), (version, schema)
    domain = parsed_xml(client.get(CSW, params={"service": "CSW", "version": "2.0.2",
                                                "request": "GetDomain", "propertyname": "dc:title"}))
    assert "Notesbad" in etree.tostring(domain, encoding="unicode")
    iso = parsed_xml(client.get(f"/showmetadata/xsl/{vector.id}"))
    assert "Notesbad" in etree.tostring(iso, encoding="unicode")


def test_features_and_exports_stay_readable(client, stored, backend):
    vector, _ = stored
    layer = alternate(vector)
    base = {"service": "WFS", "request": "GetFeature"}
    for version, key in (("1.0.0", "typeName"), ("1.1.0", "typeName"), ("2.0.0", "typeNames")):
        root = parsed_xml(client.get("/ows", params={**base, "version": version, key: layer}))
        assert "firstnote" in etree.tostring(root, encoding="unicode"), version
    geojson = client.get("/ows", params={**base, "version": "2.0.0", "typeNames": layer,
                                         "outputFormat": "application/json"})
    assert geojson.status_code == 200, geojson.text[:500]
    labels = sorted(f["properties"]["label"] for f in json.loads(geojson.content)["features"])
    assert labels == [f"first{BAD}note", "second\x1fnote"]  # JSON carries them, escaped
    kml = parsed_xml(client.get("/ows", params={**base, "version": "2.0.0", "typeNames": layer,
                                                "outputFormat": "KML"}))
    assert "firstnote" in etree.tostring(kml, encoding="unicode")
    info = parsed_xml(client.get("/ows", params={
        "service": "WMS", "version": "1.1.1", "request": "GetFeatureInfo", "layers": layer,
        "query_layers": layer, "srs": "EPSG:4326", "bbox": "0,0,4,4", "width": 100, "height": 100,
        "styles": "", "info_format": "application/vnd.ogc.gml", "x": 25, "y": 75, "buffer": 10}))
    assert "firstnote" in etree.tostring(info, encoding="unicode")
    legend = client.get("/ows", params={"service": "WMS", "version": "1.3.0", "format": "image/png",
                                        "request": "GetLegendGraphic", "layer": layer})
    assert legend.status_code == 200 and legend.content[:4] == b"\x89PNG", legend.text[:300]
    answer = client.get("/ows", params={**base, "version": "2.0.0", "typeNames": layer,
                                        "outputFormat": "csv"})
    assert answer.status_code == 200, answer.text[:500]
    rows = list(csv.DictReader(io.StringIO(answer.content.decode("utf-8-sig"))))
    assert len(rows) == 2 and all("note" in row["label"] for row in rows)


def test_exception_reports_repeating_a_control_character_stay_readable(client):
    """Exception reports may name what the client sent; what XML cannot carry is left out."""
    for bad in ("%00", "%01", "%1F"):
        for url, query in (
                ("/ows", f"service=WMS&version=1.3.0&request=GetMap&layers=geonode:a{bad}b&styles="
                         "&crs=EPSG:4326&bbox=0,0,1,1&width=8&height=8&format=image/png"),
                ("/ows", f"service=WFS&version=2.0.0&request=GetFeature&typeNames=geonode:a{bad}b"),
                ("/ows", f"service=WFS&version=1.1.0&request=Get{bad}Feature"),
                (CSW, f"service=CSW&version=2.0.2&request=GetRecordById&id=x&outputschema=a{bad}b"),
                (CSW, f"service=CSW&version=3.0.0&request=Get{bad}Records")):
            answer = client.get(f"{url}?{query}")
            assert answer.status_code in (200, 400, 404, 501), (query, answer.text)
            root = etree.fromstring(answer.content)
            assert "Exception" in etree.QName(root).localname, (query, answer.text)
