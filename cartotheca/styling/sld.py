"""cartotheca.styling.sld: SLD 1.0 and SLD 1.1 / SE 1.1 styles read into rules for mapnik.

A style document is parsed once (only through ``xmlsafe.parse``) into ``UserStyle`` objects whose
rules carry mapnik symbolizer XML elements and a mapnik filter expression (the rule's OGC filter
read by ``filters.parse`` and written by ``filters.mapnik``); the map renderer puts them into a
mapnik map, the legend draws swatches from the same rules.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import lru_cache

import mapnik
from lxml import etree

from cartotheca import xmlsafe
from cartotheca.errors import InvalidFilter, InvalidInput
from cartotheca.filters.mapnik import expression
from cartotheca.filters.parse import parse_fes
from cartotheca.styling import markers, symbolizers
from cartotheca.styling.params import num, parse_float
from cartotheca.styling.symbolizers import ColorMapEntry
from cartotheca.xmlsafe import children_named, first_child, local_name, text_of


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
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return _parse_cached(text, markers.generation())


@lru_cache(maxsize=256)
def _parse_cached(text: str, marker_generation: int) -> list[NamedLayer]:
    root = xmlsafe.parse(text, "SLD")
    if local_name(root) != "StyledLayerDescriptor":
        raise InvalidInput(f"Not an SLD document: the root element is {local_name(root)}")
    version = root.get("version")
    if version not in (None, "1.0.0", "1.1.0", "1.1"):
        raise InvalidInput(f"SLD version {version} is not supported (1.0.0 and 1.1.0 are)")
    layers = []
    for layer_el in children_named(root, "NamedLayer", "UserLayer"):
        name = text_of(first_child(layer_el, "Name")) or ""
        styles = [_user_style(el) for el in children_named(layer_el, "UserStyle")]
        named = [text_of(first_child(el, "Name")) or "" for el in children_named(layer_el, "NamedStyle")]
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
    if local_name(root) != "StyledLayerDescriptor":
        raise InvalidInput(f"Not an SLD document: the root element is {local_name(root)}")
    out = {}
    for layer_el in children_named(root, "NamedLayer", "UserLayer"):
        name = text_of(first_child(layer_el, "Name")) or ""
        named_style = first_child(layer_el, "NamedStyle")
        if first_child(layer_el, "UserStyle") is None and named_style is not None:
            out[name] = "named:" + (text_of(first_child(named_style, "Name")) or "")
            continue
        wrapper = etree.Element(root.tag, attrib=dict(root.attrib), nsmap=root.nsmap)
        wrapper.append(copy.deepcopy(layer_el))
        out[name] = etree.tostring(wrapper, encoding="unicode")
    return out


def _user_style(el: etree._Element) -> UserStyle:
    fts_list = []
    band = None
    for fts in children_named(el, "FeatureTypeStyle", "CoverageStyle"):
        rules = []
        for rule_el in children_named(fts, "Rule"):
            rule, rule_band = _rule(rule_el)
            band = band or rule_band
            rules.append(rule)
        fts_list.append(rules)
    return UserStyle(name=text_of(first_child(el, "Name")), title=text_of(first_child(el, "Title")),
                     is_default=(text_of(first_child(el, "IsDefault")) or "").lower() in ("1", "true"),
                     feature_type_styles=fts_list, raster_band=band)


def _rule(el: etree._Element) -> tuple[Rule, int | None]:
    description = first_child(el, "Description")
    title = text_of(first_child(el, "Title")) or text_of(first_child(description, "Title"))
    rule = Rule(name=text_of(first_child(el, "Name")), title=title)
    filter_el = first_child(el, "Filter")
    if filter_el is not None:
        operands = [c for c in filter_el if isinstance(c.tag, str)]
        if len(operands) != 1:
            raise InvalidInput("An ogc:Filter holds exactly one operator")
        rule.filter = filter_expression(filter_el)
    rule.else_filter = first_child(el, "ElseFilter") is not None
    rule.min_scale = parse_float(text_of(first_child(el, "MinScaleDenominator")), "MinScaleDenominator")
    rule.max_scale = parse_float(text_of(first_child(el, "MaxScaleDenominator")), "MaxScaleDenominator")
    band = None
    for sym in el:
        if not isinstance(sym.tag, str):
            continue
        kind = local_name(sym)
        if kind == "PolygonSymbolizer":
            rule.symbolizers += symbolizers.polygon(sym)
            rule.kinds.append("polygon")
        elif kind == "LineSymbolizer":
            rule.symbolizers += symbolizers.line(sym)
            rule.kinds.append("line")
        elif kind == "PointSymbolizer":
            rule.symbolizers += symbolizers.point(sym)
            rule.kinds.append("point")
        elif kind == "TextSymbolizer":
            rule.symbolizers += symbolizers.text_symbolizer(sym)
            rule.kinds.append("text")
        elif kind == "RasterSymbolizer":
            symbolizer, rule.color_map, band = symbolizers.raster(sym)
            rule.symbolizers.append(symbolizer)
            rule.kinds.append("raster")
    return rule, band


def filter_expression(filter_el: etree._Element) -> str:
    """A rule's ``ogc:Filter`` as a mapnik expression (``InvalidFilter`` if styles cannot use it)."""
    try:
        node = parse_fes(filter_el)
    except InvalidFilter as exc:
        raise InvalidFilter(f"The rule's filter is not supported: {exc.message}") from None
    return expression(node)


def mapnik_styles(style: UserStyle, prefix: str, opacity: float = 1.0) -> list[etree._Element]:
    """One mapnik ``<Style>`` per FeatureTypeStyle, named ``prefix-N``, drawn in order."""
    out = []
    for index, rules in enumerate(style.feature_type_styles):
        style_el = etree.Element("Style", name=f"{prefix}-{index}")
        if opacity < 1.0:
            style_el.set("opacity", num(max(opacity, 0.0)))
        for rule in rules:
            style_el.append(mapnik_rule(rule))
        out.append(style_el)
    return out


def mapnik_rule(rule: Rule, *, with_filter: bool = True) -> etree._Element:
    rule_el = etree.Element("Rule")
    if with_filter:
        if rule.min_scale is not None:
            etree.SubElement(rule_el, "MinScaleDenominator").text = num(rule.min_scale)
        if rule.max_scale is not None:
            etree.SubElement(rule_el, "MaxScaleDenominator").text = num(rule.max_scale)
        if rule.else_filter:
            etree.SubElement(rule_el, "ElseFilter")
        elif rule.filter:
            etree.SubElement(rule_el, "Filter").text = rule.filter
    for symbolizer in rule.symbolizers:
        rule_el.append(_copy(symbolizer))
    return rule_el


def _copy(el: etree._Element) -> etree._Element:
    return etree.fromstring(etree.tostring(el))


# -- checking uploaded styles ---------------------------------------------------------------

def validate_sld(data: bytes) -> str:
    """The SLD as text if it is SLD 1.0/1.1 with at least one rule we can draw;
    ``InvalidInput`` otherwise. The text is re-serialised (comments dropped, UTF-8)."""
    root = xmlsafe.parse(data, "SLD")
    text = etree.tostring(root, encoding="unicode")
    layers = parse_document(text)
    styles = [style for layer in layers for style in layer.user_styles]
    if not styles:
        raise InvalidInput("The SLD holds no UserStyle")
    if not any(rule.symbolizers for style in styles for rule in style.rules):
        raise InvalidInput("The SLD has no rule with a symbolizer that can be drawn")
    for style in styles:
        check_style(style)
    return text


def check_style(style: UserStyle) -> None:
    """Load the style's mapnik XML alone, so a bad colour or expression fails on upload."""
    root = etree.Element("Map", srs="epsg:4326")
    for style_el in mapnik_styles(style, "check"):
        root.append(style_el)
    try:
        mapnik.load_map_from_string(mapnik.Map(1, 1), etree.tostring(root, encoding="unicode"), True, "")
    except RuntimeError as exc:
        raise InvalidInput(f"The style cannot be drawn: {exc}") from None


def sld_style_name(text: str) -> str | None:
    """The name of the style an SLD stands for (its default or first UserStyle), if named."""
    return first_user_style(text).name
