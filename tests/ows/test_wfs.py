"""WFS 1.0.0, 1.1.0 and 2.0.0 against datasets published through the real ingest.

The ``points`` fixture: point i (0-based) at lon -10 + 2i, lat 40 + i, with id i + 1, name
"point <i+1>", value 1.5 i, category "abc"[i % 3], observed 2024-01-(1 + i).
"""

from __future__ import annotations

from io import BytesIO

import numpy as np
import pytest
from fastapi.testclient import TestClient
from openpyxl import load_workbook
from pyproj import Transformer

from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import POINTS, POLYGONS, POLYGONS_BOUNDS, publish_file, write_points
from tests.ows.conftest import make_private
from tests.ows.wfs_fixtures import (
    NS,
    gml_features,
    ows_exception,
    positions,
    property_values,
    read_answer,
    wfs,
    xml,
)

FES20 = 'xmlns:fes="http://www.opengis.net/fes/2.0" xmlns:gml="http://www.opengis.net/gml/3.2"'


def ids_of(features) -> list[int]:
    return [int(v) for v in property_values(features, "id")]


# -- capabilities ---------------------------------------------------------------------------


def test_capabilities_2_0_0_advertise_paging_crs_and_extent(client, settings, polygons, points):
    response = wfs(client, request="GetCapabilities", version="2.0.0")
    assert response.status_code == 200
    root = xml(response)
    names = [n.text for n in root.iterfind(".//wfs:FeatureType/wfs:Name", NS)]
    assert sorted(names) == sorted([polygons.alternate, points.alternate])
    assert all(n.startswith("geonode:") for n in names)
    constraints = {c.get("name"): c.findtext("ows:DefaultValue", namespaces=NS)
                   for c in root.iterfind(".//ows:OperationsMetadata/ows:Constraint", NS)}
    assert constraints["ImplementsResultPaging"] == "TRUE"
    assert constraints["CountDefault"] == str(settings.WFS_COUNT_DEFAULT)
    feature_type = next(ft for ft in root.iterfind(".//wfs:FeatureType", NS)
                        if ft.findtext("wfs:Name", namespaces=NS) == polygons.alternate)
    assert feature_type.findtext("wfs:DefaultCRS", namespaces=NS) == "urn:ogc:def:crs:EPSG::4326"
    assert "urn:ogc:def:crs:EPSG::3857" in [e.text for e in feature_type.iterfind("wfs:OtherCRS", NS)]
    lower = [float(v) for v in feature_type.findtext(".//ows:LowerCorner", namespaces=NS).split()]
    upper = [float(v) for v in feature_type.findtext(".//ows:UpperCorner", namespaces=NS).split()]
    assert np.allclose(lower + upper, POLYGONS_BOUNDS)
    formats = [f.text for f in feature_type.iterfind(".//wfs:Format", NS)]
    assert {"application/gml+xml; version=3.2", "application/json", "SHAPE-ZIP", "csv"} <= set(formats)
    get_url = root.find(".//ows:Operation[@name='GetFeature']//ows:Get", NS)
    assert get_url.get("{http://www.w3.org/1999/xlink}href").startswith("http://testserver/ows")


def test_capabilities_version_negotiation(client, polygons):
    assert xml(wfs(client, request="GetCapabilities")).get("version") == "2.0.0"
    negotiated = wfs(client, request="GetCapabilities", acceptversions="2.0.0,1.1.0,1.0.0")
    assert xml(negotiated).get("version") == "2.0.0"
    older = xml(wfs(client, request="GetCapabilities", acceptversions="1.1.0,1.0.0"))
    assert older.get("version") == "1.1.0"
    assert older.findtext(".//wfs1:FeatureType/wfs1:DefaultSRS", namespaces=NS) == \
        "urn:x-ogc:def:crs:EPSG:4326"
    oldest = xml(wfs(client, request="GetCapabilities", version="1.0.0"))
    assert oldest.findtext(".//wfs1:FeatureType/wfs1:SRS", namespaces=NS) == "EPSG:4326"
    box = oldest.find(".//wfs1:LatLongBoundingBox", NS)
    assert [float(box.get(k)) for k in ("minx", "miny", "maxx", "maxy")] == list(POLYGONS_BOUNDS)
    failed = wfs(client, request="GetCapabilities", acceptversions="3.0.0")
    assert failed.status_code == 400
    assert ows_exception(failed)[0] == "VersionNegotiationFailed"


def test_capabilities_list_what_the_requester_may_view(client, db, settings, polygons, owner):
    make_private(db, settings, polygons)
    anonymous = xml(wfs(client, request="GetCapabilities", version="2.0.0"))
    assert anonymous.findall(".//wfs:FeatureType", NS) == []
    as_owner = xml(wfs(client, basic(owner.username, PASSWORD), request="GetCapabilities",
                       version="2.0.0"))
    assert [n.text for n in as_owner.iterfind(".//wfs:FeatureType/wfs:Name", NS)] == [polygons.alternate]


def test_rasters_are_not_feature_types(client, raster):
    root = xml(wfs(client, request="GetCapabilities", version="2.0.0"))
    assert root.findall(".//wfs:FeatureType", NS) == []
    answer = wfs(client, request="GetFeature", version="2.0.0", typenames=raster.alternate)
    assert ows_exception(answer) == ("InvalidParameterValue", "typeName")


# -- DescribeFeatureType --------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2.0.0", "1.1.0", "1.0.0"])
def test_describe_feature_type_from_attributes(client, points, version):
    params = {"typename": points.alternate}
    if version == "2.0.0":
        params["typenames"] = points.alternate  # QGIS sends both
    response = wfs(client, request="DescribeFeatureType", version=version, **params)
    assert response.status_code == 200, response.text
    schema = xml(response)
    assert schema.get("targetNamespace") == NS["geonode"]
    elements = {e.get("name"): e.get("type") for e in schema.iterfind(".//xsd:sequence/xsd:element", NS)}
    assert elements["geom"] == "gml:PointPropertyType"
    assert elements["name"] == "xsd:string"
    assert elements["value"] == "xsd:double"
    assert elements["id"] in ("xsd:int", "xsd:long")
    top = schema.find("xsd:element", NS)
    assert top.get("name") == "points" and top.get("type") == "geonode:pointsType"


def test_describe_feature_type_bare_name_and_unknown_name(client, points):
    bare = wfs(client, request="DescribeFeatureType", version="1.1.0", typename="points")
    assert bare.status_code == 200
    unknown = wfs(client, request="DescribeFeatureType", version="2.0.0", typenames="geonode:nothing")
    assert unknown.status_code == 400
    assert ows_exception(unknown) == ("InvalidParameterValue", "typeName")


# -- GetFeature: GML and axis order ---------------------------------------------------------


def test_get_feature_2_0_0_gml32_is_latitude_first(client, tmp_path, points):
    response = wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate)
    assert response.headers["content-type"].startswith("application/gml+xml; version=3.2")
    root = xml(response)
    assert root.get("numberMatched") == "10" and root.get("numberReturned") == "10"
    features = gml_features(response)
    assert ids_of(features) == [p["id"] for p in POINTS]
    first = features[0].find(".//gml:Point", NS)
    assert first.get("srsName") == "urn:ogc:def:crs:EPSG::4326"
    assert positions(features[0]).tolist() == [[POINTS[0]["lat"], POINTS[0]["lon"]]]
    read = read_answer(tmp_path, response, ".gml")
    assert read["name"] == [p["name"] for p in POINTS]
    assert np.allclose(read["value"], [p["value"] for p in POINTS])


def test_get_feature_1_1_0_gml31_and_1_0_0_gml2(client, points):
    v11 = wfs(client, request="GetFeature", version="1.1.0", typename=points.alternate, maxfeatures=2)
    assert v11.headers["content-type"].startswith("text/xml; subtype=gml/3.1.1")
    features = gml_features(v11, "3.1.1")
    assert len(features) == 2 and xml(v11).get("numberOfFeatures") == "2"
    assert features[0].find(".//gml2:Point", NS).get("srsName") == "urn:x-ogc:def:crs:EPSG:4326"
    assert positions(features[0]).tolist() == [[POINTS[0]["lat"], POINTS[0]["lon"]]]
    v10 = wfs(client, request="GetFeature", version="1.0.0", typename=points.alternate)
    assert v10.headers["content-type"].startswith("text/xml; subtype=gml/2.1.2")
    features = gml_features(v10, "2")
    assert len(features) == 10
    assert features[3].find(".//gml2:coordinates", NS) is not None
    assert positions(features[3]).tolist() == [[POINTS[3]["lon"], POINTS[3]["lat"]]]


def test_get_feature_srsname_reprojects(client, points):
    response = wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate,
                   srsname="EPSG:3857")
    features = gml_features(response)
    to_mercator = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    expected = [to_mercator.transform(p["lon"], p["lat"]) for p in POINTS]
    got = np.concatenate([positions(f) for f in features])
    assert np.allclose(got, expected, atol=1e-3)
    assert features[0].find(".//gml:Point", NS).get("srsName") == "EPSG:3857"


def test_qgis_probe_hits_and_download_sequence(client, settings, points):
    probe = wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate,
                startindex=0, count=1, srsname="urn:ogc:def:crs:EPSG::4326",
                bbox="-90,-180,90,180,urn:ogc:def:crs:EPSG::4326")
    assert len(gml_features(probe)) == 1
    hits = xml(wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate,
                   resulttype="hits"))
    assert hits.get("numberMatched") == "10" and hits.get("numberReturned") == "0"
    assert hits.findall("wfs:member", NS) == []
    download = wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate,
                   startindex=0, count=settings.WFS_COUNT_DEFAULT, srsname="urn:ogc:def:crs:EPSG::4326")
    assert len(gml_features(download)) == 10


def test_paging_with_next_links(client, points):
    seen: list[int] = []
    response = wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate, count=4,
                   sortby="id A")
    pages = 0
    while True:
        root = xml(response)
        assert root.get("numberMatched") == "10"
        seen += ids_of(gml_features(response))
        pages += 1
        following = root.get("next")
        if following is None:
            break
        response = client.get(following.replace("http://testserver", ""))
    assert pages == 3 and seen == list(range(1, 11))
    last = xml(wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate, count=4,
                   startindex=8))
    assert last.get("numberReturned") == "2" and last.get("previous") is not None


def test_count_default_caps_a_2_0_0_page(make_app, db, tmp_path):
    app = make_app(WFS_COUNT_DEFAULT=3)
    settings = app.state.cartotheca.settings
    resource = publish_file(db, settings, make_user(db), write_points(tmp_path))
    with TestClient(app) as client:
        capped = wfs(client, request="GetFeature", version="2.0.0", typenames=resource.alternate)
        assert len(gml_features(capped)) == 3 and xml(capped).get("numberMatched") == "10"
        assert len(gml_features(wfs(client, request="GetFeature", version="1.1.0",
                                    typename=resource.alternate), "3.1.1")) == 10


@pytest.mark.parametrize(("version", "bbox", "expected"), [
    ("2.0.0", "41,-9,44.5,0,urn:ogc:def:crs:EPSG::4326", [2, 3, 4, 5]),  # lat/lon
    ("2.0.0", "-9,41,0,44.5,EPSG:4326", [2, 3, 4, 5]),  # EPSG:4326 short form is lon/lat
    ("1.1.0", "-9,41,0,44.5,EPSG:4326", [2, 3, 4, 5]),
    ("1.1.0", "41,-9,44.5,0", [2, 3, 4, 5]),  # default urn:x-ogc CRS: lat/lon
    ("1.0.0", "-9,41,0,44.5", [2, 3, 4, 5]),
    ("2.0.0", "-1001875,5012341,0,5543147,EPSG:3857", [2, 3, 4, 5]),
])
def test_bbox_axis_order(client, points, version, bbox, expected):
    typename = {"typenames" if version == "2.0.0" else "typename": points.alternate}
    response = wfs(client, request="GetFeature", version=version, bbox=bbox, **typename)
    assert response.status_code == 200, response.text
    assert sorted(ids_of(gml_features(response, "3.2" if version == "2.0.0" else "2"))) == expected


def test_sortby_propertyname_and_ids(client, points):
    desc = wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate,
               sortby="value DESC", count=3)
    assert ids_of(gml_features(desc)) == [10, 9, 8]
    by_category = wfs(client, request="GetFeature", version="1.1.0", typename=points.alternate,
                      sortby="category D,id A")
    assert ids_of(gml_features(by_category, "3.1.1")) == [3, 6, 9, 2, 5, 8, 1, 4, 7, 10]
    only_name = gml_features(wfs(client, request="GetFeature", version="2.0.0",
                                 typenames=points.alternate, propertyname="name"))
    children = {c.tag.rsplit("}", 1)[1] for c in only_name[0]}
    assert children == {"name"}
    some = gml_features(wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate))
    gml_ids = [f.get("{http://www.opengis.net/gml/3.2}id") for f in some]
    chosen = wfs(client, request="GetFeature", version="2.0.0", resourceid=f"{gml_ids[2]},{gml_ids[5]}")
    assert ids_of(gml_features(chosen)) == [3, 6]
    legacy = wfs(client, request="GetFeature", version="1.1.0", typename=points.alternate,
                 featureid=gml_ids[0])
    assert ids_of(gml_features(legacy, "3.1.1")) == [1]


# -- filters --------------------------------------------------------------------------------


def test_fes20_filter_as_qgis_sends_it(client, points):
    fes = (f'<fes:Filter {FES20}><fes:And><fes:PropertyIsGreaterThanOrEqualTo>'
           "<fes:ValueReference>value</fes:ValueReference><fes:Literal>3</fes:Literal>"
           "</fes:PropertyIsGreaterThanOrEqualTo><fes:BBOX><fes:ValueReference>geom</fes:ValueReference>"
           '<gml:Envelope srsName="urn:ogc:def:crs:EPSG::4326"><gml:lowerCorner>40 -10</gml:lowerCorner>'
           "<gml:upperCorner>45.5 0</gml:upperCorner></gml:Envelope></fes:BBOX></fes:And></fes:Filter>")
    response = wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate, filter=fes)
    assert response.status_code == 200, response.text
    assert ids_of(gml_features(response)) == [3, 4, 5, 6]
    assert xml(response).get("numberMatched") == "4"


def test_fes11_filter_and_cql_filter(client, points):
    fes = ('<ogc:Filter xmlns:ogc="http://www.opengis.net/ogc"><ogc:Or><ogc:PropertyIsEqualTo>'
           "<ogc:PropertyName>category</ogc:PropertyName><ogc:Literal>b</ogc:Literal>"
           '</ogc:PropertyIsEqualTo><ogc:PropertyIsLike wildCard="*" singleChar="." escapeChar="!">'
           "<ogc:PropertyName>name</ogc:PropertyName><ogc:Literal>point 1*</ogc:Literal>"
           "</ogc:PropertyIsLike></ogc:Or></ogc:Filter>")
    v11 = wfs(client, request="GetFeature", version="1.1.0", typename=points.alternate, filter=fes)
    assert ids_of(gml_features(v11, "3.1.1")) == [1, 2, 5, 8, 10]
    cql = wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate,
              cql_filter="value BETWEEN 3 AND 9 AND observed AFTER 2024-01-04T00:00:00Z")
    assert ids_of(gml_features(cql)) == [5, 6, 7]


@pytest.mark.parametrize(("params", "code", "locator"), [
    ({"filter": "<fes:Filter"}, "InvalidParameterValue", "filter"),
    ({"filter": f"<fes:Filter {FES20}><fes:PropertyIsEqualTo><fes:ValueReference>nope"
      "</fes:ValueReference><fes:Literal>1</fes:Literal></fes:PropertyIsEqualTo></fes:Filter>"},
     "InvalidParameterValue", "filter"),
    ({"cql_filter": "value >>> 3"}, "InvalidParameterValue", "filter"),
    ({"outputformat": "image/png"}, "InvalidParameterValue", "outputFormat"),
    ({"sortby": "nope D"}, "InvalidParameterValue", "sortBy"),
    ({"srsname": "EPSG:999999"}, "InvalidParameterValue", "srsName"),
    ({"count": "many"}, "InvalidParameterValue", "count"),
])
def test_bad_requests_get_exception_reports(client, points, params, code, locator):
    response = wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate, **params)
    assert response.status_code == 400
    assert ows_exception(response) == (code, locator)


def test_unknown_typename_missing_typename_and_transactions(client, points):
    unknown = wfs(client, request="GetFeature", version="2.0.0", typenames="geonode:missing")
    assert ows_exception(unknown) == ("InvalidParameterValue", "typeName")
    missing = wfs(client, request="GetFeature", version="2.0.0")
    assert ows_exception(missing)[0] == "MissingParameterValue"
    transaction = wfs(client, request="Transaction", version="2.0.0")
    assert transaction.status_code == 501
    assert ows_exception(transaction)[0] == "OperationNotSupported"


# -- permissions ----------------------------------------------------------------------------


def test_get_feature_needs_the_download_permission(client, db, settings, owner, tmp_path):
    view_only = {"users": {"AnonymousUser": ["view_resourcebase"]}, "groups": {}}
    resource = publish_file(db, settings, owner, write_points(tmp_path), permissions=view_only)
    caps = xml(wfs(client, request="GetCapabilities", version="2.0.0"))
    assert [n.text for n in caps.iterfind(".//wfs:FeatureType/wfs:Name", NS)] == [resource.alternate]
    assert wfs(client, request="DescribeFeatureType", version="2.0.0",
               typenames=resource.alternate).status_code == 200
    denied = wfs(client, request="GetFeature", version="2.0.0", typenames=resource.alternate)
    assert denied.status_code == 403
    allowed = wfs(client, basic(owner.username, PASSWORD), request="GetFeature", version="2.0.0",
                  typenames=resource.alternate)
    assert len(gml_features(allowed)) == 10


def test_private_dataset_is_an_unknown_type_for_others(client, db, settings, points):
    make_private(db, settings, points)
    response = wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate)
    assert ows_exception(response) == ("InvalidParameterValue", "typeName")


# -- output formats (the catalogue's download links) ----------------------------------------


@pytest.mark.parametrize(("fmt", "suffix"), [
    ("application/json", ".geojson"),
    ("text/xml; subtype=gml/2.1.2", ".gml"),
    ("text/xml; subtype=gml/3.1.1", ".gml"),
    ("csv", ".csv"),
    ("SHAPE-ZIP", ".zip"),
    ("application/vnd.google-earth.kml+xml", ".kml"),
])
def test_download_link_formats_round_trip(client, tmp_path, polygons, fmt, suffix):
    response = wfs(client, version="1.0.0", request="GetFeature", typename=polygons.alternate,
                   outputformat=fmt, srs="EPSG:4326")
    options = {"GEOM_POSSIBLE_NAMES": "geom", "KEEP_GEOM_COLUMNS": "NO"} if suffix == ".csv" else {}
    read = read_answer(tmp_path, response, suffix, **options)
    names = read["Name" if suffix == ".kml" else "name"]  # KML: the placemark's name
    assert sorted(names) == sorted(p["name"] for p in POLYGONS)
    by_name = dict(zip(names, read["geometries"], strict=True))
    for poly in POLYGONS:
        assert np.allclose(by_name[poly["name"]].bounds, poly["bounds"], atol=1e-6), fmt
    if suffix != ".kml":
        assert sorted(int(r) for r in read["rank"]) == [1, 2, 3, 4, 5]


def test_geojson_carries_counts(client, points):
    response = wfs(client, request="GetFeature", version="2.0.0", typenames=points.alternate,
                   outputformat="application/json", count=4, startindex=2)
    body = response.json()
    assert body["numberMatched"] == 10 and body["totalFeatures"] == 10
    assert body["numberReturned"] == 4 and len(body["features"]) == 4
    first = body["features"][0]
    assert first["properties"]["name"] == "point 3"
    assert first["geometry"]["coordinates"] == [POINTS[2]["lon"], POINTS[2]["lat"]]
    assert [link["rel"] for link in body["links"]] == ["next", "previous"]


def test_excel_output(client, tmp_path, points):
    response = wfs(client, request="GetFeature", version="1.0.0", typename=points.alternate,
                   outputformat="excel")
    assert 'filename="points.xlsx"' in response.headers["content-disposition"]
    sheet = load_workbook(BytesIO(response.content), read_only=True).active
    rows = list(sheet.iter_rows(values_only=True))
    header = rows[0]
    assert header[0] == "FID" and header[-1] == "geom"
    names = [r[header.index("name")] for r in rows[1:]]
    assert names == [p["name"] for p in POINTS]
    assert rows[1][-1] == f"POINT ({POINTS[0]['lon']:g} {POINTS[0]['lat']:g})"


def test_post_xml_get_feature(client, points):
    body = (f'<wfs:GetFeature service="WFS" version="2.0.0" count="5" '
            f'xmlns:wfs="http://www.opengis.net/wfs/2.0" {FES20}>'
            f'<wfs:Query typeNames="{points.alternate}"><fes:Filter><fes:PropertyIsEqualTo>'
            "<fes:ValueReference>category</fes:ValueReference><fes:Literal>a</fes:Literal>"
            "</fes:PropertyIsEqualTo></fes:Filter><fes:SortBy><fes:SortProperty>"
            "<fes:ValueReference>id</fes:ValueReference><fes:SortOrder>DESC</fes:SortOrder>"
            "</fes:SortProperty></fes:SortBy></wfs:Query></wfs:GetFeature>")
    response = client.post("/ows", content=body, headers={"Content-Type": "text/xml"})
    assert response.status_code == 200, response.text
    assert ids_of(gml_features(response)) == [10, 7, 4, 1]
