"""The CSW service over the catalogue's tables: constraints, paging, output schemas, visibility.

Requests go to ``csw.service.handle`` as the route hands them over (KVP or an XML body), with
a real session and real principals; answers are read back as XML.
"""

from __future__ import annotations

import datetime as dt
import os

import pycsw
import pytest
from lxml import etree

from cartotheca import xmlsafe
from cartotheca.catalogue import iso_metadata
from cartotheca.catalogue.auth import anonymous, load_internal_groups, principal_for
from cartotheca.catalogue.csw import service
from cartotheca.catalogue.csw.repository import RequestScope
from cartotheca.db.models import User
from cartotheca.filters.values import like_pattern
from tests.catalogue.iso_documents import gmd
from tests.catalogue.test_iso_metadata import load
from tests.factories import make_resource, make_user

NS = {
    "csw": "http://www.opengis.net/cat/csw/2.0.2",
    "csw30": "http://www.opengis.net/cat/csw/3.0",
    "dc": "http://purl.org/dc/elements/1.1/",
    "gmd": "http://www.isotc211.org/2005/gmd",
    "ows": "http://www.opengis.net/ows",
    "ows20": "http://www.opengis.net/ows/2.0",
}
ISO_XSD = os.path.join(os.path.dirname(pycsw.__file__),
                       "plugins/profiles/apiso/schemas/ogc/iso/19139/20060504/gmd/gmd.xsd")
FILTER = ('<csw:GetRecords xmlns:csw="http://www.opengis.net/cat/csw/2.0.2" '
          'xmlns:ogc="http://www.opengis.net/ogc" xmlns:gml="http://www.opengis.net/gml" '
          'service="CSW" version="2.0.2" resultType="results" maxRecords="50">'
          '<csw:Query typeNames="csw:Record"><csw:ElementSetName>brief</csw:ElementSetName>'
          '<csw:Constraint version="1.1.0"><ogc:Filter>{}</ogc:Filter></csw:Constraint>'
          '</csw:Query></csw:GetRecords>')


@pytest.fixture(scope="session")
def iso_schema() -> etree.XMLSchema:
    """The official ISO 19139 (2006-05-04) schemas, as pycsw ships them: no network needed."""
    return etree.XMLSchema(etree.parse(ISO_XSD, etree.XMLParser(no_network=True)))


@pytest.fixture
def people(db, settings):
    groups = load_internal_groups(db, settings.ANONYMOUS_GROUP_NAME, settings.REGISTERED_MEMBERS_GROUP_NAME)
    users = {name: make_user(db, name, email=f"{name}@example.org") for name in ("owner", "friend", "other")}
    admin = db.query(User).filter(User.username == settings.ADMIN_USER).one()
    who = {name: principal_for(db, user, groups, "basic") for name, user in users.items()}
    who["admin"] = principal_for(db, admin, groups, "basic")
    who["anonymous"] = anonymous(groups)
    return users, who


@pytest.fixture
def catalogue(db, settings, people):
    users, _ = people
    owner = users["owner"]
    wells = make_resource(db, settings, owner, "Wells of the valley", abstract="Water wells, surveyed",
                          keywords=["water"], extent=(-10, 40, 10, 50))
    rivers = make_resource(db, settings, owner, "Rivers of the plain", resource_type="map",
                           keywords=["hydrography"], extent=(20, 40, 30, 50),
                           date=dt.datetime(2019, 5, 4), date_type="creation")
    roads = make_resource(db, settings, owner, "Roads", resource_type="document")
    springs = make_resource(db, settings, owner, "Secret springs", public=False, keywords=["water"],
                            extent=(-5, 42, 5, 48), shared_with_user=users["friend"])
    return {"wells": wells, "rivers": rivers, "roads": roads, "springs": springs}


def ask(db, settings, principal, body: str | None = None, **params) -> etree._Element:
    answer = service.handle(RequestScope(db, principal, settings), params,
                            body.encode() if body else None)
    return etree.fromstring(answer.body)


def titles(root: etree._Element) -> list[str]:
    return [t.text for t in root.iter(f"{{{NS['dc']}}}title")]


def records(db, settings, principal, cql: str, **extra) -> list[str]:
    root = ask(db, settings, principal, service="CSW", version="2.0.2", request="GetRecords",
               typenames="csw:Record", resulttype="results", elementsetname="brief",
               constraintlanguage="CQL_TEXT", constraint=cql, **extra)
    assert root.tag == f"{{{NS['csw']}}}GetRecordsResponse", etree.tostring(root)
    return sorted(titles(root))


def test_text_search_answers_what_each_requester_may_view(db, settings, people, catalogue):
    _, who = people
    query = "csw:AnyText like '%water%'"
    assert records(db, settings, who["anonymous"], query) == ["Wells of the valley"]
    assert records(db, settings, who["other"], query) == ["Wells of the valley"]
    for name in ("owner", "friend", "admin"):
        assert records(db, settings, who[name], query) == ["Secret springs", "Wells of the valley"], name


@pytest.mark.parametrize("operator,envelope,expected", [
    # lon/lat (CRS84) envelope over the map only
    ("BBOX", ("urn:ogc:def:crs:OGC:1.3:CRS84", "15 35", "35 55"), ["Rivers of the plain"]),
    # the same box in EPSG:4326 axis order (latitude first)
    ("BBOX", ("urn:ogc:def:crs:EPSG::4326", "35 15", "55 35"), ["Rivers of the plain"]),
    ("Intersects", ("urn:ogc:def:crs:OGC:1.3:CRS84", "-20 30", "40 60"),
     ["Rivers of the plain", "Wells of the valley"]),
    ("Within", ("urn:ogc:def:crs:OGC:1.3:CRS84", "-11 39", "11 51"), ["Wells of the valley"]),
    ("Contains", ("urn:ogc:def:crs:OGC:1.3:CRS84", "0 44", "1 45"), ["Wells of the valley"]),
    # records without a footprint are disjoint from every box
    ("Disjoint", ("urn:ogc:def:crs:OGC:1.3:CRS84", "15 35", "35 55"), ["Roads", "Wells of the valley"]),
])
def test_spatial_constraints(db, settings, people, catalogue, operator, envelope, expected):
    _, who = people
    srs, lower, upper = envelope
    body = FILTER.format(
        f"<ogc:{operator}><ogc:PropertyName>ows:BoundingBox</ogc:PropertyName>"
        f'<gml:Envelope srsName="{srs}"><gml:lowerCorner>{lower}</gml:lowerCorner>'
        f"<gml:upperCorner>{upper}</gml:upperCorner></gml:Envelope></ogc:{operator}>")
    assert sorted(titles(ask(db, settings, who["anonymous"], body))) == expected


def test_property_constraints(db, settings, people, catalogue):
    _, who = people
    owner = who["owner"]
    assert records(db, settings, owner, "dc:type = 'dataset'") == ["Secret springs", "Wells of the valley"]
    assert records(db, settings, owner, "dc:title like 'Riv%'") == ["Rivers of the plain"]
    assert records(db, settings, owner, "dc:subject like '%hydro%' or dc:title = 'Roads'") == \
        ["Rivers of the plain", "Roads"]
    assert records(db, settings, owner, "apiso:CreationDate < '2020-01-01'") == ["Rivers of the plain"]
    # dates compare as dates, whatever the literal's precision
    assert records(db, settings, owner, "dc:date >= '2019-05-04T00:00:00Z' and dc:date < '2019-05-05'") \
        == ["Rivers of the plain"]
    between = FILTER.format(
        "<ogc:PropertyIsBetween><ogc:PropertyName>dc:date</ogc:PropertyName>"
        "<ogc:LowerBoundary><ogc:Literal>2019-01-01</ogc:Literal></ogc:LowerBoundary>"
        "<ogc:UpperBoundary><ogc:Literal>2019-12-31</ogc:Literal></ogc:UpperBoundary>"
        "</ogc:PropertyIsBetween>")
    assert titles(ask(db, settings, owner, between)) == ["Rivers of the plain"]
    wildcard = FILTER.format(
        '<ogc:PropertyIsLike wildCard="*" singleChar="." escapeChar="!" matchCase="false">'
        "<ogc:PropertyName>dc:title</ogc:PropertyName><ogc:Literal>*OF THE .ALLEY</ogc:Literal>"
        "</ogc:PropertyIsLike>")
    assert titles(ask(db, settings, owner, wildcard)) == ["Wells of the valley"]
    assert records(db, settings, owner, f"dc:identifier = '{catalogue['roads'].uuid}'") == ["Roads"]


def test_paging_and_sorting(db, settings, people, catalogue):
    _, who = people
    common = dict(service="CSW", version="2.0.2", request="GetRecords", typenames="csw:Record",
                  resulttype="results", elementsetname="brief", sortby="dc:title:D")
    first = ask(db, settings, who["owner"], maxrecords="2", **common)
    results = first.find("csw:SearchResults", NS)
    assert titles(first) == ["Wells of the valley", "Secret springs"]
    assert (results.get("numberOfRecordsMatched"), results.get("numberOfRecordsReturned"),
            results.get("nextRecord")) == ("4", "2", "3")
    second = ask(db, settings, who["owner"], maxrecords="2", startposition="3", **common)
    assert titles(second) == ["Roads", "Rivers of the plain"]
    assert second.find("csw:SearchResults", NS).get("nextRecord") == "0"
    hits = ask(db, settings, who["anonymous"], **{**common, "resulttype": "hits"})
    assert hits.find("csw:SearchResults", NS).get("numberOfRecordsMatched") == "3"


def test_get_record_by_id_in_every_output_schema(db, settings, people, catalogue, iso_schema):
    _, who = people
    roots = {
        "http://www.opengis.net/cat/csw/2.0.2": "{http://www.opengis.net/cat/csw/2.0.2}Record",
        "http://www.isotc211.org/2005/gmd": "{http://www.isotc211.org/2005/gmd}MD_Metadata",
        "http://www.w3.org/2005/Atom": "{http://www.w3.org/2005/Atom}entry",
        "http://gcmd.gsfc.nasa.gov/Aboutus/xml/dif/": "{http://gcmd.gsfc.nasa.gov/Aboutus/xml/dif/}DIF",
        "http://www.opengis.net/cat/csw/csdgm": "metadata",
        "urn:oasis:names:tc:ebxml-regrep:xsd:rim:3.0":
            "{urn:oasis:names:tc:ebxml-regrep:xsd:rim:3.0}ExtrinsicObject",
    }
    wells = catalogue["wells"]
    for schema, tag in roots.items():
        root = ask(db, settings, who["anonymous"], service="CSW", version="2.0.2",
                   request="GetRecordById", id=wells.uuid, outputschema=schema, elementsetname="full")
        assert [child.tag for child in root] == [tag], schema
        text = etree.tostring(root, encoding="unicode")
        assert "Wells of the valley" in text and wells.uuid in text, schema
    iso = ask(db, settings, who["anonymous"], service="CSW", version="2.0.2", request="GetRecordById",
              id=wells.uuid, outputschema=NS["gmd"], elementsetname="full")[0]
    assert iso_schema.validate(iso), iso_schema.error_log
    west = iso.find(".//gmd:EX_GeographicBoundingBox/gmd:westBoundLongitude", NS)
    assert float(west[0].text) == -10.0


def test_hidden_records_are_not_found_by_id(db, settings, people, catalogue):
    _, who = people
    springs = catalogue["springs"].uuid
    ids = f"{springs},{catalogue['wells'].uuid}"
    by_id = dict(service="CSW", version="2.0.2", request="GetRecordById", id=ids, elementsetname="brief")
    assert titles(ask(db, settings, who["anonymous"], **by_id)) == ["Wells of the valley"]
    assert titles(ask(db, settings, who["other"], **by_id)) == ["Wells of the valley"]
    assert titles(ask(db, settings, who["friend"], **by_id)) == ["Secret springs", "Wells of the valley"]
    missing = ask(db, settings, who["anonymous"], service="CSW", version="3.0.0",
                  request="GetRecordById", id=springs)
    assert missing.find("ows20:Exception", NS).get("exceptionCode") == "NotFound"


def test_get_domain_lists_visible_values_only(db, settings, people, catalogue):
    _, who = people
    def domain(principal):
        root = ask(db, settings, principal, service="CSW", version="2.0.2", request="GetDomain",
                   propertyname="dc:title")
        return [v.text for v in root.iterfind(".//csw:Value", NS)]
    assert domain(who["anonymous"]) == ["Rivers of the plain", "Roads", "Wells of the valley"]
    assert "Secret springs" in domain(who["friend"])


def test_csw3_text_and_box_parameters(db, settings, people, catalogue):
    _, who = people
    root = ask(db, settings, who["anonymous"], service="CSW", version="3.0.0", request="GetRecords",
               typenames="csw:Record", elementsetname="brief", q="wells", bbox="-20,30,20,60")
    assert root.tag == f"{{{NS['csw30']}}}GetRecordsResponse"
    assert titles(root) == ["Wells of the valley"]
    root = ask(db, settings, who["owner"], service="CSW", version="3.0.0", request="GetRecords",
               typenames="csw:Record", elementsetname="brief", q="water")
    assert sorted(titles(root)) == ["Secret springs", "Wells of the valley"]


def test_uploaded_iso_metadata_round_trips(db, settings, people, iso_schema):
    users, who = people
    ana = make_user(db, "ana")
    make_user(db, "ben", email="ben@example.org")
    make_user(db, "author", email="author@example.org")
    resource = make_resource(db, settings, ana, "Before")
    iso_metadata.apply_iso_metadata(db, load(db, resource.id), xmlsafe.parse(gmd(resource.uuid)))
    db.commit()
    root = ask(db, settings, who["anonymous"], service="CSW", version="2.0.2", request="GetRecordById",
               id=resource.uuid, outputschema=NS["gmd"], elementsetname="full")
    document = root[0]
    assert iso_schema.validate(document), "\n".join(str(e) for e in iso_schema.error_log)
    record = iso_metadata.read_iso(document)
    assert record.title == "Rivers of the plain"
    assert record.abstract == "Every river of the plain, digitised from 1:10000 maps."
    assert [word for group in record.keywords for word in group.words] == \
        ["hydrography", "rivers", "Floodplains"]
    assert (record.date, record.date_type) == (dt.datetime(2019, 5, 4), "creation")
    assert record.temporal_extent == (dt.datetime(2001, 1, 1), dt.datetime(2010, 12, 31, 22, 0))
    parties = {(p.role, name) for p in record.parties for name in p.names}
    assert {("metadata_author", "author"), ("poc", "ana"), ("publisher", "ben")} <= parties


def test_capabilities_name_the_operations_and_schemas(db, settings, people):
    _, who = people
    root = ask(db, settings, who["anonymous"], service="CSW", version="2.0.2", request="GetCapabilities")
    operations = {op.get("name") for op in root.iterfind(".//ows:Operation", NS)}
    assert {"GetCapabilities", "DescribeRecord", "GetDomain", "GetRecords", "GetRecordById"} <= operations
    assert "Transaction" not in operations and "Harvest" not in operations
    url = root.find(".//ows:Operation[@name='GetRecords']//ows:Get", NS)
    assert url.get("{http://www.w3.org/1999/xlink}href") == "http://testserver/catalogue/csw"
    schemas = {v.text for v in root.iterfind(
        ".//ows:Operation[@name='GetRecordById']/ows:Parameter[@name='outputSchema']/ows:Value", NS)}
    assert {"http://www.isotc211.org/2005/gmd", "http://www.w3.org/2005/Atom",
            "urn:oasis:names:tc:ebxml-regrep:xsd:rim:3.0"} <= schemas
    described = ask(db, settings, who["anonymous"], service="CSW", version="2.0.2",
                    request="DescribeRecord", typename="csw:Record")
    assert described.tag == f"{{{NS['csw']}}}DescribeRecordResponse"


@pytest.mark.parametrize("literal,pattern", [
    ("*wells*", "%wells%"), ("w.lls", "w_lls"), ("100%", "100\\%"), ("a_b", "a\\_b"),
    ("!*star", "*star"), ("back\\slash", "back\\\\slash"),
])
def test_like_patterns(literal, pattern):
    assert like_pattern(literal, "*", ".", "!") == pattern


def _answer_version(db, settings, who, body: str | None = None, **params) -> tuple[str, str | None]:
    root = ask(db, settings, who, body, **params)
    return etree.QName(root).namespace, root.get("version")


def test_answers_2_0_2_unless_3_0_0_is_asked_for(db, settings, people, catalogue):
    """As GeoNode's pycsw: GDAL's CSW driver sends no version and then speaks 2.0.2."""
    _, who = people
    anyone = who["anonymous"]
    csw2, csw3 = NS["csw"], NS["csw30"]
    caps = dict(service="CSW", request="GetCapabilities")
    assert _answer_version(db, settings, anyone, **caps) == (csw2, "2.0.2")
    assert _answer_version(db, settings, anyone) == (csw2, "2.0.2")  # a bare request
    assert _answer_version(db, settings, anyone, **caps, acceptversions="3.0.0") == (csw3, "3.0.0")
    assert _answer_version(db, settings, anyone, **caps, acceptversions="3.0.0,2.0.2") == (csw3, "3.0.0")
    assert _answer_version(db, settings, anyone, **caps, acceptversions="2.0.2,3.0.0") == (csw2, "2.0.2")
    assert _answer_version(db, settings, anyone, **caps, version="3.0.0") == (csw3, "3.0.0")
    refused = ask(db, settings, anyone, **caps, acceptversions="1.0.0")
    assert refused.find("ows:Exception", NS).get("exceptionCode") == "VersionNegotiationFailed"
    records = ask(db, settings, anyone, service="CSW", version="2.0.2", request="GetRecords",
                  typenames="csw:Record", resulttype="results", elementsetname="brief")
    assert records.tag == f"{{{csw2}}}GetRecordsResponse" and "Wells of the valley" in titles(records)
    records3 = ask(db, settings, anyone, service="CSW", version="3.0.0", request="GetRecords",
                   typenames="csw:Record", elementsetname="brief")
    assert records3.tag == f"{{{csw3}}}GetRecordsResponse" and "Wells of the valley" in titles(records3)
    xml = ask(db, settings, anyone, FILTER.format(
        '<ogc:PropertyIsLike wildCard="*" singleChar="." escapeChar="!">'
        "<ogc:PropertyName>dc:title</ogc:PropertyName><ogc:Literal>Wells*</ogc:Literal>"
        "</ogc:PropertyIsLike>"))
    assert xml.tag == f"{{{csw2}}}GetRecordsResponse" and titles(xml) == ["Wells of the valley"]
