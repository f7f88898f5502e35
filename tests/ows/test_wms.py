"""WMS 1.1.1 / 1.3.0 against datasets published through the real ingest: capabilities read back,
maps checked by their pixels, feature info by the features it names."""

from __future__ import annotations

import mapnik
import numpy as np
import pytest
from lxml import etree
from pyproj import Transformer
from sqlalchemy import select, update

from cartotheca.db.models import Dataset, DatasetAttribute, Resource
from cartotheca.ows import render, thumbnails
from cartotheca.styling import sld as sldlib
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import polygons_sld, publish_file, raster_pixels, write_polygons, write_raster
from tests.ows.conftest import RED_SQUARES_SLD, exception_code, make_private, wms
from tests.support.pixels import pixels

WMS = "{http://www.opengis.net/wms}"
XLINK = "{http://www.w3.org/1999/xlink}href"
RED, GREEN, BLUE, YELLOW, MAGENTA = (255, 0, 0, 255), (0, 255, 0, 255), (0, 0, 255, 255), \
    (255, 255, 0, 255), (255, 0, 255, 255)
# The polygons' map: lon 0..40, lat 40..60 on 200 x 100 px (the east half is empty)
POLYGON_MAP = {"WIDTH": "200", "HEIGHT": "100", "FORMAT": "image/png", "TRANSPARENT": "TRUE", "STYLES": ""}


def _quarters(image: np.ndarray) -> list[tuple]:
    """North-west, north-east, centre square, south-east, and the empty east half."""
    return [tuple(image[25, 25]), tuple(image[25, 75]), tuple(image[75, 25]), tuple(image[75, 75]),
            tuple(image[50, 150])]


EXPECTED_QUARTERS = [RED, GREEN, MAGENTA, YELLOW, (0, 0, 0, 0)]


# -- GetCapabilities ----------------------------------------------------------------------------

def test_capabilities_without_version_are_1_3_0_and_describe_layers(client, polygons, points):
    response = wms(client, request="GetCapabilities")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/xml")
    root = etree.fromstring(response.content)
    assert root.tag == f"{WMS}WMS_Capabilities" and root.get("version") == "1.3.0"
    get_map = root.find(f"{WMS}Capability/{WMS}Request/{WMS}GetMap")
    assert get_map.find(f".//{WMS}OnlineResource").get(XLINK) == "http://testserver/ows?"
    map_formats = {f.text for f in get_map.findall(f"{WMS}Format")}
    assert {"image/png", "image/jpeg", "image/png; mode=8bit"} <= map_formats  # GeoServer's PNG8 name
    assert "image/png8" not in map_formats
    info_op = root.find(f"{WMS}Capability/{WMS}Request/{WMS}GetFeatureInfo")
    info_formats = {f.text for f in info_op.findall(f"{WMS}Format")}
    assert {"application/vnd.ogc.gml", "application/json", "text/html", "text/plain"} <= info_formats
    layers = {layer.findtext(f"{WMS}Name"): layer for layer in root.iter(f"{WMS}Layer")
              if layer.find(f"{WMS}Name") is not None}
    assert set(layers) == {polygons.alternate, points.alternate}
    layer = layers[polygons.alternate]
    assert layer.get("queryable") == "1" and layer.findtext(f"{WMS}Title") == "Polygons"
    boxes = {b.get("CRS"): [float(b.get(k)) for k in ("minx", "miny", "maxx", "maxy")]
             for b in layer.findall(f"{WMS}BoundingBox")}
    assert boxes["EPSG:4326"] == pytest.approx([40, 0, 60, 20])  # latitude first in 1.3.0
    assert boxes["CRS:84"] == pytest.approx([0, 40, 20, 60])
    assert boxes["EPSG:3857"][0] == pytest.approx(0) and boxes["EPSG:3857"][3] > 8e6
    geographic = layer.find(f"{WMS}EX_GeographicBoundingBox")
    assert float(geographic.findtext(f"{WMS}northBoundLatitude")) == pytest.approx(60)
    crs = {c.text for c in root.find(f"{WMS}Capability/{WMS}Layer").findall(f"{WMS}CRS")}
    assert {"EPSG:4326", "EPSG:3857", "CRS:84"} <= crs
    style = layer.find(f"{WMS}Style")
    legend = style.find(f"{WMS}LegendURL/{WMS}OnlineResource").get(XLINK)
    assert legend.startswith("http://testserver/ows?") and "REQUEST=GetLegendGraphic" in legend
    # the advertised legend URL answers with a PNG
    assert client.get(legend.removeprefix("http://testserver")).content[:8] == b"\x89PNG\r\n\x1a\n"
    dimension = layers[points.alternate].find(f"{WMS}Dimension")
    values = dimension.text.split(",")
    assert dimension.get("name") == "time" and len(values) == 10
    assert values[0].startswith("2024-01-01T00:00:00") and dimension.get("default") == values[-1]


def test_capabilities_1_1_1(client, polygons):
    response = wms(client, request="GetCapabilities", version="1.1.1")
    assert response.headers["content-type"].startswith("application/vnd.ogc.wms_xml")
    root = etree.fromstring(response.content)
    assert root.tag == "WMT_MS_Capabilities" and root.get("version") == "1.1.1"
    layer = next(el for el in root.iter("Layer") if el.findtext("Name") == polygons.alternate)
    latlon = layer.find("LatLonBoundingBox")
    assert [float(latlon.get(k)) for k in ("minx", "miny", "maxx", "maxy")] == pytest.approx([0, 40, 20, 60])
    box = next(b for b in layer.findall("BoundingBox") if b.get("SRS") == "EPSG:4326")
    assert float(box.get("minx")) == pytest.approx(0)  # x/y order in 1.1.1
    assert root.find("Capability/Request/GetLegendGraphic") is not None


def test_capabilities_list_only_what_the_requester_may_view(client, db, settings, polygons, owner):
    make_private(db, settings, polygons)
    anonymous = etree.fromstring(wms(client, request="GetCapabilities").content)
    assert polygons.alternate not in [el.text for el in anonymous.iter(f"{WMS}Name")]
    mine = etree.fromstring(wms(client, basic(owner.username, PASSWORD), request="GetCapabilities").content)
    assert polygons.alternate in [el.text for el in mine.iter(f"{WMS}Name")]


def test_capabilities_cost_the_same_statements_for_more_layers(client, db, settings, owner, tmp_path,
                                                               count_statements, polygons):
    with count_statements() as one:
        wms(client, request="GetCapabilities")
    for index in range(2):
        publish_file(db, settings, owner, write_polygons(tmp_path / str(index)), title=f"More {index}")
    with count_statements() as three:
        root = etree.fromstring(wms(client, request="GetCapabilities").content)
    assert len([el for el in root.iter(f"{WMS}Layer") if el.find(f"{WMS}Name") is not None]) == 3
    assert three.value == one.value


# -- GetMap -------------------------------------------------------------------------------------

def test_getmap_1_3_0_epsg_4326_takes_latitude_first(client, polygons):
    response = wms(client, request="GetMap", version="1.3.0", layers=polygons.alternate, crs="EPSG:4326",
                   bbox="40,0,60,40", **POLYGON_MAP)
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
    assert _quarters(pixels(response.content)) == EXPECTED_QUARTERS


def test_getmap_1_1_1_and_crs84_take_longitude_first(client, polygons):
    old = wms(client, request="GetMap", version="1.1.1", layers=polygons.alternate, srs="EPSG:4326",
              bbox="0,40,40,60", **POLYGON_MAP)
    assert _quarters(pixels(old.content)) == EXPECTED_QUARTERS
    crs84 = wms(client, request="GetMap", version="1.3.0", layers=polygons.alternate, crs="CRS:84",
                bbox="0,40,40,60", **POLYGON_MAP)
    assert _quarters(pixels(crs84.content)) == EXPECTED_QUARTERS


def test_getmap_reprojects_to_web_mercator(client, polygons):
    to_merc = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    x0, y0 = to_merc.transform(0, 40)
    x1, y1 = to_merc.transform(20, 60)
    response = wms(client, request="GetMap", version="1.3.0", layers=polygons.alternate, crs="EPSG:3857",
                   bbox=f"{x0},{y0},{x1},{y1}", width=100, height=100, format="image/png", transparent="TRUE")
    image = pixels(response.content)

    def row(lat: float) -> int:
        return int((y1 - to_merc.transform(5, lat)[1]) / (y1 - y0) * 100)

    assert tuple(image[row(50.6), 25]) == RED and tuple(image[row(49.4), 25]) == BLUE
    # Mercator stretches the north: 50° lies at 55% of the height, so row 53 is still red,
    # where a plain lon/lat picture (50° half-way down) would show the southern blue square.
    assert row(50.0) == 55 and tuple(image[53, 25]) == RED


def test_getmap_other_epsg_codes(client, polygons):
    # ETRS89 / LAEA Europe (EPSG:3035): northing first in its definition, so 1.3.0 swaps the box
    to_laea = Transformer.from_crs("EPSG:4326", "EPSG:3035", always_xy=True)
    x, y = to_laea.transform(5, 55)  # inside the red north-west square
    bbox = (x - 50000, y - 50000, x + 50000, y + 50000)
    response = wms(client, request="GetMap", version="1.3.0", layers=polygons.alternate, crs="EPSG:3035",
                   bbox=f"{bbox[1]},{bbox[0]},{bbox[3]},{bbox[2]}", width=40, height=40, format="image/png")
    assert tuple(pixels(response.content)[20, 20]) == RED


def test_getmap_background_transparency_and_formats(client, polygons):
    base = dict(request="GetMap", version="1.1.1", layers=polygons.alternate, srs="EPSG:4326",
                bbox="0,40,40,60", width=200, height=100, styles="")
    opaque = pixels(wms(client, format="image/png", **base).content)
    assert tuple(opaque[50, 150]) == (255, 255, 255, 255)  # TRANSPARENT defaults to FALSE
    coloured = pixels(wms(client, format="image/png", transparent="FALSE", bgcolor="0x112233",
                          **base).content)
    assert tuple(coloured[50, 150]) == (0x11, 0x22, 0x33, 255) and tuple(coloured[25, 25]) == RED
    jpeg = wms(client, format="image/jpeg", transparent="TRUE", **base)
    assert jpeg.headers["content-type"] == "image/jpeg" and jpeg.content[:2] == b"\xff\xd8"
    red = pixels(jpeg.content)[25, 25]
    assert red[0] > 240 and red[1] < 20 and red[2] < 20
    for png8_name in ("image/png8", "image/png; mode=8bit", "image/png;mode=8bit", "png8"):
        png8 = wms(client, format=png8_name, transparent="TRUE", **base)
        assert png8.headers["content-type"] == "image/png; mode=8bit", png8_name
        assert b"PLTE" in png8.content[:200] and _quarters(pixels(png8.content)) == EXPECTED_QUARTERS
    pdf = wms(client, format="application/pdf", **base)
    assert pdf.headers["content-type"] == "application/pdf" and pdf.content.startswith(b"%PDF")


def test_getmap_several_layers_draw_in_order(client, polygons, points):
    base = dict(request="GetMap", version="1.1.1", srs="EPSG:4326", bbox="0,40,20,60", width=200, height=200,
                format="image/png", transparent="TRUE")
    # The latest observation (the default TIME) is point 9 at (8, 49), inside the blue square.
    col, row = 80, 110
    on_top = pixels(wms(client, layers=f"{polygons.alternate},{points.alternate}", styles=",",
                        **base).content)
    assert tuple(on_top[row, col]) == RED and tuple(on_top[row, col + 8]) == BLUE
    below = pixels(wms(client, layers=f"{points.alternate},{polygons.alternate}", **base).content)
    assert tuple(below[row, col]) == BLUE


def test_getmap_styles_by_name_and_sld_body(client, db, polygons):
    style_name = db.scalar(select(Dataset.name).where(Dataset.resource_id == polygons.id))
    named = wms(client, request="GetMap", version="1.1.1", layers=polygons.alternate, srs="EPSG:4326",
                bbox="0,40,40,60", **{**POLYGON_MAP, "STYLES": style_name})
    assert _quarters(pixels(named.content)) == EXPECTED_QUARTERS
    sld_body = (
        '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld">'
        f"<NamedLayer><Name>{polygons.alternate}</Name><UserStyle><FeatureTypeStyle><Rule>"
        '<PolygonSymbolizer><Fill><CssParameter name="fill">#00ffff</CssParameter></Fill>'
        "</PolygonSymbolizer></Rule></FeatureTypeStyle></UserStyle></NamedLayer></StyledLayerDescriptor>")
    cyan = pixels(wms(client, request="GetMap", version="1.1.1", layers=polygons.alternate, srs="EPSG:4326",
                      bbox="0,40,40,60", sld_body=sld_body, **POLYGON_MAP).content)
    assert _quarters(cyan)[:4] == [(0, 255, 255, 255)] * 4


def test_getmap_time_filters_features(client, points):
    # point i is at (-10 + 2i, 40 + i): on this 10 px/degree map, at column 20 + 20i, row 120 - 10i
    base = dict(request="GetMap", version="1.3.0", layers=points.alternate, crs="EPSG:4326",
                bbox="38,-12,52,10", width=220, height=140, format="image/png", transparent="TRUE")

    def drawn(**extra) -> list[int]:
        image = pixels(wms(client, **base, **extra).content)
        return [i for i in range(10) if tuple(image[120 - 10 * i, 20 + 20 * i]) == RED]

    assert drawn(time="2024-01-03") == [2]
    assert drawn(time="2024-01-03T00:00:00Z") == [2]
    assert drawn(time="2024-01-02/2024-01-04") == [1, 2, 3]
    assert drawn(time="2024-01-01,2024-01-10") == [0, 9]
    assert drawn(time="2024-01") == list(range(10))
    assert drawn() == [9]  # no TIME: the latest value, as advertised
    assert drawn(time="2023-06-01") == []


def test_getmap_raster(client, raster):
    response = wms(client, request="GetMap", version="1.1.1", layers=raster.alternate, srs="EPSG:4326",
                   bbox="0,40,16,52", width=64, height=48, format="image/png", styles="")
    image = pixels(response.content)
    assert np.abs(image[:, :, 0].astype(int) - raster_pixels()[0].astype(int)).max() <= 1
    assert (image[:, :, 0] == image[:, :, 2]).all() and (image[:, :, 3] == 255).all()
    to_merc = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    x0, y0 = to_merc.transform(0, 40)
    x1, y1 = to_merc.transform(16, 52)
    merc = pixels(wms(client, request="GetMap", version="1.3.0", layers=raster.alternate, crs="EPSG:3857",
                      bbox=f"{x0},{y0},{x1},{y1}", width=64, height=64, format="image/png").content)
    # dark north-west corner, bright south-east (the raster's own edge column may fall off
    # mapnik's warp, so look one pixel in)
    assert merc[0, 0, 0] < 10 and merc[62, 62, 0] > 150
    assert merc[:, :62, 3].min() == 255


def test_getmap_raster_colour_map_and_rgb(client, db, settings, owner, tmp_path, raster):
    sld_body = (
        '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld">'
        f"<NamedLayer><Name>{raster.alternate}</Name><UserStyle><FeatureTypeStyle><Rule><RasterSymbolizer>"
        '<ColorMap type="intervals"><ColorMapEntry color="#ff0000" quantity="50"/>'
        '<ColorMapEntry color="#00ff00" quantity="100"/><ColorMapEntry color="#0000ff" quantity="255"/>'
        "</ColorMap></RasterSymbolizer></Rule></FeatureTypeStyle></UserStyle></NamedLayer>"
        "</StyledLayerDescriptor>")
    image = pixels(wms(client, request="GetMap", version="1.1.1", layers=raster.alternate, srs="EPSG:4326",
                       bbox="0,40,16,52", width=64, height=48, format="image/png", transparent="TRUE",
                       sld_body=sld_body).content)
    # pixel (row, col) holds (row + 2 col) % 251: 0 → red, 60 → green, 120 → blue
    assert [tuple(image[0, col]) for col in (0, 30, 60)] == [RED, GREEN, BLUE]
    rgb = publish_file(db, settings, owner, write_raster(tmp_path / "rgb", "rgb", bands=3), title="RGB")
    image = pixels(wms(client, request="GetMap", version="1.1.1", layers=rgb.alternate, srs="EPSG:4326",
                       bbox="0,40,16,52", width=64, height=48, format="image/png").content)
    assert (image[:, :, :3] == np.moveaxis(raster_pixels(bands=3), 0, -1)).all()


GETMAP_ERRORS = [
    ({"layers": "geonode:nothing_here"}, "LayerNotDefined"),
    ({"styles": "no_such_style"}, "StyleNotDefined"),
    ({"crs": "EPSG:999999"}, "InvalidCRS"),
    ({"crs": "AUTO:42001,9001,0,45"}, "InvalidCRS"),
    ({"version": "1.1.1", "srs": "EPSG:999999", "crs": None}, "InvalidSRS"),
    ({"format": "image/gif"}, "InvalidFormat"),
    ({"time": "yesterday"}, "InvalidDimensionValue"),
    ({"time": ""}, "MissingDimensionValue"),
    ({"bbox": None}, "MissingParameterValue"),
    ({"bbox": "1,2,3"}, "InvalidParameterValue"),
    ({"bbox": "10,0,0,10"}, "InvalidParameterValue"),
    ({"width": "5000"}, "InvalidParameterValue"),
    ({"width": "abc"}, "InvalidParameterValue"),
    ({"layers": None}, "MissingParameterValue"),
    ({"request": "DescribeLayer"}, "OperationNotSupported"),
]


def test_getmap_errors_are_service_exceptions(client, points):
    # one dataset for every case: publishing is the slow part
    for params, code in GETMAP_ERRORS:
        query = {"request": "GetMap", "version": "1.3.0", "layers": points.alternate, "crs": "EPSG:4326",
                 "bbox": "38,-12,52,10", "width": "100", "height": "100", "format": "image/png", "styles": ""}
        query.update(params)
        response = wms(client, **{k: v for k, v in query.items() if v is not None})
        assert exception_code(response) == code, params
        assert etree.fromstring(response.content).get("version") == query["version"], params


def test_private_layers_are_not_defined_for_others(client, db, settings, polygons, owner):
    make_private(db, settings, polygons)
    query = dict(request="GetMap", version="1.1.1", layers=polygons.alternate, srs="EPSG:4326",
                 bbox="0,40,40,60", **POLYGON_MAP)
    assert exception_code(wms(client, **query)) == "LayerNotDefined"
    stranger = make_user(db)
    assert exception_code(wms(client, basic(stranger.username, PASSWORD), **query)) == "LayerNotDefined"
    mine = wms(client, basic(owner.username, PASSWORD), **query)
    assert _quarters(pixels(mine.content)) == EXPECTED_QUARTERS


# -- GetFeatureInfo -----------------------------------------------------------------------------

def _info(client, resource, i, j, info_format="application/json", **extra):
    query = dict(request="GetFeatureInfo", version="1.3.0", layers=resource.alternate,
                 query_layers=resource.alternate, crs="EPSG:4326", bbox="40,0,60,40", width=200, height=100,
                 styles="", info_format=info_format, i=i, j=j)
    query.update(extra)
    return wms(client, **query)


def test_featureinfo_json_finds_the_feature_under_the_pixel(client, polygons):
    response = _info(client, polygons, 25, 25)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert [f["properties"]["name"] for f in body["features"]] == ["north-west"]
    feature = body["features"][0]
    assert feature["geometry"]["type"] in ("Polygon", "MultiPolygon")
    assert feature["properties"]["rank"] == 1 and feature["id"].split(".")[-1].isdigit()
    overlap = _info(client, polygons, 25, 75, feature_count=5).json()
    assert sorted(f["properties"]["name"] for f in overlap["features"]) == ["centre", "south-west"]
    assert _info(client, polygons, 150, 50).json()["features"] == []


def test_featureinfo_1_1_1_uses_x_y(client, polygons):
    response = wms(client, request="GetFeatureInfo", version="1.1.1", layers=polygons.alternate,
                   query_layers=polygons.alternate, srs="EPSG:4326", bbox="0,40,40,60", width=200, height=100,
                   info_format="application/json", x=75, y=25)
    assert [f["properties"]["name"] for f in response.json()["features"]] == ["north-east"]


def test_featureinfo_gml_html_and_text(client, db, polygons):
    gml = _info(client, polygons, 25, 25, info_format="application/vnd.ogc.gml")
    root = etree.fromstring(gml.content)
    names = [el.text for el in root.iter() if etree.QName(el).localname == "name"]
    assert names == ["north-west"]
    assert any(etree.QName(el).localname == "Polygon" for el in root.iter())
    text = _info(client, polygons, 75, 25, info_format="text/plain").text
    assert "name = north-east" in text and polygons.alternate in text
    html = _info(client, polygons, 75, 75, info_format="text/html").text
    assert "<table" in html and "south-east" in html
    db.execute(update(Dataset).where(Dataset.resource_id == polygons.id).values(
        featureinfo_custom_template='<div class="custom">${properties.name} is #${properties.rank}</div>'))
    db.commit()
    custom = _info(client, polygons, 75, 75, info_format="text/html").text
    assert '<div class="custom">south-east is #4</div>' in custom


def test_featureinfo_hides_invisible_attributes(client, db, polygons):
    db.execute(update(DatasetAttribute).where(DatasetAttribute.dataset_id == polygons.id,
                                              DatasetAttribute.attribute == "color").values(visible=False))
    db.commit()
    properties = _info(client, polygons, 25, 25).json()["features"][0]["properties"]
    assert "color" not in properties and properties["name"] == "north-west"


def test_featureinfo_follows_time(client, points):
    # point 2 at (-6, 42): column 60, row 100 of the 220 x 140 map
    query = dict(crs="EPSG:4326", bbox="38,-12,52,10", width=220, height=140)
    found = _info(client, points, 60, 100, time="2024-01-03", **query).json()["features"]
    assert [f["properties"]["name"] for f in found] == ["point 3"]
    assert _info(client, points, 60, 100, **query).json()["features"] == []  # default: latest only


def test_featureinfo_raster_values(client, raster):
    response = wms(client, request="GetFeatureInfo", version="1.1.1", layers=raster.alternate,
                   query_layers=raster.alternate, srs="EPSG:4326", bbox="0,40,16,52", width=64, height=48,
                   info_format="application/json", x=10, y=5)
    (feature,) = response.json()["features"]
    assert list(feature["properties"].values()) == [int(raster_pixels()[0][5, 10])]


def test_featureinfo_errors(client, polygons):
    cases = [
        ({"i": None}, "MissingParameterValue"),
        ({"i": "500"}, "InvalidPoint"),
        ({"query_layers": None}, "MissingParameterValue"),
        ({"query_layers": "geonode:missing"}, "LayerNotDefined"),
        ({"info_format": "image/png"}, "InvalidFormat"),
    ]
    for params, code in cases:
        query = dict(request="GetFeatureInfo", version="1.3.0", layers=polygons.alternate,
                     query_layers=polygons.alternate, crs="EPSG:4326", bbox="40,0,60,40", width=200,
                     height=100, info_format="application/json", i=25, j=25)
        query.update(params)
        response = wms(client, **{k: v for k, v in query.items() if v is not None})
        assert exception_code(response) == code, params


# -- GetLegendGraphic ---------------------------------------------------------------------------

def _has(image: np.ndarray, colour: tuple) -> bool:
    return bool((image == np.array(colour, dtype=np.uint8)).all(axis=2).any())


def test_legend_draws_a_swatch_per_rule(client, polygons):
    response = wms(client, request="GetLegendGraphic", layer=polygons.alternate, format="image/png")
    assert response.headers["content-type"] == "image/png"
    image = pixels(response.content)
    assert all(_has(image, c) for c in (RED, GREEN, BLUE, YELLOW, MAGENTA))
    assert image.shape[0] >= 5 * 20 and image.shape[1] > 40  # five rows, with their labels
    one = pixels(wms(client, request="GetLegendGraphic", layer=polygons.alternate, rule="north-east").content)
    assert _has(one, GREEN) and not _has(one, RED)


def test_legend_errors(client, polygons):
    assert exception_code(wms(client, request="GetLegendGraphic", version="1.3.0",
                              layer="geonode:missing")) == "LayerNotDefined"
    assert exception_code(wms(client, request="GetLegendGraphic", version="1.3.0", layer=polygons.alternate,
                              format="image/gif")) == "InvalidFormat"
    assert exception_code(wms(client, request="GetLegendGraphic", version="1.3.0", layer=polygons.alternate,
                              style="nope")) == "StyleNotDefined"


# -- /styles/{workspace}/{name}.sld -------------------------------------------------------------

def test_style_sld_served_to_viewers(client, db, settings, polygons, owner):
    dataset = db.scalar(select(Dataset).where(Dataset.resource_id == polygons.id))
    url = f"/styles/{dataset.workspace}/{dataset.name}.sld"
    response = client.get(url)
    assert response.status_code == 200 and "application/vnd.ogc.sld+xml" in response.headers["content-type"]
    assert "north-west" in response.text and "StyledLayerDescriptor" in response.text
    assert client.get(f"/styles/{dataset.workspace}/unknown.sld").status_code == 404
    make_private(db, settings, polygons)
    assert client.get(url).status_code == 404
    assert client.get(url, headers=basic(owner.username, PASSWORD)).status_code == 200


def test_getmap_over_post_form(client, polygons):
    form = {"SERVICE": "WMS", "REQUEST": "GetMap", "VERSION": "1.1.1", "LAYERS": polygons.alternate,
            "SRS": "EPSG:4326", "BBOX": "0,40,40,60", **POLYGON_MAP}
    response = client.post("/ows", data=form)
    assert _quarters(pixels(response.content)) == EXPECTED_QUARTERS


def test_render_thumbnail_for_other_modules(db, settings, polygons):
    resource, dataset = db.execute(select(Resource, Dataset).join(Dataset, Dataset.resource_id == Resource.id)
                                   .where(Resource.id == polygons.id)).one()
    image = pixels(thumbnails.dataset_png(settings, resource, dataset, 120, 40))
    assert image.shape == (40, 120, 4)
    assert all(_has(image, colour) for colour in (RED, GREEN, BLUE, YELLOW, MAGENTA))
    # widened to the image's shape, not stretched: the sides stay empty
    assert image[:, :5, 3].max() == 0 and image[:, -5:, 3].max() == 0


def test_thumbnail_of_a_large_layer_draws_an_even_sample(db, settings, points, monkeypatch):
    resource, dataset = db.execute(select(Resource, Dataset).join(Dataset, Dataset.resource_id == Resource.id)
                                   .where(Resource.id == points.id)).one()

    def red_pixels() -> int:
        image = pixels(thumbnails.dataset_png(settings, resource, dataset, 300, 150))
        return int((image == np.array(RED, dtype=np.uint8)).all(axis=2).sum())

    everything = red_pixels()
    monkeypatch.setattr(thumbnails, "THUMBNAIL_FEATURES", 3)  # 10 points: every 4th is drawn
    sampled = red_pixels()
    assert 0 < sampled < everything
    assert sampled == pytest.approx(everything * 2 / 10, rel=0.35)  # fids 4 and 8 of 10


def test_png_encoder_keeps_straight_alpha_and_colours():
    image = mapnik.Image(4, 3)
    image.fill(mapnik.Color(200, 100, 50, 128))
    image.set_pixel(0, 0, mapnik.Color(0, 0, 255, 255))
    image.premultiply()
    decoded = pixels(render.encode_png(image, alpha=True))
    assert decoded.shape == (3, 4, 4)
    assert tuple(decoded[0, 0]) == (0, 0, 255, 255)
    assert np.abs(decoded[1:, 1:].astype(int) - (200, 100, 50, 128)).max() <= 1
    opaque = mapnik.Image(4, 3)
    opaque.fill(mapnik.Color(10, 20, 30, 255))
    assert (pixels(render.encode_png(opaque, alpha=False)) == (10, 20, 30, 255)).all()


def test_marker_of_a_point_just_outside_the_view_is_drawn_where_it_reaches_in(client, points):
    # Point 0 is at (-10, 40): 3 px left of this 0.1°/px view; its 10 px square reaches 2 px in.
    response = wms(client, request="GetMap", version="1.1.1", layers=points.alternate, styles="",
                   srs="EPSG:4326", bbox="-9.7,35,0.3,45", width="100", height="100",
                   format="image/png", transparent="TRUE", time="2024-01-01")
    image = pixels(response.content)
    assert (image[46:54, :2] == np.array(RED, dtype=np.uint8)).all()
    assert image[46:54, 2:4, 3].max() == 0


def test_buffer_follows_what_the_style_draws():
    def buffer(text: str) -> int:
        styles = sldlib.mapnik_styles(sldlib.first_user_style(text), "t")
        return render._buffer_pixels([render._reach(el) for el in styles])

    assert buffer(polygons_sld()) <= 3  # fills and 1 px outlines
    assert 8 <= buffer(RED_SQUARES_SLD) < render.BUFFER_PIXELS  # 10 px squares, turned or not
    labels = RED_SQUARES_SLD.replace(
        "</PointSymbolizer>", "</PointSymbolizer><TextSymbolizer><Label>x</Label></TextSymbolizer>")
    assert buffer(labels) == render.BUFFER_PIXELS
