"""cartotheca.styling.symbolizers: SLD/SE symbolizers → mapnik symbolizer elements.

Polygon, line, point (marks and external graphics), text and raster symbolizers; what mapnik
cannot draw is drawn plainly (pattern fills as a tone, graphic strokes as a line) rather than
refused. Data-driven parameters (a ``PropertyName`` inside a parameter) stay mapnik expressions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lxml import etree

from cartotheca.errors import InvalidInput
from cartotheca.filters.mapnik import expression, string_literal
from cartotheca.filters.parse import parse_fes
from cartotheca.styling.markers import external_graphic, mark_svg
from cartotheca.styling.params import (
    linecap,
    linejoin,
    mapnik_element,
    num,
    number_param,
    opacity_param,
    parse_float,
    svg_params,
)
from cartotheca.xmlsafe import children_named, first_child, local_name, text_of

DEFAULT_MARK_SIZE = 6.0  # SE 1.1 §11.3.2
DEFAULT_GREY = "#808080"
WELL_KNOWN_MARKS = {"circle", "square", "triangle", "star", "cross", "x"}


@dataclass
class ColorMapEntry:
    color: str
    quantity: float
    opacity: float = 1.0
    label: str | None = None


def polygon(el: etree._Element) -> list[etree._Element]:
    fill_el, stroke_el = first_child(el, "Fill"), first_child(el, "Stroke")
    out = []
    if fill_el is not None or stroke_el is None:
        params = svg_params(fill_el)
        if first_child(fill_el, "GraphicFill") is not None and "fill" not in params:
            params["fill"] = DEFAULT_GREY  # pattern fills are drawn as a plain tone
        out.append(mapnik_element("PolygonSymbolizer", {
            "fill": params.get("fill", DEFAULT_GREY),
            "fill-opacity": opacity_param(params.get("fill-opacity")),
        }))
    if stroke_el is not None:
        out.append(_line_element(svg_params(stroke_el), text_of(first_child(el, "PerpendicularOffset"))))
    return out


def line(el: etree._Element) -> list[etree._Element]:
    # A GraphicStroke is drawn as a plain line of the stroke's colour.
    offset = text_of(first_child(el, "PerpendicularOffset"))
    return [_line_element(svg_params(first_child(el, "Stroke")), offset)]


def _line_element(params: dict[str, str], offset: str | None = None) -> etree._Element:
    attrs = {
        "stroke": params.get("stroke", "#000000"),
        "stroke-width": number_param(params.get("stroke-width"), 1.0, "stroke-width"),
        "stroke-opacity": opacity_param(params.get("stroke-opacity")),
        "stroke-linecap": linecap(params.get("stroke-linecap")),
        "stroke-linejoin": linejoin(params.get("stroke-linejoin")),
    }
    dashes = params.get("stroke-dasharray")
    if dashes:
        values = [v for v in re.split(r"[\s,]+", dashes.strip()) if v]
        numbers = [parse_float(v, "stroke-dasharray") for v in values]
        if numbers and any(n > 0 for n in numbers):
            if len(numbers) % 2:
                numbers *= 2  # an odd list repeats, as in SVG
            attrs["stroke-dasharray"] = ", ".join(num(n) for n in numbers)
            if params.get("stroke-dashoffset"):
                attrs["stroke-dashoffset"] = number_param(params["stroke-dashoffset"], 0, "offset")
    if offset:
        attrs["offset"] = num(parse_float(offset, "PerpendicularOffset"))
    return mapnik_element("LineSymbolizer", attrs)


def point(el: etree._Element) -> list[etree._Element]:
    graphic = first_child(el, "Graphic")
    size = parse_float(text_of(first_child(graphic, "Size")), "Size")
    opacity = opacity_param(text_of(first_child(graphic, "Opacity")))
    rotation = parse_float(text_of(first_child(graphic, "Rotation")), "Rotation") or 0.0
    attrs = {"allow-overlap": "true", "ignore-placement": "true", "placement": "point",
             "opacity": opacity}
    if rotation:
        attrs["transform"] = f"rotate({num(rotation)})"
    for part in (graphic if graphic is not None else []):
        if not isinstance(part.tag, str):
            continue
        if local_name(part) == "ExternalGraphic":
            path = external_graphic(part)
            if path is not None:
                attrs["file"] = path
                if size:
                    attrs["height"] = num(size)
                return [mapnik_element("MarkersSymbolizer", attrs)]
        elif local_name(part) == "Mark":
            return [_mark(part, size or DEFAULT_MARK_SIZE, attrs)]
    return [_mark(None, size or DEFAULT_MARK_SIZE, attrs)]


def _mark(el: etree._Element | None, size: float, attrs: dict[str, str]) -> etree._Element:
    name = (text_of(first_child(el, "WellKnownName")) or "square").strip().lower()
    fill_el, stroke_el = first_child(el, "Fill"), first_child(el, "Stroke")
    fill = svg_params(fill_el) if fill_el is not None else None
    stroke = svg_params(stroke_el) if stroke_el is not None else None
    if fill is None and stroke is None:
        fill, stroke = {}, {}  # SE: a bare mark is grey with a black outline
    paint = {
        "fill": fill.get("fill", DEFAULT_GREY) if fill is not None else "none",
        "fill-opacity": opacity_param(fill.get("fill-opacity")) if fill is not None else "1",
        "stroke": stroke.get("stroke", "#000000") if stroke is not None else "none",
        "stroke-width": number_param(stroke.get("stroke-width"), 1.0, "stroke-width")
        if stroke is not None else "0",
        "stroke-opacity": opacity_param(stroke.get("stroke-opacity")) if stroke is not None else "1",
    }
    attrs = {**attrs, "width": num(size), "height": num(size)}
    if name == "circle":
        attrs["marker-type"] = "ellipse"
        attrs["fill"] = paint["fill"] if paint["fill"] != "none" else "#000000"
        attrs["fill-opacity"] = paint["fill-opacity"] if paint["fill"] != "none" else "0"
        if paint["stroke"] != "none":
            attrs.update({"stroke": paint["stroke"], "stroke-width": paint["stroke-width"],
                          "stroke-opacity": paint["stroke-opacity"]})
        else:
            attrs["stroke-width"] = "0"
        return mapnik_element("MarkersSymbolizer", attrs)
    attrs["file"] = mark_svg(name if name in WELL_KNOWN_MARKS else "square", size, paint)
    return mapnik_element("MarkersSymbolizer", attrs)


FONT_FAMILIES = {"serif": "DejaVu Serif", "times": "DejaVu Serif", "times new roman": "DejaVu Serif",
                 "monospace": "DejaVu Sans Mono", "courier": "DejaVu Sans Mono",
                 "courier new": "DejaVu Sans Mono"}


def text_symbolizer(el: etree._Element) -> list[etree._Element]:
    label = _label_expression(first_child(el, "Label"))
    if label is None:
        return []
    font = svg_params(first_child(el, "Font"))
    fill = svg_params(first_child(el, "Fill"))
    attrs = {
        "face-name": _face_name(font),
        "size": number_param(font.get("font-size"), 10.0, "font-size"),
        "fill": fill.get("fill", "#000000"),
        "opacity": opacity_param(fill.get("fill-opacity")),
    }
    halo = first_child(el, "Halo")
    if halo is not None:
        halo_fill = svg_params(first_child(halo, "Fill"))
        attrs["halo-radius"] = num(parse_float(text_of(first_child(halo, "Radius")), "Radius") or 1.0)
        attrs["halo-fill"] = halo_fill.get("fill", "#ffffff")
        if halo_fill.get("fill-opacity"):
            attrs["halo-opacity"] = opacity_param(halo_fill["fill-opacity"])
    placement = first_child(el, "LabelPlacement")
    line = first_child(placement, "LinePlacement")
    point = first_child(placement, "PointPlacement")
    if line is not None:
        attrs["placement"] = "line"
        offset = parse_float(text_of(first_child(line, "PerpendicularOffset")), "PerpendicularOffset")
        if offset:
            attrs["dy"] = num(-offset)
    elif point is not None:
        displacement = first_child(point, "Displacement")
        dx = parse_float(text_of(first_child(displacement, "DisplacementX")), "DisplacementX")
        dy = parse_float(text_of(first_child(displacement, "DisplacementY")), "DisplacementY")
        if dx:
            attrs["dx"] = num(dx)
        if dy:
            attrs["dy"] = num(-dy)  # SE: up is positive; mapnik: down
        rotation = parse_float(text_of(first_child(point, "Rotation")), "Rotation")
        if rotation:
            attrs["orientation"] = num(rotation)
    symbolizer = mapnik_element("TextSymbolizer", attrs)
    symbolizer.text = label
    return [symbolizer]


def _face_name(font: dict[str, str]) -> str:
    family = (font.get("font-family") or "").split(",")[0].strip().strip("'\"").lower()
    base = FONT_FAMILIES.get(family, "DejaVu Sans")
    bold = (font.get("font-weight") or "").lower() == "bold"
    italic = (font.get("font-style") or "").lower() in ("italic", "oblique")
    slant = "Italic" if base == "DejaVu Serif" else "Oblique"
    if bold and italic:
        return f"{base} Bold {slant}"
    if bold:
        return f"{base} Bold"
    if italic:
        return f"{base} {slant}"
    return f"{base} Book"


def _label_expression(el: etree._Element | None) -> str | None:
    if el is None:
        return None
    parts = []
    if el.text and el.text.strip():
        parts.append(string_literal(el.text.strip()))
    for child in el:
        if isinstance(child.tag, str):
            parts.append(expression(parse_fes(child)))
        if child.tail and child.tail.strip():
            parts.append(string_literal(child.tail.strip()))
    return " + ' ' + ".join(parts) if parts else None


def raster(el: etree._Element) -> tuple[etree._Element, list[ColorMapEntry], int | None]:
    attrs = {"opacity": opacity_param(text_of(first_child(el, "Opacity")))}
    symbolizer = mapnik_element("RasterSymbolizer", attrs)
    band = None
    channels = first_child(el, "ChannelSelection")
    gray = first_child(channels, "GrayChannel")
    if gray is not None:
        name = text_of(first_child(gray, "SourceChannelName")) or "1"
        band = int(parse_float(name, "SourceChannelName") or 1)
    color_map_el = first_child(el, "ColorMap")
    entries = []
    if color_map_el is not None:
        for entry in children_named(color_map_el, "ColorMapEntry"):
            entries.append(ColorMapEntry(
                color=entry.get("color") or "#000000",
                quantity=parse_float(entry.get("quantity"), "quantity") or 0.0,
                opacity=float(opacity_param(entry.get("opacity"))),
                label=entry.get("label")))
        entries.sort(key=lambda e: e.quantity)
        kind = (color_map_el.get("type") or "ramp").lower()
        if entries:
            symbolizer.append(_colorizer(entries, kind))
    return symbolizer, entries, band


def _colorizer(entries: list[ColorMapEntry], kind: str) -> etree._Element:
    colour = [_rgba(e.color, e.opacity) for e in entries]
    if kind == "intervals":
        # SLD: entry i paints [q(i-1), q(i)); mapnik discrete: a stop paints from its value up.
        colorizer = mapnik_element("RasterColorizer",
                                   {"default-mode": "discrete", "default-color": colour[0]})
        for previous, current in zip(entries, colour[1:], strict=False):
            etree.SubElement(colorizer, "stop", value=num(previous.quantity), color=current)
        etree.SubElement(colorizer, "stop", value=num(entries[-1].quantity), color="transparent")
        return colorizer
    if kind == "values":
        colorizer = mapnik_element("RasterColorizer",
                                   {"default-mode": "exact", "default-color": "transparent"})
        for entry, rgba in zip(entries, colour, strict=True):
            etree.SubElement(colorizer, "stop", value=num(entry.quantity), color=rgba)
        return colorizer
    colorizer = mapnik_element("RasterColorizer", {"default-mode": "linear", "default-color": colour[0]})
    for entry, rgba in zip(entries, colour, strict=True):
        etree.SubElement(colorizer, "stop", value=num(entry.quantity), color=rgba)
    return colorizer


def _rgba(color: str, opacity: float) -> str:
    value = color.strip().lstrip("#")
    if not re.fullmatch(r"[0-9a-fA-F]{6}", value):
        raise InvalidInput(f"ColorMapEntry colour {color!r} is not #RRGGBB")
    r, g, b = (int(value[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{max(0.0, min(opacity, 1.0)):.3f})"
