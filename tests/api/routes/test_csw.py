"""``/catalogue/csw`` over HTTP: KVP and XML requests, the metadata links of every resource,
and no private record in an answer to anyone who may not view it."""

from __future__ import annotations

import datetime as dt

import pytest
from lxml import etree

from cartotheca.catalogue import iso_metadata
from tests.catalogue.iso_documents import BILLION_LAUGHS, gmd
from tests.catalogue.test_csw import FILTER, ISO_XSD, NS
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
GET_RECORDS_202 = """<?xml version="1.0" encoding="UTF-8"?>
<csw:GetRecords xmlns:csw="http://www.opengis.net/cat/csw/2.0.2" xmlns:ogc="http://www.opengis.net/ogc"
    service="CSW" version="2.0.2" resultType="results" outputSchema="http://www.isotc211.org/2005/gmd">
  <csw:Query typeNames="gmd:MD_Metadata" xmlns:gmd="http://www.isotc211.org/2005/gmd">
    <csw:ElementSetName>full</csw:ElementSetName>
    <csw:Constraint version="1.1.0">
      <ogc:Filter><ogc:PropertyIsLike wildCard="%" singleChar="_" escapeChar="\\">
        <ogc:PropertyName>apiso:AnyText</ogc:PropertyName><ogc:Literal>%{word}%</ogc:Literal>
      </ogc:PropertyIsLike></ogc:Filter>
    </csw:Constraint>
  </csw:Query>
</csw:GetRecords>"""
GET_RECORDS_30 = """<?xml version="1.0" encoding="UTF-8"?>
<csw30:GetRecords xmlns:csw30="http://www.opengis.net/cat/csw/3.0" xmlns:fes="http://www.opengis.net/fes/2.0"
    xmlns:gml="http://www.opengis.net/gml/3.2" service="CSW" version="3.0.0">
  <csw30:Query typeNames="csw30:Record">
    <csw30:ElementSetName>brief</csw30:ElementSetName>
    <csw30:Constraint version="2.0.0">
      <fes:Filter><fes:BBOX><fes:ValueReference>ows:BoundingBox</fes:ValueReference>
        <gml:Envelope srsName="http://www.opengis.net/def/crs/OGC/1.3/CRS84">
          <gml:lowerCorner>-20 30</gml:lowerCorner><gml:upperCorner>0 60</gml:upperCorner>
        </gml:Envelope></fes:BBOX></fes:Filter>
    </csw30:Constraint>
  </csw30:Query>
</csw30:GetRecords>"""


@pytest.fixture
def owner(db):
    return make_user(db, "owner", email="owner@example.org")


@pytest.fixture
def wells(db, settings, owner, tmp_path):
    """A point dataset through the real ingest (lon -10..8, lat 40..49)."""
    return publish_file(db, settings, owner, write_points(tmp_path), title="Wells of the valley")


def csw(client, headers=None, **params) -> etree._Element:
    response = client.get("/catalogue/csw", params=params, headers=headers or {})
    assert response.status_code == 200, response.text
    return etree.fromstring(response.content)


def titles(root) -> list[str]:
    return sorted(t.text for t in root.iter("{http://purl.org/dc/elements/1.1/}title"))


def metadata_links(client, resource, headers=None) -> dict[str, str]:
    record = client.get(f"/api/v2/resources/{resource.id}", headers=headers or {}).json()["resource"]
    return {link["name"]: link["url"] for link in record["links"] if link["link_type"] == "metadata"}


def test_every_metadata_link_answers_its_format(client, db, settings, owner, wells):
    document = make_resource(db, settings, owner, "Field notes", resource_type="document")
    iso_schema = etree.XMLSchema(etree.parse(ISO_XSD, etree.XMLParser(no_network=True)))
    for resource in (wells, document):
        links = metadata_links(client, resource)
        assert ROOTS.keys() <= links.keys()
        for name, tag in ROOTS.items():
            assert links[name].startswith("http://testserver/catalogue/csw?"), links[name]
            assert "request=GetRecordById" in links[name] and f"id={resource.uuid}" in links[name]
            response = client.get(links[name])
            assert response.status_code == 200 and "xml" in response.headers["content-type"]
            root = etree.fromstring(response.content)
            assert root.tag == "{http://www.opengis.net/cat/csw/2.0.2}GetRecordByIdResponse"
            assert [child.tag for child in root] == [tag], (resource.title, name)
            assert resource.title in response.text and resource.uuid in response.text
        iso = etree.fromstring(client.get(links["ISO"]).content)[0]
        assert iso_schema.validate(iso), [str(e) for e in iso_schema.error_log]
    online = [u.text for u in etree.fromstring(client.get(metadata_links(client, wells)["ISO"]).content)
              .iter("{http://www.isotc211.org/2005/gmd}URL")]
    assert any("service=WMS" in url for url in online)


def test_private_records_stay_out_of_every_answer(client, db, settings, owner, wells):
    make_user(db, "other")
    friend = make_user(db, "friend")
    shared = make_resource(db, settings, owner, "Shared springs", public=False, shared_with_user=friend,
                           keywords=["water"], extent=(-5, 42, 5, 48))
    links = metadata_links(client, wells)
    make_private(db, settings, wells)
    requesters = {"anonymous": {}, "other": basic("other", PASSWORD), "friend": basic("friend", PASSWORD),
                  "owner": basic("owner", PASSWORD)}
    search = dict(service="CSW", version="2.0.2", request="GetRecords", typenames="csw:Record",
                  resulttype="results", elementsetname="brief")
    seen = {who: titles(csw(client, headers, **search)) for who, headers in requesters.items()}
    assert seen == {"anonymous": [], "other": [], "friend": ["Shared springs"],
                    "owner": ["Shared springs", "Wells of the valley"]}
    for name in ROOTS:
        for who in ("anonymous", "other", "friend"):
            answer = client.get(links[name], headers=requesters[who])
            assert len(etree.fromstring(answer.content)) == 0 and "Wells" not in answer.text, (name, who)
        assert len(etree.fromstring(client.get(links[name], headers=requesters["owner"]).content)) == 1
    domain = client.get("/catalogue/csw", params={"service": "CSW", "version": "2.0.2",
                                                  "request": "GetDomain", "propertyname": "dc:title"})
    assert "Wells" not in domain.text and "Shared" not in domain.text
    by_ids = csw(client, requesters["other"], service="CSW", version="2.0.2", request="GetRecordById",
                 id=f"{wells.uuid},{shared.uuid}")
    assert len(by_ids) == 0


def test_xml_requests_in_both_versions(client, wells):
    response = client.post("/catalogue/csw", content=GET_RECORDS_202.format(word="wells").encode(),
                           headers={"Content-Type": "application/xml"})
    root = etree.fromstring(response.content)
    assert root.tag == "{http://www.opengis.net/cat/csw/2.0.2}GetRecordsResponse", response.text
    records = root.findall(".//gmd:MD_Metadata", NS)
    assert len(records) == 1
    assert records[0].find(".//gmd:fileIdentifier", NS)[0].text == wells.uuid
    nothing = client.post("/catalogue/csw", content=GET_RECORDS_202.format(word="volcano").encode())
    assert etree.fromstring(nothing.content).findall(".//gmd:MD_Metadata", NS) == []
    three = etree.fromstring(client.post("/catalogue/csw", content=GET_RECORDS_30.encode()).content)
    assert three.tag == "{http://www.opengis.net/cat/csw/3.0}GetRecordsResponse"
    assert titles(three) == ["Wells of the valley"]
    form = client.post("/catalogue/csw", data={"service": "CSW", "version": "2.0.2",
                                               "request": "GetRecords", "typenames": "csw:Record",
                                               "resulttype": "results", "elementsetname": "brief"})
    assert titles(etree.fromstring(form.content)) == ["Wells of the valley"], form.text


def test_bad_requests_get_exception_reports(client, wells):
    dtd = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "boom">]><csw:GetCapabilities ' \
          b'xmlns:csw="http://www.opengis.net/cat/csw/2.0.2" service="CSW">&e;</csw:GetCapabilities>'
    response = client.post("/catalogue/csw", content=dtd)
    assert response.status_code == 400 and b"boom" not in response.content
    assert etree.fromstring(response.content).find("ows:Exception", NS).get("exceptionCode") == \
        "NoApplicableCode"
    broken = csw(client, service="CSW", version="2.0.2", request="GetRecords", typenames="csw:Record",
                 constraintlanguage="CQL_TEXT", constraint="dc:title like")
    assert broken.tag == "{http://www.opengis.net/ows}ExceptionReport"
    json = client.get("/catalogue/csw", params={"service": "CSW", "version": "2.0.2",
                                                "request": "GetRecords", "typenames": "csw:Record",
                                                "resulttype": "results", "elementsetname": "brief",
                                                "outputformat": "application/json"})
    assert json.headers["content-type"] == "application/json"
    assert "Wells of the valley" in json.text


def test_refused_before_pycsw_runs(client, wells):
    def code(body=None, **params):
        if body:
            response = client.post("/catalogue/csw", content=body.encode())
        else:
            response = client.get("/catalogue/csw", params=params)
        assert response.headers["content-type"] == "application/xml; charset=UTF-8"
        root = etree.fromstring(response.content)
        return response.status_code, root.find("ows:Exception", NS).get("exceptionCode")

    base = dict(service="CSW", version="2.0.2", request="GetRecords", typenames="csw:Record")
    assert code(**base, responsehandler="http://127.0.0.1:9/") == (400, "InvalidParameterValue")
    assert code(**base, mode="opensearch") == (400, "InvalidParameterValue")
    assert code(BILLION_LAUGHS) == (400, "NoApplicableCode")
    laughs_filter = BILLION_LAUGHS.replace("gmd:MD_Metadata", "ogc:Filter")
    assert code(**base, constraintlanguage="FILTER", constraint=laughs_filter) == (400, "NoApplicableCode")
    handler = FILTER.replace("</csw:GetRecords>",
                             "<csw:ResponseHandler>http://127.0.0.1:9/</csw:ResponseHandler></csw:GetRecords>")
    assert code(handler.format("")) == (400, "InvalidParameterValue")


def test_a_refusal_is_reported_in_the_version_asked(client, wells):
    two = client.get("/catalogue/csw", params={"service": "CSW", "version": "2.0.2", "request": "GetRecords",
                                               "typenames": "csw:Record", "maxrecords": "x"})
    assert two.status_code == 400
    assert two.content == (
        b"<?xml version='1.0' encoding='UTF-8'?>\n"
        b'<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows" version="1.2.0">'
        b'<ows:Exception exceptionCode="InvalidParameterValue" locator="maxRecords"><ows:ExceptionText>'
        b"maxRecords must be an integer between 0 and 2147483647</ows:ExceptionText></ows:Exception>"
        b"</ows:ExceptionReport>")
    three = client.get("/catalogue/csw", params={"service": "CSW", "version": "3.0.0",
                                                 "request": "GetRecords", "typenames": "csw:Record",
                                                 "mode": "sru"})
    assert three.status_code == 400
    root = etree.fromstring(three.content)
    assert (root.tag, root.get("version")) == (f"{{{NS['ows20']}}}ExceptionReport", "2.0.0")
    exception = root.find("ows20:Exception", NS)
    assert (exception.get("exceptionCode"), exception.get("locator")) == ("InvalidParameterValue", "mode")


def test_a_page_costs_the_same_statements_whatever_its_size(client, db, settings, owner, count_statements):
    for i in range(8):
        make_resource(db, settings, owner, f"Record {i}", keywords=["k"], extent=(i, i, i + 1, i + 1))
    counts = []
    for size in (2, 8):
        with count_statements() as n:
            root = csw(client, service="CSW", version="2.0.2", request="GetRecords",
                       typenames="gmd:MD_Metadata", outputschema=NS["gmd"], resulttype="results",
                       elementsetname="full", maxrecords=str(size))
        assert len(root.findall(".//gmd:MD_Metadata", NS)) == size
        counts.append(n.value)
    assert counts[0] == counts[1], counts


def test_metadata_uploaded_to_a_dataset_is_served_back_as_iso(client, db, owner, wells):
    make_user(db, "ana")
    make_user(db, "ben", email="ben@example.org")
    response = client.put(f"/api/v2/datasets/{wells.id}/metadata", headers=basic("owner", PASSWORD),
                          files={"metadata_file": ("md.xml", gmd(wells.uuid).encode(), "text/xml")})
    assert response.status_code == 200, response.text
    document = etree.fromstring(client.get(metadata_links(client, wells)["ISO"]).content)[0]
    record = iso_metadata.read_iso(document)
    assert (record.identifier, record.title) == (wells.uuid, "Rivers of the plain")
    assert record.abstract == "Every river of the plain, digitised from 1:10000 maps."
    assert {w for group in record.keywords for w in group.words} >= {"hydrography", "rivers"}
    assert (record.date, record.date_type) == (dt.datetime(2019, 5, 4), "creation")
    assert {("poc", "ana"), ("publisher", "ben")} <= {(p.role, n) for p in record.parties for n in p.names}
    found = csw(client, service="CSW", version="2.0.2", request="GetRecords", typenames="csw:Record",
                resulttype="results", elementsetname="brief", constraintlanguage="CQL_TEXT",
                constraint="csw:AnyText like '%digitised%'")
    assert titles(found) == ["Rivers of the plain"]
