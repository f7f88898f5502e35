"""OWSLib's WebMapService (1.1.1 and 1.3.0) against a live ``cartotheca serve``."""

from __future__ import annotations

import json

import httpx
import pytest
from lxml import etree
from owslib.wms import WebMapService

import cartotheca  # noqa: F401  (PROJ_DATA before mapnik)
from tests.factories import make_user
from tests.geodata.fixtures import polygons_sld, publish_file, write_polygons
from tests.support.pixels import pixels as rgba_pixels


@pytest.fixture
def polygons(db, settings, tmp_path):
    owner = make_user(db)
    return publish_file(db, settings, owner, write_polygons(tmp_path), title="Polygons", sld=polygons_sld())


@pytest.mark.parametrize("version", ["1.1.1", "1.3.0"])
def test_owslib_reads_capabilities_and_maps(live_server, polygons, version):
    service = WebMapService(f"{live_server.url}ows", version=version, timeout=60)
    assert service.identification.type in ("WMS", "OGC:WMS")
    layer = service[polygons.alternate]
    assert layer.title == "Polygons" and layer.queryable == 1
    assert layer.boundingBoxWGS84 == pytest.approx((0, 40, 20, 60))
    assert {"EPSG:4326", "EPSG:3857"} <= set(layer.crsOptions)
    assert layer.styles and all(style.get("legend", "").startswith(live_server.url)
                                for style in layer.styles.values())
    operations = [op.name for op in service.operations]
    assert {"GetMap", "GetFeatureInfo"} <= set(operations)
    # OWSLib takes lon/lat and swaps the box itself for 1.3.0 EPSG:4326
    image = service.getmap(layers=[polygons.alternate], styles=[""], srs="EPSG:4326", bbox=(0, 40, 40, 60),
                           size=(200, 100), format="image/png", transparent=True)
    pixels = rgba_pixels(image.read())
    assert tuple(pixels[25, 25]) == (255, 0, 0, 255)
    assert tuple(pixels[25, 75]) == (0, 255, 0, 255)
    assert pixels[50, 150, 3] == 0
    info = service.getfeatureinfo(layers=[polygons.alternate], srs="EPSG:4326", bbox=(0, 40, 40, 60),
                                  size=(200, 100), format="image/png", query_layers=[polygons.alternate],
                                  info_format="application/json", xy=(75, 75), styles=[""])
    features = json.loads(info.read())["features"]
    assert [f["properties"]["name"] for f in features] == ["south-east"]


def test_capabilities_without_version_are_1_3_0_and_owslib_reads_them(live_server, polygons):
    """No VERSION in GetCapabilities: the server answers its highest version, 1.3.0."""
    response = httpx.get(f"{live_server.url}ows", params={"SERVICE": "WMS", "REQUEST": "GetCapabilities"},
                         timeout=60)
    assert response.status_code == 200, response.text
    root = etree.fromstring(response.content)
    assert root.tag == "{http://www.opengis.net/wms}WMS_Capabilities" and root.get("version") == "1.3.0"
    service = WebMapService(f"{live_server.url}ows", version="1.3.0", xml=response.content)
    assert polygons.alternate in service.contents
    assert {"EPSG:4326", "EPSG:3857"} <= set(service[polygons.alternate].crsOptions)
