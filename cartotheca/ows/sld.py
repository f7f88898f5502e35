"""cartotheca.ows.sld: SLD 1.0 and SLD 1.1 / SE 1.1 styles translated to mapnik styles.

A style document is parsed once (only through ``xmlsafe.parse``) into ``UserStyle`` objects whose
rules carry mapnik symbolizer XML elements and a mapnik filter expression; ``render`` puts them
into a mapnik map, ``legend`` draws swatches from the same rules. Namespaces are matched by local
name, so SLD 1.0 (``sld:CssParameter``) and SE 1.1 (``se:SvgParameter``) read alike.

Point marks other than circles are drawn from small SVG files written once, named by their
content, into a marker directory (mapnik reads markers from files). External graphics are taken
only from ``data:`` URIs: a style never makes the server fetch anything.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import math
import os
import re
import tempfile
import urllib.parse
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from lxml import etree

from cartotheca import xmlsafe
from cartotheca.errors import InvalidInput

MAX_GRAPHIC_BYTES = 1024 * 1024
MAX_MARKER_FILES = 4096
DEFAULT_MARK_SIZE = 6.0  # SE 1.1 §11.3.2
DEFAULT_GREY = "#808080"
WELL_KNOWN_MARKS = {"circle", "square", "triangle", "star", "cross", "x"}
MARKER_DIR = Path(tempfile.gettempdir()) / f"cartotheca-markers-{os.getuid()}"


@dataclass
class ColorMapEntry:
    color: str
    quantity: float
    opacity: float = 1.0
    label: str | None = None


@dataclass
class Rule:
    name: str | None = None
    title: str | None = None
    filter: str | None = None  # mapnik expression
    else_filter: bool = False
    min_scale: float | None = None
    max_scale: float | None = None
    symbolizers: list[etree._Element] = field(default_factory=list)  # mapnik XML
    kinds: list[str] = field(default_factory=list)  # point | line | polygon | text | raster
    color_map: list[ColorMapEntry] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.title or self.name or ""


@dataclass
class UserStyle:
    name: str | None
    title: str | None
    is_default: bool
    feature_type_styles: list[list[Rule]]
    raster_band: int | None = None  # ChannelSelection GrayChannel: read this band only

    @property
    def rules(self) -> list[Rule]:
        return [rule for fts in self.feature_type_styles for rule in fts]


@dataclass
class NamedLayer:
    name: str
    user_styles: list[UserStyle]
    named_styles: list[str]


# -- document level -------------------------------------------------------------------------

def parse_document(data: str | bytes) -> list[NamedLayer]:
    """Every NamedLayer/UserLayer of an SLD document with its styles; ``InvalidInput`` if the
    document is not an SLD or uses something that cannot be drawn."""
    return _parse_cached(data if isinstance(data, str) else data.decode("utf-8", "replace"))


@lru_cache(maxsize=256)
def _parse_cached(text: str) -> list[NamedLayer]:
    root = xmlsafe.parse(text, "SLD")
    if _local(root) != "StyledLayerDescriptor":
        raise InvalidInput(f"Not an SLD document: the root element is {_local(root)}")
    version = root.get("version")
    if version not in (None, "1.0.0", "1.1.0", "1.1"):
        raise InvalidInput(f"SLD version {version} is not supported (1.0.0 and 1.1.0 are)")
    layers = []
    for layer_el in _children(root, "NamedLayer", "UserLayer"):
        name = _text(_child(layer_el, "Name")) or ""
        styles = [_user_style(el) for el in _children(layer_el, "UserStyle")]
        named = [_text(_child(el, "Name")) or "" for el in _children(layer_el, "NamedStyle")]
        layers.append(NamedLayer(name=name, user_styles=styles, named_styles=named))
    return layers


def first_user_style(data: str | bytes) -> UserStyle:
    """The style a stored SLD stands for: the one marked IsDefault, else the first."""
    styles = [s for layer in parse_document(data) for s in layer.user_styles]
    if not styles:
        raise InvalidInput("The SLD holds no UserStyle")
    return next((s for s in styles if s.is_default), styles[0])


def split_layers(data: str | bytes) -> dict[str, str]:
    """An SLD (a WMS SLD_BODY) split per NamedLayer/UserLayer name: an SLD document holding
    that layer alone, or ``"named:<style>"`` when the layer only names a stored style."""
    root = xmlsafe.parse(data, "SLD_BODY")
    if _local(root) != "StyledLayerDescriptor":
        raise InvalidInput(f"Not an SLD document: the root element is {_local(root)}")
    out = {}
    for layer_el in _children(root, "NamedLayer", "UserLayer"):
        name = _text(_child(layer_el, "Name")) or ""
        named_style = _child(layer_el, "NamedStyle")
        if _child(layer_el, "UserStyle") is None and named_style is not None:
            out[name] = "named:" + (_text(_child(named_style, "Name")) or "")
            continue
        wrapper = etree.Element(root.tag, attrib=dict(root.attrib), nsmap=root.nsmap)
        wrapper.append(copy.deepcopy(layer_el))
        out[name] = etree.tostring(wrapper, encoding="unicode")
    return out


def _user_style(el: etree._Element) -> UserStyle:
    fts_list = []
    band = None
    for fts in _children(el, "FeatureTypeStyle", "CoverageStyle"):
        rules = []
        for rule_el in _children(fts, "Rule"):
            rule, rule_band = _rule(rule_el)
            band = band or rule_band
            rules.append(rule)
        fts_list.append(rules)
    return UserStyle(name=_text(_child(el, "Name")), title=_text(_child(el, "Title")),
                     is_default=(_text(_child(el, "IsDefault")) or "").lower() in ("1", "true"),
                     feature_type_styles=fts_list, raster_band=band)


def _rule(el: etree._Element) -> tuple[Rule, int | None]:
    description = _child(el, "Description")
    title = _text(_child(el, "Title")) or _text(_child(description, "Title"))
    rule = Rule(name=_text(_child(el, "Name")), title=title)
    filter_el = _child(el, "Filter")
    if filter_el is not None:
        operands = [c for c in filter_el if isinstance(c.tag, str)]
        if len(operands) != 1:
            raise InvalidInput("An ogc:Filter holds exactly one operator")
        rule.filter = filter_expression(operands[0])
    rule.else_filter = _child(el, "ElseFilter") is not None
    rule.min_scale = _float(_text(_child(el, "MinScaleDenominator")), "MinScaleDenominator")
    rule.max_scale = _float(_text(_child(el, "MaxScaleDenominator")), "MaxScaleDenominator")
    band = None
    for sym in el:
        if not isinstance(sym.tag, str):
            continue
        kind = _local(sym)
        if kind == "PolygonSymbolizer":
            rule.symbolizers += _polygon(sym)
            rule.kinds.append("polygon")
        elif kind == "LineSymbolizer":
            rule.symbolizers += _line(sym)
            rule.kinds.append("line")
        elif kind == "PointSymbolizer":
            rule.symbolizers += _point(sym)
            rule.kinds.append("point")
        elif kind == "TextSymbolizer":
            rule.symbolizers += _text_symbolizer(sym)
            rule.kinds.append("text")
        elif kind == "RasterSymbolizer":
            symbolizer, rule.color_map, band = _raster(sym)
            rule.symbolizers.append(symbolizer)
            rule.kinds.append("raster")
    return rule, band


def mapnik_styles(style: UserStyle, prefix: str, opacity: float = 1.0) -> list[etree._Element]:
    """One mapnik ``<Style>`` per FeatureTypeStyle, named ``prefix-N``, drawn in order."""
    out = []
    for index, rules in enumerate(style.feature_type_styles):
        style_el = etree.Element("Style", name=f"{prefix}-{index}")
        if opacity < 1.0:
            style_el.set("opacity", _num(max(opacity, 0.0)))
        for rule in rules:
            style_el.append(mapnik_rule(rule))
        out.append(style_el)
    return out


def mapnik_rule(rule: Rule, *, with_filter: bool = True) -> etree._Element:
    rule_el = etree.Element("Rule")
    if with_filter:
        if rule.min_scale is not None:
            etree.SubElement(rule_el, "MinScaleDenominator").text = _num(rule.min_scale)
        if rule.max_scale is not None:
            etree.SubElement(rule_el, "MaxScaleDenominator").text = _num(rule.max_scale)
        if rule.else_filter:
            etree.SubElement(rule_el, "ElseFilter")
        elif rule.filter:
            etree.SubElement(rule_el, "Filter").text = rule.filter
    for symbolizer in rule.symbolizers:
        rule_el.append(_copy(symbolizer))
    return rule_el


def _copy(el: etree._Element) -> etree._Element:
    return etree.fromstring(etree.tostring(el))


# -- symbolizers ----------------------------------------------------------------------------

def _polygon(el: etree._Element) -> list[etree._Element]:
    fill_el, stroke_el = _child(el, "Fill"), _child(el, "Stroke")
    out = []
    if fill_el is not None or stroke_el is None:
        params = _params(fill_el)
        if _child(fill_el, "GraphicFill") is not None and "fill" not in params:
            params["fill"] = DEFAULT_GREY  # pattern fills are drawn as a plain tone
        out.append(_element("PolygonSymbolizer", {
            "fill": params.get("fill", DEFAULT_GREY),
            "fill-opacity": _opacity(params.get("fill-opacity")),
        }))
    if stroke_el is not None:
        out.append(_line_element(_params(stroke_el), _text(_child(el, "PerpendicularOffset"))))
    return out


def _line(el: etree._Element) -> list[etree._Element]:
    # A GraphicStroke is drawn as a plain line of the stroke's colour.
    return [_line_element(_params(_child(el, "Stroke")), _text(_child(el, "PerpendicularOffset")))]


def _line_element(params: dict[str, str], offset: str | None = None) -> etree._Element:
    attrs = {
        "stroke": params.get("stroke", "#000000"),
        "stroke-width": _number_param(params.get("stroke-width"), 1.0, "stroke-width"),
        "stroke-opacity": _opacity(params.get("stroke-opacity")),
        "stroke-linecap": _linecap(params.get("stroke-linecap")),
        "stroke-linejoin": _linejoin(params.get("stroke-linejoin")),
    }
    dashes = params.get("stroke-dasharray")
    if dashes:
        values = [v for v in re.split(r"[\s,]+", dashes.strip()) if v]
        numbers = [_float(v, "stroke-dasharray") for v in values]
        if numbers and any(n > 0 for n in numbers):
            if len(numbers) % 2:
                numbers *= 2  # an odd list repeats, as in SVG
            attrs["stroke-dasharray"] = ", ".join(_num(n) for n in numbers)
            if params.get("stroke-dashoffset"):
                attrs["stroke-dashoffset"] = _number_param(params["stroke-dashoffset"], 0, "offset")
    if offset:
        attrs["offset"] = _num(_float(offset, "PerpendicularOffset"))
    return _element("LineSymbolizer", attrs)


def _point(el: etree._Element) -> list[etree._Element]:
    graphic = _child(el, "Graphic")
    size = _float(_text(_child(graphic, "Size")), "Size")
    opacity = _opacity(_text(_child(graphic, "Opacity")))
    rotation = _float(_text(_child(graphic, "Rotation")), "Rotation") or 0.0
    attrs = {"allow-overlap": "true", "ignore-placement": "true", "placement": "point",
             "opacity": opacity}
    if rotation:
        attrs["transform"] = f"rotate({_num(rotation)})"
    for part in (graphic if graphic is not None else []):
        if not isinstance(part.tag, str):
            continue
        if _local(part) == "ExternalGraphic":
            path = _external_graphic(part)
            if path is not None:
                attrs["file"] = path
                if size:
                    attrs["height"] = _num(size)
                return [_element("MarkersSymbolizer", attrs)]
        elif _local(part) == "Mark":
            return [_mark(part, size or DEFAULT_MARK_SIZE, attrs)]
    return [_mark(None, size or DEFAULT_MARK_SIZE, attrs)]


def _mark(el: etree._Element | None, size: float, attrs: dict[str, str]) -> etree._Element:
    name = (_text(_child(el, "WellKnownName")) or "square").strip().lower()
    fill_el, stroke_el = _child(el, "Fill"), _child(el, "Stroke")
    fill = _params(fill_el) if fill_el is not None else None
    stroke = _params(stroke_el) if stroke_el is not None else None
    if fill is None and stroke is None:
        fill, stroke = {}, {}  # SE: a bare mark is grey with a black outline
    paint = {
        "fill": fill.get("fill", DEFAULT_GREY) if fill is not None else "none",
        "fill-opacity": _opacity(fill.get("fill-opacity")) if fill is not None else "1",
        "stroke": stroke.get("stroke", "#000000") if stroke is not None else "none",
        "stroke-width": _number_param(stroke.get("stroke-width"), 1.0, "stroke-width")
        if stroke is not None else "0",
        "stroke-opacity": _opacity(stroke.get("stroke-opacity")) if stroke is not None else "1",
    }
    attrs = {**attrs, "width": _num(size), "height": _num(size)}
    if name == "circle":
        attrs["marker-type"] = "ellipse"
        attrs["fill"] = paint["fill"] if paint["fill"] != "none" else "#000000"
        attrs["fill-opacity"] = paint["fill-opacity"] if paint["fill"] != "none" else "0"
        if paint["stroke"] != "none":
            attrs.update({"stroke": paint["stroke"], "stroke-width": paint["stroke-width"],
                          "stroke-opacity": paint["stroke-opacity"]})
        else:
            attrs["stroke-width"] = "0"
        return _element("MarkersSymbolizer", attrs)
    attrs["file"] = _mark_svg(name if name in WELL_KNOWN_MARKS else "square", size, paint)
    return _element("MarkersSymbolizer", attrs)


def _mark_svg(name: str, size: float, paint: dict[str, str]) -> str:
    # Drawn in a 100-unit box; the outline width is scaled so it stays ``stroke-width`` pixels.
    stroke_units = float(paint["stroke-width"]) * 100.0 / max(size, 1.0)
    inset = stroke_units / 2
    shape = _shape_points(name, inset)
    points = " ".join(f"{x:.2f},{y:.2f}" for x, y in shape)
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100" viewBox="0 0 100 100">'
        f'<polygon points="{points}" fill="{_svg_attr(paint["fill"])}" '
        f'fill-opacity="{paint["fill-opacity"]}" stroke="{_svg_attr(paint["stroke"])}" '
        f'stroke-width="{stroke_units:.3f}" stroke-opacity="{paint["stroke-opacity"]}" '
        'stroke-linejoin="miter"/></svg>'
    )
    return _marker_file(svg.encode(), ".svg")


def _shape_points(name: str, inset: float) -> list[tuple[float, float]]:
    lo, hi = inset, 100 - inset
    if name == "triangle":
        return [(50, lo), (hi, hi), (lo, hi)]
    if name == "star":
        outer, inner = 50 - inset, (50 - inset) * 0.382
        return [(50 + (outer if i % 2 == 0 else inner) * math.sin(math.pi * i / 5),
                 50 - (outer if i % 2 == 0 else inner) * math.cos(math.pi * i / 5)) for i in range(10)]
    if name in ("cross", "x"):
        a, b = 50 - 12.5, 50 + 12.5  # arms a quarter of the size wide
        plus = [(a, lo), (b, lo), (b, a), (hi, a), (hi, b), (b, b), (b, hi), (a, hi), (a, b),
                (lo, b), (lo, a), (a, a)]
        if name == "cross":
            return plus
        c, s = math.cos(math.pi / 4), math.sin(math.pi / 4)
        return [(50 + (x - 50) * c - (y - 50) * s, 50 + (x - 50) * s + (y - 50) * c) for x, y in plus]
    return [(lo, lo), (hi, lo), (hi, hi), (lo, hi)]


def _external_graphic(el: etree._Element) -> str | None:
    resource = _child(el, "OnlineResource")
    href = resource.get("{http://www.w3.org/1999/xlink}href") if resource is not None else None
    inline = _child(el, "InlineContent")
    if href is None and inline is not None and inline.get("encoding") == "base64":
        href = f"data:{_text(_child(el, 'Format')) or 'image/png'};base64,{_text(inline) or ''}"
    if not href or not href.startswith("data:"):
        return None  # remote or file graphics are never fetched
    header, _, payload = href[5:].partition(",")
    media_type = header.split(";")[0].strip().lower()
    try:
        data = base64.b64decode(payload, validate=False) if ";base64" in header \
            else urllib.parse.unquote_to_bytes(payload)
    except ValueError:
        return None
    if len(data) > MAX_GRAPHIC_BYTES:
        raise InvalidInput("An ExternalGraphic data URI is larger than 1 MB")
    suffix = {"image/png": ".png", "image/svg+xml": ".svg", "image/jpeg": ".jpg"}.get(media_type)
    if suffix is None:
        return None
    return _marker_file(data, suffix)


def _marker_file(data: bytes, suffix: str) -> str:
    path = MARKER_DIR / f"{hashlib.sha256(data).hexdigest()[:32]}{suffix}"
    if not path.exists():
        MARKER_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=MARKER_DIR, suffix=suffix)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
        _prune_markers()
    return str(path)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile by another process
        return 0.0


def _prune_markers() -> None:
    """Keep the marker directory bounded: SLD_BODY lets any client add graphics to it."""
    files = [p for p in MARKER_DIR.iterdir() if p.suffix in (".svg", ".png", ".jpg")]
    if len(files) <= MAX_MARKER_FILES:
        return
    files.sort(key=_mtime)
    for old in files[:len(files) // 4]:
        old.unlink(missing_ok=True)
    _parse_cached.cache_clear()  # parsed styles naming a removed file write it again


FONT_FAMILIES = {"serif": "DejaVu Serif", "times": "DejaVu Serif", "times new roman": "DejaVu Serif",
                 "monospace": "DejaVu Sans Mono", "courier": "DejaVu Sans Mono",
                 "courier new": "DejaVu Sans Mono"}


def _text_symbolizer(el: etree._Element) -> list[etree._Element]:
    label = _label_expression(_child(el, "Label"))
    if label is None:
        return []
    font = _params(_child(el, "Font"))
    fill = _params(_child(el, "Fill"))
    attrs = {
        "face-name": _face_name(font),
        "size": _number_param(font.get("font-size"), 10.0, "font-size"),
        "fill": fill.get("fill", "#000000"),
        "opacity": _opacity(fill.get("fill-opacity")),
    }
    halo = _child(el, "Halo")
    if halo is not None:
        halo_fill = _params(_child(halo, "Fill"))
        attrs["halo-radius"] = _num(_float(_text(_child(halo, "Radius")), "Radius") or 1.0)
        attrs["halo-fill"] = halo_fill.get("fill", "#ffffff")
        if halo_fill.get("fill-opacity"):
            attrs["halo-opacity"] = _opacity(halo_fill["fill-opacity"])
    placement = _child(el, "LabelPlacement")
    line = _child(placement, "LinePlacement")
    point = _child(placement, "PointPlacement")
    if line is not None:
        attrs["placement"] = "line"
        offset = _float(_text(_child(line, "PerpendicularOffset")), "PerpendicularOffset")
        if offset:
            attrs["dy"] = _num(-offset)
    elif point is not None:
        displacement = _child(point, "Displacement")
        dx = _float(_text(_child(displacement, "DisplacementX")), "DisplacementX")
        dy = _float(_text(_child(displacement, "DisplacementY")), "DisplacementY")
        if dx:
            attrs["dx"] = _num(dx)
        if dy:
            attrs["dy"] = _num(-dy)  # SE: up is positive; mapnik: down
        rotation = _float(_text(_child(point, "Rotation")), "Rotation")
        if rotation:
            attrs["orientation"] = _num(rotation)
    symbolizer = _element("TextSymbolizer", attrs)
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
        parts.append(_string_literal(el.text.strip()))
    for child in el:
        if isinstance(child.tag, str):
            parts.append(expression(child))
        if child.tail and child.tail.strip():
            parts.append(_string_literal(child.tail.strip()))
    return " + ' ' + ".join(parts) if parts else None


def _raster(el: etree._Element) -> tuple[etree._Element, list[ColorMapEntry], int | None]:
    attrs = {"opacity": _opacity(_text(_child(el, "Opacity")))}
    symbolizer = _element("RasterSymbolizer", attrs)
    band = None
    channels = _child(el, "ChannelSelection")
    gray = _child(channels, "GrayChannel")
    if gray is not None:
        name = _text(_child(gray, "SourceChannelName")) or "1"
        band = int(_float(name, "SourceChannelName") or 1)
    color_map_el = _child(el, "ColorMap")
    entries = []
    if color_map_el is not None:
        for entry in _children(color_map_el, "ColorMapEntry"):
            entries.append(ColorMapEntry(
                color=entry.get("color") or "#000000",
                quantity=_float(entry.get("quantity"), "quantity") or 0.0,
                opacity=float(_opacity(entry.get("opacity"))),
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
        colorizer = _element("RasterColorizer", {"default-mode": "discrete", "default-color": colour[0]})
        for previous, current in zip(entries, colour[1:], strict=False):
            etree.SubElement(colorizer, "stop", value=_num(previous.quantity), color=current)
        etree.SubElement(colorizer, "stop", value=_num(entries[-1].quantity), color="transparent")
        return colorizer
    if kind == "values":
        colorizer = _element("RasterColorizer", {"default-mode": "exact", "default-color": "transparent"})
        for entry, rgba in zip(entries, colour, strict=True):
            etree.SubElement(colorizer, "stop", value=_num(entry.quantity), color=rgba)
        return colorizer
    colorizer = _element("RasterColorizer", {"default-mode": "linear", "default-color": colour[0]})
    for entry, rgba in zip(entries, colour, strict=True):
        etree.SubElement(colorizer, "stop", value=_num(entry.quantity), color=rgba)
    return colorizer


def _rgba(color: str, opacity: float) -> str:
    value = color.strip().lstrip("#")
    if not re.fullmatch(r"[0-9a-fA-F]{6}", value):
        raise InvalidInput(f"ColorMapEntry colour {color!r} is not #RRGGBB")
    r, g, b = (int(value[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{max(0.0, min(opacity, 1.0)):.3f})"


# -- filters --------------------------------------------------------------------------------

COMPARISONS = {"PropertyIsEqualTo": "=", "PropertyIsNotEqualTo": "!=", "PropertyIsLessThan": "<",
               "PropertyIsGreaterThan": ">", "PropertyIsLessThanOrEqualTo": "<=",
               "PropertyIsGreaterThanOrEqualTo": ">="}
ARITHMETIC = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}


def filter_expression(el: etree._Element) -> str:
    """An OGC Filter 1.0/1.1 operator as a mapnik filter expression."""
    op = _local(el)
    operands = [c for c in el if isinstance(c.tag, str)]
    if op in ("And", "Or"):
        if len(operands) < 2:
            raise InvalidInput(f"ogc:{op} needs at least two operands")
        return "(" + f" {op.lower()} ".join(filter_expression(c) for c in operands) + ")"
    if op == "Not":
        if len(operands) != 1:
            raise InvalidInput("ogc:Not takes one operand")
        return f"(not {filter_expression(operands[0])})"
    if op in COMPARISONS:
        return _comparison(el, op, operands)
    if op == "PropertyIsLike":
        return _like(el, operands)
    if op == "PropertyIsNull":
        return f"({expression(_one(operands, op))} = null)"
    if op == "PropertyIsBetween":
        value = expression(operands[0]) if operands else None
        lower = _boundary(el, "LowerBoundary")
        upper = _boundary(el, "UpperBoundary")
        if value is None:
            raise InvalidInput("ogc:PropertyIsBetween needs a value")
        return f"({value} >= {lower} and {value} <= {upper})"
    if op in ("FeatureId", "GmlObjectId", "ResourceId"):
        return _feature_ids([el])
    if all(_local(c) in ("FeatureId", "GmlObjectId", "ResourceId") for c in [el, *operands]):
        return _feature_ids(operands)
    raise InvalidInput(f"Filter operator {op} is not supported in styles")


def _comparison(el: etree._Element, op: str, operands: list[etree._Element]) -> str:
    if len(operands) != 2:
        raise InvalidInput(f"ogc:{op} takes two expressions")
    left, right = operands
    case_insensitive = (el.get("matchCase") or "true").lower() == "false"
    if case_insensitive and op in ("PropertyIsEqualTo", "PropertyIsNotEqualTo") \
            and _local(right) == "Literal":
        regex = "(?i)^" + re.escape(_text(right) or "") + "$"
        match = f"{expression(left)}.match({_string_literal(regex)})"
        return match if op == "PropertyIsEqualTo" else f"(not {match})"
    lhs, rhs = expression(left), expression(right)
    symbol = COMPARISONS[op]
    # A numeric literal against a text column: compare both ways, as map servers coerce.
    if symbol in ("=", "!=") and _local(right) == "Literal" and _is_number(_text(right)):
        text_rhs = _string_literal((_text(right) or "").strip())
        if symbol == "=":
            return f"({lhs} = {rhs} or {lhs} = {text_rhs})"
        return f"({lhs} != {rhs} and {lhs} != {text_rhs})"
    return f"({lhs} {symbol} {rhs})"


def _like(el: etree._Element, operands: list[etree._Element]) -> str:
    if len(operands) != 2:
        raise InvalidInput("ogc:PropertyIsLike takes a property and a pattern")
    wild = el.get("wildCard", "*")
    single = el.get("singleChar", ".")
    escape = el.get("escapeChar") or el.get("escape") or "\\"
    pattern = _text(operands[1]) or ""
    regex, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if char == escape and i + 1 < len(pattern):
            regex.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        regex.append(".*" if char == wild else "." if char == single else re.escape(char))
        i += 1
    flags = "(?i)" if (el.get("matchCase") or "true").lower() == "false" else ""
    return f"{expression(operands[0])}.match({_string_literal(flags + '^' + ''.join(regex) + '$')})"


def _boundary(el: etree._Element, name: str) -> str:
    boundary = _child(el, name)
    operands = [c for c in boundary if isinstance(c.tag, str)] if boundary is not None else []
    if len(operands) != 1:
        raise InvalidInput(f"ogc:PropertyIsBetween needs ogc:{name}")
    return expression(operands[0])


def _feature_ids(elements: list[etree._Element]) -> str:
    ids = []
    for el in elements:
        fid = el.get("fid") or el.get("rid") or el.get("{http://www.opengis.net/gml}id") or ""
        number = fid.rsplit(".", 1)[-1]
        if not number.isdigit():
            raise InvalidInput(f"Feature id {fid!r} is not layer.number")
        ids.append(f"[mapnik::feature_id] = {int(number)}")
    return "(" + " or ".join(ids) + ")"


def expression(el: etree._Element) -> str:
    """An OGC expression (PropertyName, Literal, arithmetic) in mapnik's expression syntax."""
    kind = _local(el)
    if kind in ("PropertyName", "ValueReference"):
        return _property(_text(el) or "")
    if kind == "Literal":
        value = (_text(el) or "")
        return _num(float(value)) if _is_number(value) else _string_literal(value)
    if kind in ARITHMETIC:
        operands = [c for c in el if isinstance(c.tag, str)]
        if len(operands) != 2:
            raise InvalidInput(f"ogc:{kind} takes two expressions")
        return f"({expression(operands[0])} {ARITHMETIC[kind]} {expression(operands[1])})"
    raise InvalidInput(f"Expression {kind} is not supported in styles")


def _property(name: str) -> str:
    name = name.strip().split(":")[-1]
    if not name or "]" in name or "[" in name or "/" in name:
        raise InvalidInput(f"Property name {name!r} cannot be used in a style")
    return f"[{name}]"


def _string_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _is_number(value: str | None) -> bool:
    if value is None:
        return False
    try:
        number = float(value)
    except ValueError:
        return False
    return math.isfinite(number) and value.strip() == value and bool(value)


def _one(operands: list[etree._Element], op: str) -> etree._Element:
    if len(operands) != 1:
        raise InvalidInput(f"ogc:{op} takes one expression")
    return operands[0]


# -- small XML helpers ----------------------------------------------------------------------

def _local(el: etree._Element) -> str:
    return etree.QName(el).localname if isinstance(el.tag, str) else ""


def _child(el: etree._Element | None, name: str) -> etree._Element | None:
    if el is None:
        return None
    for child in el:
        if isinstance(child.tag, str) and etree.QName(child).localname == name:
            return child
    return None


def _children(el: etree._Element, *names: str) -> list[etree._Element]:
    return [c for c in el if isinstance(c.tag, str) and etree.QName(c).localname in names]


def _text(el: etree._Element | None) -> str | None:
    if el is None:
        return None
    text = "".join(el.itertext()).strip()
    return text or None


def _params(el: etree._Element | None) -> dict[str, str]:
    """CssParameter (SLD 1.0) / SvgParameter (SE 1.1) values; a PropertyName becomes a
    mapnik expression so data-driven colours and widths keep working."""
    out: dict[str, str] = {}
    if el is None:
        return out
    for param in _children(el, "CssParameter", "SvgParameter"):
        name = (param.get("name") or "").strip()
        prop = _child(param, "PropertyName")
        value = _property(_text(prop) or "") if prop is not None else _text(param)
        if name and value is not None:
            out[name] = value
    return out


def _element(tag: str, attrs: dict[str, str]) -> etree._Element:
    return etree.Element(tag, {k: v for k, v in attrs.items() if v is not None})


def _float(value: str | None, what: str) -> float | None:
    if value is None or value.strip() == "":
        return None
    try:
        number = float(value)
    except ValueError:
        raise InvalidInput(f"{what} {value!r} is not a number") from None
    if not math.isfinite(number):
        raise InvalidInput(f"{what} {value!r} is not a finite number")
    return number


def _number_param(value: str | None, default: float, what: str) -> str:
    if value is not None and value.startswith("["):
        return value  # a data-driven expression
    number = _float(value, what)
    return _num(default if number is None else number)


def _opacity(value: str | None) -> str:
    if value is not None and value.startswith("["):
        return value
    number = _float(value, "opacity")
    return _num(1.0 if number is None else max(0.0, min(number, 1.0)))


def _linecap(value: str | None) -> str:
    value = (value or "butt").strip().lower()
    return value if value in ("butt", "round", "square") else "butt"


def _linejoin(value: str | None) -> str:
    value = (value or "miter").strip().lower()
    return {"mitre": "miter", "miter": "miter", "round": "round", "bevel": "bevel"}.get(value, "miter")


def _svg_attr(value: str) -> str:
    if value == "none" or re.fullmatch(r"#[0-9a-fA-F]{3,8}|[a-zA-Z]+", value):
        return value
    raise InvalidInput(f"Colour {value!r} cannot be used in a mark")


def _num(value: float) -> str:
    return f"{value:.10g}"
