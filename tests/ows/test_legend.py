"""WMS GetLegendGraphic: one row per rule of the dataset's style (a style uploaded through the
upload endpoint), drawn with the rule's symbolizers and labelled with the rule's title; raster
colour maps one row per entry; the capabilities' LegendURL announces the image's real size."""

from __future__ import annotations

import numpy as np
import pytest
from lxml import etree

from tests.conftest import basic
from tests.factories import PASSWORD
from tests.geodata.fixtures import UPLOAD_URL, publish_file, wait_execution, write_raster
from tests.ows.conftest import wms
from tests.support.pixels import pixels

WMS = "{http://www.opengis.net/wms}"
XLINK = "{http://www.w3.org/1999/xlink}href"
RED, GREEN, BLUE = (255, 0, 0, 255), (0, 255, 0, 255), (0, 0, 255, 255)
SWATCH = 20  # default WIDTH/HEIGHT of a legend swatch and of a row
LABEL_X = SWATCH + 4  # labels start right of the swatch
# (name, title, fill) of three rules over the polygons fixture; the titles differ in length
RULES = [("nw", "NW", "#ff0000"), ("ne", "North-east square", "#00ff00"),
         ("other", "Every other square of the polygons layer", "#0000ff")]


def three_rule_sld() -> str:
    rules = []
    for name, title, fill in RULES:
        condition = "<ElseFilter/>" if name == "other" else (
            "<ogc:Filter><ogc:PropertyIsEqualTo><ogc:PropertyName>name</ogc:PropertyName>"
            f"<ogc:Literal>{'north-west' if name == 'nw' else 'north-east'}</ogc:Literal>"
            "</ogc:PropertyIsEqualTo></ogc:Filter>")
        rules.append(f"<Rule><Name>{name}</Name><Title>{title}</Title>{condition}<PolygonSymbolizer>"
                     f'<Fill><CssParameter name="fill">{fill}</CssParameter></Fill>'
                     "</PolygonSymbolizer></Rule>")
    return ('<?xml version="1.0" encoding="UTF-8"?>'
            '<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld" '
            'xmlns:ogc="http://www.opengis.net/ogc"><NamedLayer><Name>polygons</Name><UserStyle>'
            f"<Name>three</Name><FeatureTypeStyle>{''.join(rules)}</FeatureTypeStyle></UserStyle>"
            "</NamedLayer></StyledLayerDescriptor>")


def upload_style(client, owner, resource, sld: str) -> None:
    headers = basic(owner.username, PASSWORD)
    response = client.post(UPLOAD_URL, headers=headers,
                           data={"action": "resource_style_upload", "resource_pk": str(resource.id)},
                           files={"sld_file": ("three.sld", sld.encode(), "application/xml")})
    assert response.status_code == 200, response.text
    record = wait_execution(client, headers, response.json()["execution_id"])
    assert record["status"] == "finished", record


def legend(client, resource, **params):
    response = wms(client, request="GetLegendGraphic", version="1.3.0", layer=resource.alternate, **params)
    assert response.status_code == 200, response.text
    return response


def label_ink_end(image: np.ndarray, row: int) -> int:
    """The rightmost column of row ``row``'s label holding drawn (non-transparent) pixels."""
    band = image[row * SWATCH:(row + 1) * SWATCH, LABEL_X:, 3]
    columns = np.nonzero(band.max(axis=0) > 64)[0]
    assert columns.size, f"row {row} has no label"
    return LABEL_X + int(columns.max())


def legend_url_sizes(client, resource, version: str) -> dict[str, tuple[str, tuple[int, int]]]:
    """style name → (LegendURL, (width, height)) of ``resource`` in the capabilities."""
    root = etree.fromstring(wms(client, request="GetCapabilities", version=version).content)
    ns = WMS if version == "1.3.0" else ""
    layer = next(el for el in root.iter(f"{ns}Layer") if el.findtext(f"{ns}Name") == resource.alternate)
    out = {}
    for style in layer.findall(f"{ns}Style"):
        url = style.find(f"{ns}LegendURL")
        out[style.findtext(f"{ns}Name")] = (url.find(f"{ns}OnlineResource").get(XLINK),
                                            (int(url.get("width")), int(url.get("height"))))
    return out


def test_uploaded_three_rule_style_has_three_labelled_rows(client, owner, polygons):
    five = pixels(legend(client, polygons).content)  # the fixture's style: five rules
    assert five.shape[0] == 5 * SWATCH
    upload_style(client, owner, polygons, three_rule_sld())

    response = legend(client, polygons, format="image/png")
    assert response.headers["content-type"] == "image/png"
    image = pixels(response.content)
    one = pixels(legend(client, polygons, rule="ne").content)
    assert one.shape[0] == SWATCH and image.shape[0] == 3 * SWATCH  # the height grows with the rules
    # each row's swatch is its rule's fill, in the rule order
    for row, colour in enumerate((RED, GREEN, BLUE)):
        assert tuple(image[row * SWATCH + SWATCH // 2, SWATCH // 2]) == colour, row
    assert tuple(one[SWATCH // 2, SWATCH // 2]) == GREEN
    # labels are the titles (not the short names): each row's text ends further right the
    # longer its title, and the image is as wide as the longest one needs
    ends = [label_ink_end(image, row) for row in range(3)]
    assert ends[0] < ends[1] < ends[2]
    assert ends[0] < LABEL_X + 30 and ends[2] > LABEL_X + len(RULES[2][1]) * 5
    assert image.shape[1] > ends[2] and image.shape[1] >= LABEL_X + len(RULES[2][1]) * 6

    # the same rows as GeoServer's JSON legend: names, titles and the symbolizers' fills
    body = legend(client, polygons, format="application/json").json()
    (layer,) = body["Legend"]
    assert layer["layerName"] == polygons.alternate and layer["title"] == "Polygons"
    assert [(r["name"], r["title"]) for r in layer["rules"]] == [(n, t) for n, t, _ in RULES]
    assert [r["symbolizers"][0]["Polygon"]["fill"] for r in layer["rules"]] == [f for _, _, f in RULES]
    one_rule = legend(client, polygons, format="application/json", rule="other").json()
    assert [r["title"] for r in one_rule["Legend"][0]["rules"]] == [RULES[2][1]]


def test_legend_url_announces_the_size_of_the_image(client, owner, polygons, points, raster):
    upload_style(client, owner, polygons, three_rule_sld())
    for version in ("1.1.1", "1.3.0"):
        for resource in (polygons, points, raster):
            announced = legend_url_sizes(client, resource, version)
            assert announced, resource.alternate
            for url, (width, height) in announced.values():
                image = pixels(client.get(url.removeprefix("http://testserver")).content)
                assert (image.shape[1], image.shape[0]) == (width, height), (version, resource.alternate)
    # three labelled rows are wider and higher than a bare swatch
    (_, size), = legend_url_sizes(client, polygons, "1.3.0").values()
    assert size[0] > SWATCH and size[1] == 3 * SWATCH


def test_raster_colour_map_legend_has_a_row_per_entry(client, db, settings, owner, tmp_path):
    sld = ('<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld"><NamedLayer>'
           "<Name>classes</Name><UserStyle><FeatureTypeStyle><Rule><RasterSymbolizer>"
           '<ColorMap type="intervals"><ColorMapEntry color="#ff0000" quantity="50" label="Low"/>'
           '<ColorMapEntry color="#00ff00" quantity="100" label="Middle"/>'
           '<ColorMapEntry color="#0000ff" quantity="255" label="High values"/></ColorMap>'
           "</RasterSymbolizer></Rule></FeatureTypeStyle></UserStyle></NamedLayer></StyledLayerDescriptor>")
    classes = publish_file(db, settings, owner, write_raster(tmp_path, "classes"), title="Classes", sld=sld)
    image = pixels(legend(client, classes).content)
    assert image.shape[0] == 3 * SWATCH
    for row, colour in enumerate((RED, GREEN, BLUE)):
        assert tuple(image[row * SWATCH + SWATCH // 2, SWATCH // 2]) == colour, row
    ends = [label_ink_end(image, row) for row in range(3)]
    assert ends[0] < ends[2] and ends[1] < ends[2]  # "High values" is the longest label
    (layer,) = legend(client, classes, format="application/json").json()["Legend"]
    entries = layer["rules"][0]["symbolizers"][0]["Raster"]["colormap"]["entries"]
    assert [(e["label"], e["color"]) for e in entries] == [
        ("Low", "#ff0000"), ("Middle", "#00ff00"), ("High values", "#0000ff")]


@pytest.mark.parametrize("name", ["image/png8", "image/png; mode=8bit"])
def test_png8_legend(client, polygons, name):
    response = legend(client, polygons, format=name)
    assert response.headers["content-type"] == "image/png; mode=8bit"
    assert b"PLTE" in response.content[:200]
    assert tuple(pixels(response.content)[SWATCH // 2, SWATCH // 2]) == RED  # the first rule, north-west
