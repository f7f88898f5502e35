"""The upload endpoint's actions for a published dataset: ``resource_style_upload`` replaces the
style the map server draws, ``resource_metadata_upload`` applies an ISO 19115 file; both checked
before anything starts and applied by an execution (GeoNode's importer actions)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

import cartotheca  # noqa: F401  (PROJ_DATA before mapnik)
from cartotheca.db.models import ExecutionRequest, Style
from tests.catalogue import iso_documents as docs
from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user
from tests.geodata.fixtures import (
    POLYGONS,
    UPLOAD_URL,
    polygons_sld,
    publish_file,
    wait_execution,
    write_polygons,
)
from tests.ows.conftest import make_private, wms
from tests.support.pixels import pixels

GREY = "#808080"


def grey_sld() -> str:
    """Every polygon filled in one colour (no filter), named unlike the original style."""
    return ('<?xml version="1.0" encoding="UTF-8"?>'
            '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld">'
            "<NamedLayer><Name>polygons</Name><UserStyle><Name>grey</Name><FeatureTypeStyle><Rule>"
            f'<PolygonSymbolizer><Fill><CssParameter name="fill">{GREY}</CssParameter></Fill>'
            "</PolygonSymbolizer></Rule></FeatureTypeStyle></UserStyle></NamedLayer>"
            "</StyledLayerDescriptor>")


XXE_SLD = ('<?xml version="1.0"?><!DOCTYPE s [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
           '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld"><NamedLayer>'
           "<Name>&xxe;</Name><UserStyle><FeatureTypeStyle><Rule><PolygonSymbolizer/></Rule>"
           "</FeatureTypeStyle></UserStyle></NamedLayer></StyledLayerDescriptor>")


@pytest.fixture
def owner(db):
    return make_user(db, "owner")


@pytest.fixture
def owner_auth(owner):
    return basic("owner", PASSWORD)


@pytest.fixture
def polygons(db, settings, owner, tmp_path):
    return publish_file(db, settings, owner, write_polygons(tmp_path), title="Polygons", sld=polygons_sld())


def send_file(client, headers, action: str, pk, text: str, field: str = "base_file", name: str = "file.xml"):
    data = {"action": action} if pk is None else {"action": action, "resource_pk": str(pk)}
    return client.post(UPLOAD_URL, headers=headers, data=data,
                       files={field: (name, text.encode("utf-8"), "application/xml")})


def colour_at(client, resource, lon: float, lat: float) -> list[int]:
    """The colour GetMap draws at (lon, lat), from a 1° image centred there."""
    bbox = f"{lon - 0.5},{lat - 0.5},{lon + 0.5},{lat + 0.5}"
    response = wms(client, request="GetMap", version="1.1.1", layers=resource.alternate, styles="",
                   srs="EPSG:4326", bbox=bbox, width=8, height=8, format="image/png")
    assert response.status_code == 200 and response.headers["content-type"] == "image/png", response.text
    return pixels(response.content)[4, 4, :3].tolist()


def rgb(hex_colour: str) -> list[int]:
    return [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]


def test_style_upload_replaces_the_drawn_style(client, db, polygons, owner_auth):
    north_west = next(p for p in POLYGONS if p["name"] == "north-west")
    assert colour_at(client, polygons, 5, 55) == rgb(north_west["color"])
    sld_url = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]["default_style"]["sld_url"]
    response = send_file(client, owner_auth, "resource_style_upload", polygons.id, grey_sld(),
                         name="grey.sld")
    assert response.status_code == 200, response.text
    record = wait_execution(client, owner_auth, response.json()["execution_id"])
    assert record["status"] == "finished", record
    assert record["action"] == "resource_style_upload"
    assert record["output_params"]["resources"][0]["id"] == polygons.id
    # Drawn at once in the new style, and served under the same sld_url.
    assert colour_at(client, polygons, 5, 55) == rgb(GREY)
    assert colour_at(client, polygons, 15, 45) == rgb(GREY)
    record = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    assert record["default_style"]["sld_url"] == sld_url and len(record["styles"]) == 1
    served = client.get(urlsplit(sld_url).path)
    assert served.status_code == 200 and GREY in served.text
    # GeoNode 5 clients send the SLD as both base_file and sld_file; sld_file wins.
    response = client.post(UPLOAD_URL, headers=owner_auth,
                           data={"action": "resource_style_upload", "resource_pk": str(polygons.id)},
                           files={"base_file": ("a.sld", b"<not-sld/>", "application/xml"),
                                  "sld_file": ("a.sld", polygons_sld().encode(), "application/xml")})
    assert response.status_code == 200, response.text
    assert wait_execution(client, owner_auth, response.json()["execution_id"])["status"] == "finished"
    assert colour_at(client, polygons, 5, 55) == rgb(north_west["color"])


def test_refused_style_changes_nothing(client, db, polygons, owner_auth):
    def stored() -> str:
        db.expire_all()
        return db.scalar(select(Style.sld_body).where(Style.dataset_id == polygons.id))

    before = stored()
    executions = db.scalar(select(ExecutionRequest.id).order_by(ExecutionRequest.id.desc()).limit(1))
    cases = {
        "external entity": XXE_SLD,
        "not xml": "fill: grey",
        "not an sld": docs.gmd(polygons.uuid),
        "no rule to draw": grey_sld().split("<PolygonSymbolizer>")[0]
        + grey_sld().split("</PolygonSymbolizer>")[1],
        "empty": "",
    }
    for name, text in cases.items():
        response = send_file(client, owner_auth, "resource_style_upload", polygons.id, text)
        assert response.status_code == 400, (name, response.text)
        assert "root:" not in response.text, name  # nothing of /etc/passwd
    assert stored() == before
    # No execution was started for a refused file.
    assert db.scalar(select(ExecutionRequest.id).order_by(ExecutionRequest.id.desc()).limit(1)) == executions


def test_style_upload_needs_the_style_right_on_a_dataset(client, db, settings, polygons, owner, owner_auth):
    text = grey_sld()
    assert send_file(client, {}, "resource_style_upload", polygons.id, text).status_code == 401
    reader = make_user(db, "reader")
    reader_auth = basic("reader", PASSWORD)
    assert send_file(client, reader_auth, "resource_style_upload", polygons.id, text).status_code == 403
    missing_pk = send_file(client, owner_auth, "resource_style_upload", None, text)
    assert missing_pk.status_code == 400 and "resource_pk" in missing_pk.text
    no_file = client.post(UPLOAD_URL, headers=owner_auth,
                          data={"action": "resource_style_upload", "resource_pk": str(polygons.id)},
                          files={"other_file": ("a.sld", text.encode(), "application/xml")})
    assert no_file.status_code == 400 and "sld_file" in no_file.text
    document = make_resource(db, settings, owner, "Not a dataset", resource_type="document")
    assert send_file(client, owner_auth, "resource_style_upload", document.id, text).status_code == 404
    assert send_file(client, owner_auth, "resource_style_upload", 999999, text).status_code == 404
    # A dataset the requester may not see reads as missing.
    make_private(db, settings, polygons)
    assert send_file(client, reader_auth, "resource_style_upload", polygons.id, text).status_code == 404
    # Given edit rights, the reader may change the style.
    spec = {"users": [{"id": reader.id, "permissions": "edit"}]}
    started = client.patch(f"/api/v2/resources/{polygons.id}/permissions", headers=owner_auth, json=spec)
    assert wait_execution(client, owner_auth, started.json()["execution_id"])["status"] == "finished"
    response = send_file(client, reader_auth, "resource_style_upload", polygons.id, text)
    assert response.status_code == 200, response.text
    assert wait_execution(client, reader_auth, response.json()["execution_id"])["status"] == "finished"
    db.expire_all()
    assert GREY in db.scalar(select(Style.sld_body).where(Style.dataset_id == polygons.id))


def test_metadata_upload_action_applies_iso_metadata(client, db, polygons, owner_auth):
    response = send_file(client, owner_auth, "resource_metadata_upload", polygons.id, docs.gmd(polygons.uuid))
    assert response.status_code == 200, response.text
    record = wait_execution(client, owner_auth, response.json()["execution_id"])
    assert record["status"] == "finished", record
    dataset = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    assert dataset["title"] == "Rivers of the plain" and dataset["purpose"] == "Flood planning"
    # The file may also come as xml_file (the dataset upload's field name).
    text = docs.mdb(polygons.uuid)
    response = send_file(client, owner_auth, "resource_metadata_upload", polygons.id, text, field="xml_file")
    assert wait_execution(client, owner_auth, response.json()["execution_id"])["status"] == "finished"
    assert client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]["title"] == "Forêts du massif"


def test_refused_metadata_file_changes_nothing(client, db, polygons, owner_auth):
    before = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    cases = {"xxe": docs.XXE_DOCUMENT, "billion laughs": docs.BILLION_LAUGHS,
             "late external entity": docs.EXTERNAL_ENTITY_LATE, "not iso": docs.NOT_ISO,
             "other uuid": docs.gmd("11111111-2222-3333-4444-555555555555")}
    for name, text in cases.items():
        response = send_file(client, owner_auth, "resource_metadata_upload", polygons.id, text)
        assert response.status_code == 400, (name, response.text)
        assert "root:" not in response.text, name
    reader = make_user(db, "reader")
    refused = send_file(client, basic(reader.username, PASSWORD), "resource_metadata_upload", polygons.id,
                        docs.gmd(polygons.uuid))
    assert refused.status_code == 403
    after = client.get(f"/api/v2/datasets/{polygons.id}").json()["dataset"]
    assert after == before and after["title"] == "Polygons"
