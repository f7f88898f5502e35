"""Which service, event type and resources a request is recorded under."""

from __future__ import annotations

import pytest

from cartotheca.monitoring.classify import classify

WS = "geonode"


def c(method: str, path: str, query: str = "", body: bytes | None = None):
    return classify(method, path, query, body, WS)


@pytest.mark.parametrize(("query", "event_type", "layers"), [
    ("service=WMS&request=GetMap&layers=geonode:roads,rivers", "OWS:WMS",
     ["geonode:roads", "geonode:rivers"]),
    ("SERVICE=wfs&REQUEST=GetFeature&TYPENAMES=geonode:roads", "OWS:WFS", ["geonode:roads"]),
    ("service=WFS&version=1.0.0&request=GetFeature&typename=roads", "OWS:WFS", ["geonode:roads"]),
    ("service=WCS&request=GetCoverage&coverageId=geonode__dem", "OWS:WCS", ["geonode:dem"]),
    ("service=WMTS&request=GetTile&layer=geonode:roads", "OWS:WMTS", ["geonode:roads"]),
    ("request=GetMap&layers=roads", "OWS:WMS", ["geonode:roads"]),  # service implied by the operation
    ("service=WMS&request=GetCapabilities", "OWS:WMS", []),
])
def test_ows_requests_by_service_parameter(query, event_type, layers):
    found = c("GET", "/ows", query)
    assert (found.service_type, found.event_type, found.layers) == ("mapserver", event_type, layers)


def test_data_requests_are_downloads_too():
    assert c("GET", "/ows", "service=WFS&request=GetFeature&typeNames=a").secondary_event_type == "download"
    assert c("GET", "/ows", "service=WCS&request=GetCoverage&coverageId=a").secondary_event_type == "download"
    assert c("GET", "/ows", "service=WMS&request=GetMap&layers=a").secondary_event_type is None


def test_geoserver_paths_name_the_service():
    found = c("GET", "/geoserver/wfs", "request=DescribeFeatureType&typeName=geonode:roads")
    assert (found.event_type, found.layers) == ("OWS:WFS", ["geonode:roads"])
    assert c("GET", "/geoserver/ows", "service=WMS&request=GetCapabilities").event_type == "OWS:WMS"
    # Not an OWS service we know: the map server's own event type.
    assert c("GET", "/geoserver/ows", "service=CSW").event_type == "geoserver"


def test_xml_post_bodies_are_sniffed():
    body = (b'<?xml version="1.0"?><wfs:GetFeature service="WFS" version="2.0.0" '
            b'xmlns:wfs="http://www.opengis.net/wfs/2.0"><wfs:Query typeNames="geonode:roads"/>'
            b"</wfs:GetFeature>")
    found = c("POST", "/ows", "", body)
    assert (found.event_type, found.secondary_event_type, found.layers) == (
        "OWS:WFS", "download", ["geonode:roads"])


@pytest.mark.parametrize(("method", "path", "event_type", "ids", "url"), [
    ("GET", "/api/v2/resources", "view", [], "/api/v2/resources"),
    ("GET", "/api/v2/datasets/", "view", [], "/api/v2/datasets"),
    ("GET", "/api/v2/resources/12", "view", [12], None),
    ("GET", "/api/v2/datasets/12/", "view", [12], None),
    ("GET", "/api/v2/resources/12.json", "view", [12], None),
    ("GET", "/api/v2/resources/12/extra_metadata", "view_metadata", [12], None),
    ("GET", "/api/v2/resources/12/permissions", None, [12], None),
    ("PATCH", "/api/v2/resources/12", "change", [12], None),
    ("PUT", "/api/v2/resources/12/permissions", "change", [12], None),
    ("PUT", "/api/v2/resources/12/update", "change_metadata", [12], None),
    ("PUT", "/api/v2/datasets/12/metadata", "change_metadata", [12], None),
    ("PUT", "/api/v2/resources/12/copy", "create", [12], None),
    ("DELETE", "/api/v2/resources/12/delete", "remove", [12], None),
    ("DELETE", "/api/v2/documents/12", "remove", [12], None),
    ("POST", "/api/v2/resources/create/map", "create", [], None),
    ("POST", "/api/v2/documents", "create", [], None),
    ("POST", "/api/v2/uploads/upload", "upload", [], None),
    ("POST", "/api/v2/users", "create", [], None),
    ("GET", "/api/v2/users/3", None, [], None),
    ("GET", "/documents/7/download", "download", [7], None),
])
def test_catalogue_requests(method, path, event_type, ids, url):
    found = c(method, path)
    assert (found.service_type, found.event_type, found.resource_ids, found.url) == (
        "core", event_type, ids, url)


def test_downloads_tiles_and_other_paths():
    download = c("GET", "/datasets/geonode:roads/dataset_download")
    assert (download.event_type, download.layers) == ("download", ["geonode:roads"])
    tile = c("GET", "/tiles/geonode:roads/3/4/2.png")
    assert (tile.service_type, tile.event_type, tile.layers) == ("mapserver", "OWS:TMS", ["geonode:roads"])
    other = c("GET", "/o/token")
    assert (other.service_type, other.event_type, other.layers, other.resource_ids) == ("core", None, [], [])
