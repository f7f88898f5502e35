"""cartotheca.ows.legend: legend images (WMS GetLegendGraphic) drawn with the style's own symbolizers.

Each rule becomes one row: a swatch (a square, a diagonal line or a point, by what the rule
draws) rendered by mapnik with the rule's symbolizers, and its title to the right. Raster colour
maps get one row per entry. The legend is a small mapnik map in pixel units, so swatches look
exactly like the features on the map.
"""

from __future__ import annotations

import json

import mapnik
from lxml import etree

from cartotheca.errors import InvalidInput
from cartotheca.styling import sld as sldlib

PIXEL_SRS = "epsg:3857"  # any projected CRS: coordinates here are pixels, nothing is reprojected
FONT = "DejaVu Sans Book"
FONT_SIZE = 12
CHAR_WIDTH = 7.2  # average advance of DejaVu Sans at 12 px, to size the image
GAP = 4
JSON = "application/json"
# mapnik symbolizer → the kind name GeoServer's JSON legend uses
SYMBOLIZER_KINDS = {"PolygonSymbolizer": "Polygon", "LineSymbolizer": "Line", "MarkersSymbolizer": "Point",
                    "PointSymbolizer": "Point", "TextSymbolizer": "Text", "RasterSymbolizer": "Raster"}
ENCODERS = {"image/png": "png32", "image/png; mode=8bit": "png8", "image/jpeg": "jpeg85"}


def legend_image(style: sldlib.UserStyle, *, width: int = 20, height: int = 20,
                 rule_name: str | None = None, scale: float | None = None,
                 image_format: str = "image/png", transparent: bool = True,
                 title: str | None = None) -> bytes:
    encoder = ENCODERS.get(image_format.lower())
    if encoder is None:
        raise InvalidInput(f"Legend format {image_format} is not supported")
    rows = _rows(style, rule_name, scale, title)
    if rule_name is not None and not rows:
        raise InvalidInput(f"Rule {rule_name} is not in the style")
    labelled = any(label for label, _, _ in rows)
    row_height = _row_height(height)
    image_width, image_height = _image_size(rows, width, height)
    root = etree.Element("Map", srs=PIXEL_SRS)
    layers = []
    for index, (_, kind, rule) in enumerate(rows):
        top = image_height - index * row_height
        y0 = top - (row_height - height) / 2 - height
        symbolizers = [el for el in rule.symbolizers if el.tag not in ("TextSymbolizer", "RasterSymbolizer")]
        if symbolizers:
            style_el = etree.SubElement(root, "Style", name=f"r{index}")
            rule_el = etree.SubElement(style_el, "Rule")
            for symbolizer in symbolizers:
                rule_el.append(etree.fromstring(etree.tostring(symbolizer)))
            layers.append(_layer(f"r{index}", [_swatch(kind, 0, y0, width, height)]))
    if labelled:
        _label_style(root)
        points = [_feature({"type": "Point", "coordinates": [width + GAP,
                  image_height - index * row_height - row_height / 2]}, {"label": label})
                  for index, (label, _, _) in enumerate(rows) if label]
        layers.append(_layer("labels", points))
    for layer in layers:
        root.append(layer)
    m = mapnik.Map(image_width, image_height)
    mapnik.load_map_from_string(m, etree.tostring(root, encoding="unicode"), False, "")
    m.aspect_fix_mode = mapnik.aspect_fix_mode.RESPECT
    m.zoom_to_box(mapnik.Box2d(0, 0, image_width, image_height))
    opaque = not transparent or encoder == "jpeg85"
    m.background = mapnik.Color("white") if opaque else mapnik.Color(0, 0, 0, 0)
    image = mapnik.Image(image_width, image_height)
    mapnik.render(m, image)
    return image.to_string(encoder)


def legend_size(style: sldlib.UserStyle, *, width: int = 20, height: int = 20,
                title: str | None = None) -> tuple[int, int]:
    """(width, height) in pixels of the legend ``legend_image`` draws for the whole style."""
    return _image_size(_rows(style, None, None, title), width, height)


def _row_height(height: int) -> int:
    return max(height, FONT_SIZE + 4)


def _image_size(rows: list[tuple[str, str, sldlib.Rule]], width: int, height: int) -> tuple[int, int]:
    labelled = any(label for label, _, _ in rows)
    label_width = max((len(label) for label, _, _ in rows), default=0) * CHAR_WIDTH
    image_width = int(width + (GAP + label_width + GAP if labelled else 0))
    return image_width, max(1, _row_height(height) * len(rows))


def legend_json(style: sldlib.UserStyle, *, layer_name: str, title: str | None = None,
                rule_name: str | None = None, scale: float | None = None) -> dict:
    """The legend as GeoServer's ``application/json`` GetLegendGraphic answer: the rules an
    image would draw rows for, each with its name, its label and its symbolizers' settings."""
    rules = []
    for rule in style.rules:
        if rule_name is not None and rule.name != rule_name:
            continue
        if scale is not None and not _in_scale(rule, scale):
            continue
        symbolizers = []
        for el in rule.symbolizers:
            kind = SYMBOLIZER_KINDS.get(el.tag, el.tag)
            values: dict = dict(el.attrib)
            if kind == "Raster" and rule.color_map:
                values["colormap"] = {"entries": [
                    {"color": e.color, "quantity": e.quantity, "opacity": e.opacity,
                     "label": e.label or f"{e.quantity:g}"} for e in rule.color_map]}
            symbolizers.append({kind: values})
        label = rule.label or (title if len(style.rules) == 1 else "") or ""
        rules.append({"name": rule.name or "", "title": label, "symbolizers": symbolizers})
    if rule_name is not None and not rules:
        raise InvalidInput(f"Rule {rule_name} is not in the style")
    return {"Legend": [{"layerName": layer_name, "title": title or layer_name, "rules": rules}]}


def _rows(style: sldlib.UserStyle, rule_name: str | None, scale: float | None,
          title: str | None) -> list[tuple[str, str, sldlib.Rule]]:
    rows = []
    rules = style.rules
    for rule in rules:
        if rule_name is not None and rule.name != rule_name:
            continue
        if scale is not None and not _in_scale(rule, scale):
            continue
        if "raster" in rule.kinds:
            rows += _raster_rows(rule, title)
            continue
        kinds = [k for k in rule.kinds if k != "text"] or ["point"]
        label = rule.label or (title if len(rules) == 1 else "") or ""
        rows.append((label, kinds[0], rule))
    return rows


def _raster_rows(rule: sldlib.Rule, title: str | None) -> list[tuple[str, str, sldlib.Rule]]:
    if not rule.color_map:
        swatch = sldlib.Rule(symbolizers=[etree.Element("PolygonSymbolizer", fill="#808080")],
                             kinds=["polygon"])
        return [(rule.label or title or "", "polygon", swatch)]
    rows = []
    for entry in rule.color_map:
        swatch = sldlib.Rule(symbolizers=[
            etree.Element("PolygonSymbolizer", fill=entry.color, **{"fill-opacity": f"{entry.opacity:.3f}"}),
            etree.Element("LineSymbolizer", stroke="#808080", **{"stroke-width": "0.5"})],
            kinds=["polygon"])
        rows.append((entry.label or f"{entry.quantity:g}", "polygon", swatch))
    return rows


def _in_scale(rule: sldlib.Rule, scale: float) -> bool:
    if rule.min_scale is not None and scale < rule.min_scale:
        return False
    return not (rule.max_scale is not None and scale >= rule.max_scale)


def _swatch(kind: str, x0: float, y0: float, width: float, height: float) -> dict:
    if kind == "line":
        geometry = {"type": "LineString",
                    "coordinates": [[x0 + 1, y0 + 1], [x0 + width - 1, y0 + height - 1]]}
    elif kind == "polygon":
        geometry = {"type": "Polygon", "coordinates": [[
            [x0 + 1, y0 + 1], [x0 + width - 1, y0 + 1], [x0 + width - 1, y0 + height - 1],
            [x0 + 1, y0 + height - 1], [x0 + 1, y0 + 1]]]}
    else:
        geometry = {"type": "Point", "coordinates": [x0 + width / 2, y0 + height / 2]}
    return _feature(geometry, {})


def _feature(geometry: dict, properties: dict) -> dict:
    return {"type": "Feature", "geometry": geometry, "properties": properties}


def _layer(name: str, features: list[dict]) -> etree._Element:
    layer = etree.Element("Layer", name=name, srs=PIXEL_SRS)
    etree.SubElement(layer, "StyleName").text = name if name != "labels" else "labels"
    datasource = etree.SubElement(layer, "Datasource")
    etree.SubElement(datasource, "Parameter", name="type").text = "geojson"
    etree.SubElement(datasource, "Parameter", name="inline").text = json.dumps(
        {"type": "FeatureCollection", "features": features})
    return layer


def _label_style(root: etree._Element) -> None:
    style = etree.SubElement(root, "Style", name="labels")
    rule = etree.SubElement(style, "Rule")
    text = etree.SubElement(rule, "TextSymbolizer", {
        "face-name": FONT, "size": str(FONT_SIZE), "fill": "#000000",
        "horizontal-alignment": "right", "vertical-alignment": "middle",
        "allow-overlap": "true", "placement": "point"})
    text.text = "[label]"
