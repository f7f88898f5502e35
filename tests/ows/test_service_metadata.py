"""What the OGC services say about themselves: the ``OWS_*`` settings in the capabilities of
WMS, WFS, WCS, WMTS and CSW (read back with OWSLib where it parses the document, else lxml),
and ``WMS_ADVERTISED_CRS`` in WMS and WFS capabilities."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from lxml import etree
from owslib.wcs import WebCoverageService
from owslib.wfs import WebFeatureService
from owslib.wms import WebMapService
from owslib.wmts import WebMapTileService
from pydantic import ValidationError
from pyproj import Transformer

from cartotheca.settings import Settings
from tests.ows.conftest import wms
from tests.support.pixels import pixels

RED = (255, 0, 0, 255)
IDENTITY = {
    "OWS_SERVICE_TITLE": "Regional Atlas",
    "OWS_SERVICE_ABSTRACT": "Maps and data of the regional atlas",
    "OWS_SERVICE_KEYWORDS": ["atlas", "region"],
    "OWS_SERVICE_FEES": "free of charge",
    "OWS_SERVICE_ACCESS_CONSTRAINTS": "CC-BY 4.0",
    "OWS_CONTACT_ORGANIZATION": "Atlas Office",
    "OWS_CONTACT_NAME": "Ada Lovelace",
    "OWS_CONTACT_POSITION": "Curator",
    "OWS_CONTACT_EMAIL": "atlas@example.org",
    "OWS_CONTACT_PHONE": "+44 20 7946 0000",
    "OWS_CONTACT_FAX": "+44 20 7946 0001",
    "OWS_CONTACT_ADDRESS": "1 Map Street",
    "OWS_CONTACT_CITY": "London",
    "OWS_CONTACT_STATE_OR_PROVINCE": "Greater London",
    "OWS_CONTACT_POSTAL_CODE": "N1 9GU",
    "OWS_CONTACT_COUNTRY": "United Kingdom",
    "OWS_CONTACT_URL": "https://atlas.example.org/",
}
OWS11 = "{http://www.opengis.net/ows/1.1}"
OWS20 = "{http://www.opengis.net/ows/2.0}"
OWS10 = "{http://www.opengis.net/ows}"
WFS10 = "{http://www.opengis.net/wfs}"
WMS = "{http://www.opengis.net/wms}"


@pytest.fixture
def atlas(make_app):
    with TestClient(make_app(**IDENTITY)) as client:
        yield client


def _get(client, **params) -> bytes:
    response = client.get("/ows", params={k.upper(): v for k, v in params.items()})
    assert response.status_code == 200, response.text
    return response.content


@pytest.mark.parametrize("version", ["1.1.1", "1.3.0"])
def test_wms_capabilities_carry_the_settings(atlas, polygons, version):
    xml = _get(atlas, service="WMS", request="GetCapabilities", version=version)
    service = WebMapService("http://testserver/ows", version=version, xml=xml)
    ident, contact = service.identification, service.provider.contact
    assert ident.title == "Regional Atlas" and ident.abstract == "Maps and data of the regional atlas"
    assert ident.keywords == ["atlas", "region"]
    assert ident.fees == "free of charge" and ident.accessconstraints == "CC-BY 4.0"
    assert (contact.name, contact.organization, contact.position) == (
        "Ada Lovelace", "Atlas Office", "Curator")
    assert (contact.address, contact.city, contact.region, contact.postcode, contact.country) == (
        "1 Map Street", "London", "Greater London", "N1 9GU", "United Kingdom")
    root = etree.fromstring(xml)
    ns = WMS if version == "1.3.0" else ""
    info = root.find(f"{ns}Service/{ns}ContactInformation")
    assert info.findtext(f"{ns}ContactVoiceTelephone") == "+44 20 7946 0000"
    assert info.findtext(f"{ns}ContactFacsimileTelephone") == "+44 20 7946 0001"
    # (OWSLib 0.35 looks the 1.3.0 e-mail up without the WMS namespace, so it is read here)
    assert info.findtext(f"{ns}ContactElectronicMailAddress") == "atlas@example.org"
    # the root layer carries the service title, as GeoServer's does
    assert root.findtext(f"{ns}Capability/{ns}Layer/{ns}Title") == "Regional Atlas"


def test_wfs_capabilities_carry_the_settings(atlas, points):
    for version in ("1.1.0", "2.0.0"):
        xml = _get(atlas, service="WFS", request="GetCapabilities", version=version)
        service = WebFeatureService("http://testserver/ows", version=version, xml=xml)
        ident, provider = service.identification, service.provider
        assert ident.title == "Regional Atlas" and ident.abstract == "Maps and data of the regional atlas"
        assert ident.keywords == ["atlas", "region"], version
        assert ident.fees == "free of charge" and ident.accessconstraints == "CC-BY 4.0"
        assert provider.name == "Atlas Office" and provider.url == "https://atlas.example.org/"
        assert (provider.contact.name, provider.contact.position, provider.contact.email) == (
            "Ada Lovelace", "Curator", "atlas@example.org")
        assert (provider.contact.city, provider.contact.country, provider.contact.phone) == (
            "London", "United Kingdom", "+44 20 7946 0000")
    root = etree.fromstring(_get(atlas, service="WFS", request="GetCapabilities", version="1.0.0"))
    service = root.find(f"{WFS10}Service")
    assert service.findtext(f"{WFS10}Title") == "Regional Atlas"
    assert service.findtext(f"{WFS10}Keywords") == "atlas, region"
    assert service.findtext(f"{WFS10}Fees") == "free of charge"
    assert service.findtext(f"{WFS10}AccessConstraints") == "CC-BY 4.0"


def test_wcs_and_wmts_capabilities_carry_the_settings(atlas, raster):
    xml = _get(atlas, service="WCS", request="GetCapabilities", version="2.0.1")
    wcs = WebCoverageService("http://testserver/ows", version="2.0.1", xml=xml)
    assert wcs.identification.title == "Regional Atlas"
    assert wcs.identification.keywords == ["atlas", "region"]
    root = etree.fromstring(xml)
    provider = root.find(f"{OWS20}ServiceProvider")
    assert provider.findtext(f"{OWS20}ProviderName") == "Atlas Office"
    contact = provider.find(f"{OWS20}ServiceContact")
    assert contact.findtext(f"{OWS20}IndividualName") == "Ada Lovelace"
    assert contact.findtext(f"{OWS20}ContactInfo/{OWS20}Address/{OWS20}ElectronicMailAddress") == \
        "atlas@example.org"
    assert root.findtext(f"{OWS20}ServiceIdentification/{OWS20}Fees") == "free of charge"

    xml = _get(atlas, service="WMTS", request="GetCapabilities", version="1.0.0")
    wmts = WebMapTileService("http://testserver/ows", version="1.0.0", xml=xml)
    assert wmts.identification.title == "Regional Atlas"
    assert wmts.identification.abstract == "Maps and data of the regional atlas"
    assert wmts.identification.keywords == ["atlas", "region"]
    assert wmts.identification.accessconstraints == "CC-BY 4.0"
    assert wmts.provider.name == "Atlas Office" and wmts.provider.contact.name == "Ada Lovelace"
    assert wmts.provider.contact.email == "atlas@example.org"


def test_csw_capabilities_carry_the_settings(atlas):
    for version in ("2.0.2", "3.0.0"):
        response = atlas.get("/catalogue/csw", params={"service": "CSW", "request": "GetCapabilities",
                                                       "version": version, "acceptversions": version})
        assert response.status_code == 200, response.text
        root = etree.fromstring(response.content)
        ows = OWS20 if version == "3.0.0" else OWS10
        ident = root.find(f"{ows}ServiceIdentification")
        assert ident.findtext(f"{ows}Title") == "Regional Atlas", version
        assert ident.findtext(f"{ows}Abstract") == "Maps and data of the regional atlas"
        assert [k.text for k in ident.iterfind(f"{ows}Keywords/{ows}Keyword")] == ["atlas", "region"]
        assert ident.findtext(f"{ows}AccessConstraints") == "CC-BY 4.0"
        provider = root.find(f"{ows}ServiceProvider")
        assert provider.findtext(f"{ows}ProviderName") == "Atlas Office"
        contact = provider.find(f"{ows}ServiceContact")
        assert contact.findtext(f"{ows}IndividualName") == "Ada Lovelace"
        assert contact.findtext(f"{ows}PositionName") == "Curator"
        assert contact.findtext(f".//{ows}City") == "London"
        assert contact.findtext(f".//{ows}ElectronicMailAddress") == "atlas@example.org"


def test_defaults_keep_each_services_own_identity(client, settings, polygons):
    xml = _get(client, service="WMS", request="GetCapabilities", version="1.3.0")
    service = WebMapService("http://testserver/ows", version="1.3.0", xml=xml)
    assert service.identification.title == "Cartotheca WMS"
    assert service.identification.keywords == ["WMS", "Cartotheca", "GeoNode"]
    assert service.identification.fees == "NONE"
    assert service.provider.contact.name == settings.ADMIN_USER
    assert etree.fromstring(xml).findtext(f"{WMS}Service/{WMS}ContactInformation/"
                                          f"{WMS}ContactElectronicMailAddress") == settings.ADMIN_EMAIL
    wfs = WebFeatureService("http://testserver/ows", version="2.0.0",
                            xml=_get(client, service="WFS", request="GetCapabilities", version="2.0.0"))
    assert wfs.identification.title == "Cartotheca Web Feature Service"
    assert wfs.provider.name == "Cartotheca" and wfs.provider.url == settings.SITEURL


# -- WMS_ADVERTISED_CRS -------------------------------------------------------------------------

def test_advertised_crs_are_listed_with_layer_boxes_and_drawn(make_app, polygons, points):
    # EPSG:2154 (RGF93 / Lambert-93, France) is x/y; EPSG:3035 (LAEA Europe) is northing first
    advertised = ["EPSG:4326", "EPSG:3857", "EPSG:2154", "EPSG:3035"]
    with TestClient(make_app(WMS_ADVERTISED_CRS=advertised)) as client:
        root = etree.fromstring(_get(client, service="WMS", request="GetCapabilities", version="1.3.0"))
        top = root.find(f"{WMS}Capability/{WMS}Layer")
        assert [c.text for c in top.findall(f"{WMS}CRS")] == [
            "EPSG:4326", "EPSG:3857", "EPSG:2154", "EPSG:3035", "CRS:84"]
        layer = next(el for el in top.iter(f"{WMS}Layer") if el.findtext(f"{WMS}Name") == polygons.alternate)
        boxes = {b.get("CRS"): [float(b.get(k)) for k in ("minx", "miny", "maxx", "maxy")]
                 for b in layer.findall(f"{WMS}BoundingBox")}
        laea = Transformer.from_crs("EPSG:4326", "EPSG:3035", always_xy=True)
        east, north = laea.transform_bounds(0, 40, 20, 60, densify_pts=21)[:2]
        assert boxes["EPSG:3035"][:2] == pytest.approx([north, east], rel=1e-6)  # 1.3.0: northing first
        # Lambert-93 is defined over France only: the box is the part of the layer there
        lambert = Transformer.from_crs("EPSG:4326", "EPSG:2154", always_xy=True)
        area = Transformer.from_crs("EPSG:4326", "EPSG:2154").target_crs.area_of_use
        expected = lambert.transform_bounds(max(0, area.west), max(40, area.south), min(20, area.east),
                                            min(60, area.north), densify_pts=21)
        assert boxes["EPSG:2154"] == pytest.approx(list(expected), rel=1e-6)

        old = etree.fromstring(_get(client, service="WMS", request="GetCapabilities", version="1.1.1"))
        assert [s.text for s in old.find("Capability/Layer").findall("SRS")] == [
            "EPSG:4326", "EPSG:3857", "EPSG:2154", "EPSG:3035"]
        old_layer = next(el for el in old.iter("Layer") if el.findtext("Name") == polygons.alternate)
        old_box = next(b for b in old_layer.findall("BoundingBox") if b.get("SRS") == "EPSG:3035")
        assert float(old_box.get("minx")) == pytest.approx(east, rel=1e-6)  # 1.1.1: x/y order

        # WFS offers the same list as other CRSs
        wfs = etree.fromstring(_get(client, service="WFS", request="GetCapabilities", version="2.0.0"))
        feature_type = next(ft for ft in wfs.iter("{http://www.opengis.net/wfs/2.0}FeatureType")
                            if ft.findtext("{http://www.opengis.net/wfs/2.0}Name") == points.alternate)
        other = [el.text for el in feature_type.iter("{http://www.opengis.net/wfs/2.0}OtherCRS")]
        assert other == [f"urn:ogc:def:crs:EPSG::{code}" for code in (3857, 2154, 3035)]
        # ... and GetFeature answers in it: point i is at (-10 + 2i, 40 + i), northing first in 3035
        features = etree.fromstring(_get(client, service="WFS", request="GetFeature", version="2.0.0",
                                         typeNames=points.alternate, srsName=other[-1]))
        positions = sorted(tuple(float(v) for v in pos.text.split())
                           for pos in features.iter("{http://www.opengis.net/gml/3.2}pos"))
        expected = sorted(laea.transform(-10 + 2 * i, 40 + i)[::-1] for i in range(10))
        assert [v for pos in positions for v in pos] == pytest.approx([v for pos in expected for v in pos],
                                                                      rel=1e-9)

        # GetMap in an advertised CRS draws the layer where it is: (5, 55) is in the red square
        x, y = laea.transform(5, 55)
        image = wms(client, request="GetMap", version="1.3.0", layers=polygons.alternate, crs="EPSG:3035",
                    bbox=f"{y - 50000},{x - 50000},{y + 50000},{x + 50000}", width=40, height=40,
                    format="image/png", styles="")
        assert image.headers["content-type"] == "image/png" and tuple(pixels(image.content)[20, 20]) == RED


@pytest.mark.parametrize("value", [["EPSG:4326", "4326"], ["EPSG:999999"], ["CRS:84"], []])
def test_bad_advertised_crs_is_a_settings_error(value):
    with pytest.raises(ValidationError, match="WMS_ADVERTISED_CRS"):
        Settings(WMS_ADVERTISED_CRS=value)
