"""The metadata links of a record: CSW GetRecordById in each format, and ISO with a stylesheet."""

from __future__ import annotations

import pytest
from lxml import etree

import cartotheca  # noqa: F401
from cartotheca.catalogue import iso_metadata
from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user
from tests.geodata.fixtures import publish_file, write_points
from tests.ows.conftest import make_private

ROOTS = {
    "Atom": "{http://www.w3.org/2005/Atom}entry",
    "DIF": "{http://gcmd.gsfc.nasa.gov/Aboutus/xml/dif/}DIF",
    "Dublin Core": "{http://www.opengis.net/cat/csw/2.0.2}Record",
    "ebRIM": "{urn:oasis:names:tc:ebxml-regrep:xsd:rim:3.0}ExtrinsicObject",
    "FGDC": "metadata",
    "ISO": "{http://www.isotc211.org/2005/gmd}MD_Metadata",
}


@pytest.fixture
def owner(db):
    return make_user(db, "owner", email="owner@example.org")


@pytest.fixture
def points(db, settings, owner, tmp_path):
    return publish_file(db, settings, owner, write_points(tmp_path), title="Wells of the valley")


def metadata_links(client, path: str, headers=None) -> dict[str, str]:
    record = next(iter(client.get(path, headers=headers or {}).json().values()))
    return {link["name"]: link["url"] for link in record["links"] if link["link_type"] == "metadata"}


def test_each_format_describes_the_dataset(client, points):
    links = metadata_links(client, f"/api/v2/datasets/{points.id}")
    assert set(links) == set(ROOTS) | {"ISO with XSL"}
    for name, root_tag in ROOTS.items():
        response = client.get(links[name])
        assert response.status_code == 200, (name, response.text)
        assert response.headers["content-type"].startswith(("text/xml", "application/xml"))
        root = etree.fromstring(response.content)
        assert etree.QName(root).localname == "GetRecordByIdResponse"
        assert [child.tag for child in root] == [root_tag], name
        assert b"Wells of the valley" in response.content, name
        assert points.uuid.encode() in response.content, name


def test_iso_record_is_read_back_by_the_import(client, points):
    links = metadata_links(client, f"/api/v2/datasets/{points.id}")
    document = etree.fromstring(client.get(links["ISO"]).content)
    record = iso_metadata.read_iso(document)
    assert record.identifier == points.uuid and record.title == "Wells of the valley"
    box = document.find(".//{http://www.isotc211.org/2005/gmd}EX_GeographicBoundingBox")
    west = box.find("{http://www.isotc211.org/2005/gmd}westBoundLongitude")[0].text
    assert float(west) == pytest.approx(-10.0)
    online = [u.text for u in document.iter("{http://www.isotc211.org/2005/gmd}URL")]
    assert any("service=WMS" in url for url in online)


def test_iso_export_can_be_uploaded_back(client, points):
    owner_auth = basic("owner", PASSWORD)
    iso = metadata_links(client, f"/api/v2/datasets/{points.id}")["ISO"]
    exported = etree.fromstring(client.get(iso).content)[0]
    exported.find(".//{http://www.isotc211.org/2005/gmd}abstract")[0].text = "Edited offline"
    body = etree.tostring(exported, xml_declaration=True, encoding="UTF-8")
    response = client.put(f"/api/v2/datasets/{points.id}/metadata", headers=owner_auth,
                          files={"metadata_file": ("md.xml", body, "text/xml")})
    assert response.status_code == 200, response.text
    record = client.get(f"/api/v2/datasets/{points.id}").json()["dataset"]
    assert record["abstract"] == "Edited offline" and record["title"] == "Wells of the valley"


def test_every_resource_type_has_metadata_links(client, db, settings, owner):
    document = make_resource(db, settings, owner, "A plain document", resource_type="document")
    links = metadata_links(client, f"/api/v2/resources/{document.id}")
    response = client.get(links["Dublin Core"])
    assert response.status_code == 200 and b"A plain document" in response.content
    xsl = client.get(links["ISO with XSL"])
    assert xsl.status_code == 200 and b"<?xml-stylesheet" in xsl.content
    stylesheet = etree.fromstring(xsl.content).getroottree().getroot().getprevious()
    href = stylesheet.get("href")
    style = client.get(href)
    assert style.status_code == 200
    html = etree.XSLT(etree.fromstring(style.content))(etree.fromstring(xsl.content))
    assert "A plain document" in str(html)


def test_private_records_are_not_given_out(client, db, settings, points):
    links = metadata_links(client, f"/api/v2/datasets/{points.id}")
    make_private(db, settings, points)
    root = etree.fromstring(client.get(links["ISO"]).content)
    assert len(root) == 0  # CSW answers an unknown or hidden id with an empty response
    assert client.get(links["ISO with XSL"]).status_code == 401
    owner_auth = basic("owner", PASSWORD)
    assert len(etree.fromstring(client.get(links["ISO"], headers=owner_auth).content)) == 1
    assert client.get(links["ISO with XSL"], headers=owner_auth).status_code == 200


def test_csw_refuses_what_it_does_not_offer(client, points):
    def code(**params):
        response = client.get("/catalogue/csw", params=params)
        assert response.status_code == 400
        return etree.fromstring(response.content)[0].get("exceptionCode")

    # the full CSW (tests/api/routes/test_csw.py) answers more than GetRecordById
    assert client.get("/catalogue/csw", params={"service": "CSW", "request": "GetCapabilities"}).is_success
    assert code(service="CSW", version="3.0.0", request="GetRecordById") == "MissingParameterValue"
    assert code(service="CSW", version="3.0.0", request="GetRecordById", id=points.uuid,
                outputschema="http://example.org/nope") == "InvalidParameterValue"
    assert code(service="WMS", version="3.0.0", request="GetRecordById", id=points.uuid) == \
        "InvalidParameterValue"
    default = client.get("/catalogue/csw", params={"service": "CSW", "version": "2.0.2",
                                                   "request": "GetRecordById", "id": points.uuid})
    # Dublin Core, and CSW's default element set, summary
    assert etree.fromstring(default.content)[0].tag == "{http://www.opengis.net/cat/csw/2.0.2}SummaryRecord"


def test_geonodectl_resources_metadata_flow(client, points):
    """``geonodectl resources metadata <pk>``: read the record, GET its link named ISO."""
    headers = basic("owner", PASSWORD)
    record = client.get(f"/api/v2/resources/{points.id}", headers=headers).json()["resource"]
    for name in ("ISO", "Atom", "DIF", "Dublin Core", "FGDC"):
        url = next(link["url"] for link in record["links"] if link["name"] == name)
        text = client.get(url, headers=headers).text
        assert "Wells of the valley" in text, name
