"""SLD 1.0 / SE 1.1 → mapnik: filters evaluated by mapnik itself, symbolizers checked by pixels."""

from __future__ import annotations

import base64
import json

import mapnik
import numpy as np
import pytest
from lxml import etree

import cartotheca  # noqa: F401  (PROJ_DATA before mapnik)
from cartotheca import xmlsafe
from cartotheca.errors import InvalidInput
from cartotheca.styling import sld
from cartotheca.styling.defaults import default_sld
from cartotheca.styling.sld import sld_style_name, validate_sld

SLD10 = ('<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld" '
         'xmlns:ogc="http://www.opengis.net/ogc" xmlns:xlink="http://www.w3.org/1999/xlink">'
         "<NamedLayer><Name>layer</Name><UserStyle><Name>style</Name><FeatureTypeStyle>{rules}"
         "</FeatureTypeStyle></UserStyle></NamedLayer></StyledLayerDescriptor>")
FEATURES = [
    {"name": "Alpha", "value": 1, "code": "10"},
    {"name": "beta", "value": 5, "code": "20"},
    {"name": "gamma's", "value": 9, "code": None},
]


def _sld(rules: str) -> str:
    return SLD10.format(rules=rules)


def _datasource(features: list[tuple[dict, dict]]) -> mapnik.Datasource:
    collection = {"type": "FeatureCollection", "features": [
        {"type": "Feature", "geometry": geometry, "properties": props} for geometry, props in features]}
    return mapnik.Datasource(type="geojson", inline=json.dumps(collection))


def _selected(filter_xml: str) -> list[str]:
    """Names of FEATURES that mapnik's evaluation of the translated filter keeps."""
    el = xmlsafe.parse(f'<ogc:Filter xmlns:ogc="http://www.opengis.net/ogc">{filter_xml}</ogc:Filter>')
    expression = mapnik.Expression(sld.filter_expression(el))
    ds = _datasource([({"type": "Point", "coordinates": [i, i]}, props) for i, props in enumerate(FEATURES)])
    query = mapnik.Query(ds.envelope())
    for field in ds.fields():
        query.add_property_name(field)
    return [f.attributes["name"] for f in ds.features(query) if expression.evaluate(f)]


def _prop(name: str) -> str:
    return f"<ogc:PropertyName>{name}</ogc:PropertyName>"


def _lit(value: str) -> str:
    return f"<ogc:Literal>{value}</ogc:Literal>"


@pytest.mark.parametrize("filter_xml, expected", [
    (f"<ogc:PropertyIsEqualTo>{_prop('name')}{_lit('Alpha')}</ogc:PropertyIsEqualTo>", ["Alpha"]),
    (f'<ogc:PropertyIsEqualTo matchCase="false">{_prop("name")}{_lit("ALPHA")}</ogc:PropertyIsEqualTo>',
     ["Alpha"]),
    (f"<ogc:PropertyIsEqualTo>{_prop('name')}{_lit('ALPHA')}</ogc:PropertyIsEqualTo>", []),
    (f"<ogc:PropertyIsEqualTo>{_prop('name')}{_lit('gamma&apos;s')}</ogc:PropertyIsEqualTo>", ["gamma's"]),
    (f"<ogc:PropertyIsNotEqualTo>{_prop('value')}{_lit('5')}</ogc:PropertyIsNotEqualTo>",
     ["Alpha", "gamma's"]),
    (f"<ogc:PropertyIsLessThan>{_prop('value')}{_lit('5')}</ogc:PropertyIsLessThan>", ["Alpha"]),
    (f"<ogc:PropertyIsGreaterThanOrEqualTo>{_prop('value')}{_lit('5')}</ogc:PropertyIsGreaterThanOrEqualTo>",
     ["beta", "gamma's"]),
    (f"<ogc:PropertyIsLessThanOrEqualTo>{_prop('value')}{_lit('5')}</ogc:PropertyIsLessThanOrEqualTo>",
     ["Alpha", "beta"]),
    (f"<ogc:PropertyIsGreaterThan>{_prop('value')}{_lit('5')}</ogc:PropertyIsGreaterThan>", ["gamma's"]),
    # a number against a text attribute matches its text form
    (f"<ogc:PropertyIsEqualTo>{_prop('code')}{_lit('10')}</ogc:PropertyIsEqualTo>", ["Alpha"]),
    (f'<ogc:PropertyIsLike wildCard="*" singleChar="?" escape="\\">{_prop("name")}{_lit("*ta")}'
     "</ogc:PropertyIsLike>", ["beta"]),
    (f'<ogc:PropertyIsLike wildCard="%" singleChar="_" escapeChar="!">{_prop("name")}{_lit("g_mma%")}'
     "</ogc:PropertyIsLike>", ["gamma's"]),
    (f'<ogc:PropertyIsLike wildCard="*" singleChar="?" escape="!">{_prop("name")}{_lit("a.*")}'
     "</ogc:PropertyIsLike>", []),  # the dot is literal, not a regular expression
    (f'<ogc:PropertyIsLike wildCard="*" singleChar="?" escape="!" matchCase="false">{_prop("name")}'
     f'{_lit("al*")}</ogc:PropertyIsLike>', ["Alpha"]),
    (f"<ogc:PropertyIsNull>{_prop('code')}</ogc:PropertyIsNull>", ["gamma's"]),
    (f"<ogc:PropertyIsBetween>{_prop('value')}<ogc:LowerBoundary>{_lit('2')}</ogc:LowerBoundary>"
     f"<ogc:UpperBoundary>{_lit('9')}</ogc:UpperBoundary></ogc:PropertyIsBetween>", ["beta", "gamma's"]),
    (f"<ogc:And><ogc:Not><ogc:PropertyIsNull>{_prop('code')}</ogc:PropertyIsNull></ogc:Not>"
     f"<ogc:PropertyIsGreaterThan>{_prop('value')}{_lit('2')}</ogc:PropertyIsGreaterThan></ogc:And>",
     ["beta"]),
    (f"<ogc:Or><ogc:PropertyIsEqualTo>{_prop('name')}{_lit('Alpha')}</ogc:PropertyIsEqualTo>"
     f"<ogc:PropertyIsEqualTo>{_prop('name')}{_lit('beta')}</ogc:PropertyIsEqualTo></ogc:Or>",
     ["Alpha", "beta"]),
    (f"<ogc:PropertyIsGreaterThan><ogc:Mul>{_prop('value')}{_lit('2')}</ogc:Mul>{_lit('10')}"
     "</ogc:PropertyIsGreaterThan>", ["gamma's"]),
])
def test_filters_select_what_they_say(filter_xml, expected):
    assert _selected(filter_xml) == expected


@pytest.mark.parametrize("filter_xml", [
    f"<ogc:BBOX>{_prop('geom')}<gml:Envelope xmlns:gml='http://www.opengis.net/gml'/></ogc:BBOX>",
    f"<ogc:PropertyIsEqualTo><ogc:Function name='strToUpperCase'>{_prop('name')}</ogc:Function>"
    f"{_lit('A')}</ogc:PropertyIsEqualTo>",
    f"<ogc:PropertyIsEqualTo>{_prop('na]me')}{_lit('A')}</ogc:PropertyIsEqualTo>",
    f"<ogc:And><ogc:PropertyIsNull>{_prop('code')}</ogc:PropertyIsNull></ogc:And>",
])
def test_unsupported_filters_are_refused(filter_xml):
    with pytest.raises(InvalidInput):
        _selected(filter_xml)


def _draw(style_sld: str, features: list[tuple[dict, dict]], size: int = 100,
          bbox: tuple = (0, 0, 10, 10)) -> np.ndarray:
    """RGBA pixels of ``features`` drawn with the translated style (EPSG:4326, y up)."""
    root = etree.Element("Map", srs="epsg:4326")
    style = sld.first_user_style(style_sld)
    styles = sld.mapnik_styles(style, "t")
    for el in styles:
        root.append(el)
    m = mapnik.Map(size, size)
    mapnik.load_map_from_string(m, etree.tostring(root, encoding="unicode"))
    layer = mapnik.Layer("l", "epsg:4326")
    layer.datasource = _datasource(features)
    for el in styles:
        layer.styles.append(el.get("name"))
    m.layers.append(layer)
    m.zoom_to_box(mapnik.Box2d(*bbox))
    image = mapnik.Image(size, size)
    mapnik.render(m, image)
    return np.frombuffer(image.to_string(), dtype=np.uint8).reshape(size, size, 4)


def _point(x: float = 5, y: float = 5) -> dict:
    return {"type": "Point", "coordinates": [x, y]}


def _square(x0: float, y0: float, x1: float, y1: float) -> dict:
    return {"type": "Polygon", "coordinates": [[[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]]}


def test_polygon_fill_and_outline():
    pixels = _draw(_sld(
        '<Rule><PolygonSymbolizer><Fill><CssParameter name="fill">#ff0000</CssParameter></Fill>'
        '<Stroke><CssParameter name="stroke">#0000ff</CssParameter>'
        '<CssParameter name="stroke-width">3</CssParameter></Stroke></PolygonSymbolizer></Rule>'),
        [(_square(2, 2, 8, 8), {})])
    assert tuple(pixels[50, 50]) == (255, 0, 0, 255)  # inside
    assert tuple(pixels[20, 50]) == (0, 0, 255, 255)  # on the top edge (y = 8 → row 20)
    assert pixels[5, 5, 3] == 0  # outside: transparent


def test_fill_opacity_and_else_filter():
    rules = (f"<Rule><ogc:Filter><ogc:PropertyIsEqualTo>{_prop('kind')}{_lit('a')}</ogc:PropertyIsEqualTo>"
             '</ogc:Filter><PolygonSymbolizer><Fill><CssParameter name="fill">#00ff00</CssParameter>'
             "</Fill></PolygonSymbolizer></Rule>"
             '<Rule><ElseFilter/><PolygonSymbolizer><Fill><CssParameter name="fill">#0000ff</CssParameter>'
             '<CssParameter name="fill-opacity">0.5</CssParameter></Fill></PolygonSymbolizer></Rule>')
    pixels = _draw(_sld(rules), [(_square(0, 0, 5, 10), {"kind": "a"}),
                                 (_square(5, 0, 10, 10), {"kind": "b"})])
    assert tuple(pixels[50, 25]) == (0, 255, 0, 255)
    assert pixels[50, 75, 3] in range(120, 136)  # half transparent blue
    assert pixels[50, 75, 2] > 100 and pixels[50, 75, 0] == 0


def test_scale_denominators_hide_rules_out_of_range():
    rule = ("<Rule><MaxScaleDenominator>1000</MaxScaleDenominator><PolygonSymbolizer><Fill>"
            '<CssParameter name="fill">#ff0000</CssParameter></Fill></PolygonSymbolizer></Rule>'
            "<Rule><MinScaleDenominator>1000</MinScaleDenominator><PolygonSymbolizer><Fill>"
            '<CssParameter name="fill">#0000ff</CssParameter></Fill></PolygonSymbolizer></Rule>')
    pixels = _draw(_sld(rule), [(_square(0, 0, 10, 10), {})])
    assert tuple(pixels[50, 50]) == (0, 0, 255, 255)  # 10° on 100 px is far beyond 1:1000


def test_line_stroke_dashes_and_joins():
    style = sld.first_user_style(_sld(
        '<Rule><LineSymbolizer><Stroke><CssParameter name="stroke">#00ff00</CssParameter>'
        '<CssParameter name="stroke-width">4</CssParameter><CssParameter name="stroke-dasharray">5 2'
        '</CssParameter><CssParameter name="stroke-linecap">round</CssParameter>'
        '<CssParameter name="stroke-linejoin">mitre</CssParameter>'
        '<CssParameter name="stroke-opacity">0.8</CssParameter></Stroke></LineSymbolizer></Rule>'))
    line = style.rules[0].symbolizers[0]
    assert line.tag == "LineSymbolizer"
    assert line.get("stroke-dasharray") == "5, 2"
    assert (line.get("stroke-linecap"), line.get("stroke-linejoin")) == ("round", "miter")
    pixels = _draw(_sld('<Rule><LineSymbolizer><Stroke>'
                        '<CssParameter name="stroke">#00ff00</CssParameter>'
                        '<CssParameter name="stroke-width">4</CssParameter>'
                        '</Stroke></LineSymbolizer></Rule>'),
                   [({"type": "LineString", "coordinates": [[0, 5], [10, 5]]}, {})])
    assert tuple(pixels[50, 50]) == (0, 255, 0, 255)
    assert pixels[40, 50, 3] == 0


@pytest.mark.parametrize("mark", ["circle", "square", "triangle", "star", "cross", "x"])
def test_well_known_marks_paint_their_centre(mark):
    pixels = _draw(_sld(
        f"<Rule><PointSymbolizer><Graphic><Mark><WellKnownName>{mark}</WellKnownName>"
        '<Fill><CssParameter name="fill">#00ff00</CssParameter></Fill></Mark><Size>20</Size>'
        "</Graphic></PointSymbolizer></Rule>"), [(_point(), {})])
    assert tuple(pixels[50, 50]) == (0, 255, 0, 255)
    assert pixels[50, 35, 3] == 0 and pixels[35, 35, 3] == 0  # nothing beyond the 20 px mark
    covered = int((pixels[:, :, 3] > 0).sum())
    assert 40 < covered <= 21 * 21


def test_mark_shapes_differ():
    def coverage(mark: str) -> int:
        pixels = _draw(_sld(
            f"<Rule><PointSymbolizer><Graphic><Mark><WellKnownName>{mark}</WellKnownName>"
            '<Fill><CssParameter name="fill">#000000</CssParameter></Fill></Mark><Size>40</Size>'
            "</Graphic></PointSymbolizer></Rule>"), [(_point(), {})])
        return int((pixels[:, :, 3] > 128).sum())

    square, circle, triangle = coverage("square"), coverage("circle"), coverage("triangle")
    assert square > circle > triangle
    assert abs(square - 1600) < 200 and abs(circle - 1257) < 150


def test_external_graphic_from_data_uri_only():
    image = mapnik.Image(8, 8)
    image.fill(mapnik.Color("#ff00ff"))
    uri = "data:image/png;base64," + base64.b64encode(image.to_string("png32")).decode()
    graphic = ('<Rule><PointSymbolizer><Graphic><ExternalGraphic><OnlineResource xlink:type="simple" '
               'xlink:href="{href}"/><Format>image/png</Format></ExternalGraphic><Size>16</Size>'
               "</Graphic></PointSymbolizer></Rule>")
    pixels = _draw(_sld(graphic.format(href=uri)), [(_point(), {})])
    assert tuple(pixels[50, 50]) == (255, 0, 255, 255)
    # A remote graphic is never fetched: the default grey square is drawn instead.
    pixels = _draw(_sld(graphic.format(href="http://127.0.0.1:9/marker.png")), [(_point(), {})])
    assert tuple(pixels[50, 50][:3]) == (128, 128, 128)


def test_text_symbolizer_labels_from_properties():
    style = sld.first_user_style(_sld(
        f"<Rule><TextSymbolizer><Label>{_prop('name')}</Label><Font>"
        '<CssParameter name="font-family">Serif</CssParameter>'
        '<CssParameter name="font-size">14</CssParameter>'
        '<CssParameter name="font-weight">bold</CssParameter></Font><Halo><Radius>2</Radius><Fill>'
        '<CssParameter name="fill">#ffffff</CssParameter></Fill></Halo><Fill>'
        '<CssParameter name="fill">#ff0000</CssParameter></Fill></TextSymbolizer></Rule>'))
    text = style.rules[0].symbolizers[0]
    assert (text.tag, text.text, text.get("face-name")) == ("TextSymbolizer", "[name]", "DejaVu Serif Bold")
    assert (text.get("size"), text.get("halo-radius"), text.get("fill")) == ("14", "2", "#ff0000")
    pixels = _draw(_sld(
        f"<Rule><TextSymbolizer><Label>{_prop('name')}</Label><Fill>"
        '<CssParameter name="fill">#ff0000</CssParameter></Fill></TextSymbolizer></Rule>'),
        [(_point(), {"name": "MMMM"})])
    red = (pixels[:, :, 0] > 200) & (pixels[:, :, 1] < 60) & (pixels[:, :, 3] > 200)
    ys, xs = np.nonzero(red)
    assert len(xs) > 20 and abs(xs.mean() - 50) < 5 and abs(ys.mean() - 50) < 8


def test_se_11_documents_read_like_sld_10():
    doc = (
        '<StyledLayerDescriptor version="1.1.0" xmlns="http://www.opengis.net/sld" '
        'xmlns:se="http://www.opengis.net/se" xmlns:ogc="http://www.opengis.net/ogc">'
        "<NamedLayer><se:Name>layer</se:Name><UserStyle><se:Name>s</se:Name><se:FeatureTypeStyle><se:Rule>"
        "<se:Name>big</se:Name><se:Description><se:Title>Big ones</se:Title></se:Description>"
        "<ogc:Filter><ogc:PropertyIsGreaterThan><ogc:PropertyName>value</ogc:PropertyName>"
        "<ogc:Literal>3</ogc:Literal></ogc:PropertyIsGreaterThan></ogc:Filter>"
        '<se:PolygonSymbolizer><se:Fill><se:SvgParameter name="fill">#ff8800</se:SvgParameter></se:Fill>'
        "</se:PolygonSymbolizer></se:Rule></se:FeatureTypeStyle></UserStyle></NamedLayer>"
        "</StyledLayerDescriptor>")
    assert sld_style_name(doc) == "s"
    assert sld.first_user_style(doc).rules[0].label == "Big ones"
    pixels = _draw(doc, [(_square(0, 0, 5, 10), {"value": 1}), (_square(5, 0, 10, 10), {"value": 7})])
    assert pixels[50, 25, 3] == 0
    assert tuple(pixels[50, 75]) == (255, 136, 0, 255)


def test_raster_colour_maps_become_colorizers():
    def colorizer(kind: str) -> etree._Element:
        style = sld.first_user_style(_sld(
            f'<Rule><RasterSymbolizer><Opacity>0.5</Opacity><ColorMap type="{kind}">'
            '<ColorMapEntry color="#000000" quantity="0"/><ColorMapEntry color="#ff0000" quantity="10" '
            'opacity="0.5" label="ten"/><ColorMapEntry color="#ffffff" quantity="20"/></ColorMap>'
            "</RasterSymbolizer></Rule>"))
        symbolizer = style.rules[0].symbolizers[0]
        assert symbolizer.get("opacity") == "0.5"
        assert [e.label for e in style.rules[0].color_map] == [None, "ten", None]
        return symbolizer.find("RasterColorizer")

    ramp = colorizer("ramp")
    assert ramp.get("default-mode") == "linear"
    assert [(s.get("value"), s.get("color")) for s in ramp] == [
        ("0", "rgba(0,0,0,1.000)"), ("10", "rgba(255,0,0,0.500)"), ("20", "rgba(255,255,255,1.000)")]
    intervals = colorizer("intervals")
    assert intervals.get("default-mode") == "discrete"
    # [0,10) → the second entry's colour, [10,20) → the third's, 20 and above → nothing
    assert [(s.get("value"), s.get("color")) for s in intervals] == [
        ("0", "rgba(255,0,0,0.500)"), ("10", "rgba(255,255,255,1.000)"), ("20", "transparent")]
    values = colorizer("values")
    assert values.get("default-mode") == "exact" and values.get("default-color") == "transparent"


def test_channel_selection_picks_a_band():
    style = sld.first_user_style(_sld(
        "<Rule><RasterSymbolizer><ChannelSelection><GrayChannel><SourceChannelName>2</SourceChannelName>"
        "</GrayChannel></ChannelSelection></RasterSymbolizer></Rule>"))
    assert style.raster_band == 2


@pytest.mark.parametrize("geometry_type, drawn", [
    ("Point", _point()), ("MultiPoint", _point()),
    ("LineString", {"type": "LineString", "coordinates": [[0, 5], [10, 5]]}),
    ("MultiPolygon", _square(2, 2, 8, 8)), (None, _square(2, 2, 8, 8)),
])
def test_default_styles_draw_each_geometry_type(geometry_type, drawn):
    text = default_sld("roads", "vector", geometry_type)
    assert validate_sld(text.encode()) and sld_style_name(text) == "roads"
    pixels = _draw(text, [(drawn, {})])
    assert pixels[50, 50, 3] > 150  # (a line along a pixel boundary covers two rows partly)
    assert pixels[2, 2, 3] == 0


def test_default_raster_styles():
    info = {"bands": 1, "dtype": "int16", "statistics": [{"min": -5, "max": 300}]}
    grey = sld.first_user_style(default_sld("dem", "raster", None, info))
    stops = grey.rules[0].symbolizers[0].find("RasterColorizer")
    assert [s.get("value") for s in stops] == ["-5", "300"]
    rgb = sld.first_user_style(default_sld("photo", "raster", None, {"bands": 3, "dtype": "uint8"}))
    assert rgb.rules[0].symbolizers[0].find("RasterColorizer") is None and rgb.raster_band is None


@pytest.mark.parametrize("data, message", [
    (b"not xml", "well-formed"),
    (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "boom">]><StyledLayerDescriptor/>', "DTD"),
    (b"<Style/>", "Not an SLD"),
    (b'<StyledLayerDescriptor version="2.0.0" xmlns="http://www.opengis.net/sld"/>', "version"),
    (_sld("").encode(), "no rule"),
    (_sld(f"<Rule><ogc:Filter><ogc:Intersects>{_prop('g')}</ogc:Intersects></ogc:Filter>"
          "<PolygonSymbolizer/></Rule>").encode(), "not supported"),
    (_sld('<Rule><PolygonSymbolizer><Fill><CssParameter name="fill">#zz0000</CssParameter></Fill>'
          "</PolygonSymbolizer></Rule>").encode(), "cannot be drawn"),
])
def test_validate_sld_refuses(data, message):
    with pytest.raises(InvalidInput, match=message):
        validate_sld(data)


def test_split_layers_keeps_each_named_layer_alone():
    doc = ('<StyledLayerDescriptor version="1.0.0" xmlns="http://www.opengis.net/sld">'
           "<NamedLayer><Name>geonode:a</Name><UserStyle><Name>a1</Name><FeatureTypeStyle><Rule>"
           "<PolygonSymbolizer/></Rule></FeatureTypeStyle></UserStyle></NamedLayer>"
           "<NamedLayer><Name>b</Name><NamedStyle><Name>b_style</Name></NamedStyle></NamedLayer>"
           "</StyledLayerDescriptor>")
    layers = sld.split_layers(doc)
    assert layers["b"] == "named:b_style"
    assert sld_style_name(layers["geonode:a"]) == "a1"
    assert [layer.name for layer in sld.parse_document(layers["geonode:a"])] == ["geonode:a"]
