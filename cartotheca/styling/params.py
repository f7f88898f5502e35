"""cartotheca.styling.params: reading SLD parameters and checking the values symbolizers take.

Elements are found by local name (``xmlsafe.children_named`` and friends), so SLD 1.0
(``sld:CssParameter``) and SE 1.1 (``se:SvgParameter``) read alike; a number that is not
finite is the style's error, not a drawing failure later.
"""

from __future__ import annotations

import math
import re

from lxml import etree

from cartotheca.errors import InvalidInput
from cartotheca.filters.mapnik import attribute
from cartotheca.xmlsafe import children_named, first_child, text_of


def svg_params(el: etree._Element | None) -> dict[str, str]:
    """CssParameter (SLD 1.0) / SvgParameter (SE 1.1) values; a PropertyName becomes a
    mapnik expression so data-driven colours and widths keep working."""
    out: dict[str, str] = {}
    if el is None:
        return out
    for param in children_named(el, "CssParameter", "SvgParameter"):
        name = (param.get("name") or "").strip()
        prop = first_child(param, "PropertyName")
        value = attribute(text_of(prop) or "") if prop is not None else text_of(param)
        if name and value is not None:
            out[name] = value
    return out


def mapnik_element(tag: str, attrs: dict[str, str]) -> etree._Element:
    return etree.Element(tag, {k: v for k, v in attrs.items() if v is not None})


def parse_float(value: str | None, what: str) -> float | None:
    if value is None or value.strip() == "":
        return None
    try:
        number = float(value)
    except ValueError:
        raise InvalidInput(f"{what} {value!r} is not a number") from None
    if not math.isfinite(number):
        raise InvalidInput(f"{what} {value!r} is not a finite number")
    return number


def number_param(value: str | None, default: float, what: str) -> str:
    if value is not None and value.startswith("["):
        return value  # a data-driven expression
    number = parse_float(value, what)
    return num(default if number is None else number)


def opacity_param(value: str | None) -> str:
    if value is not None and value.startswith("["):
        return value
    number = parse_float(value, "opacity")
    return num(1.0 if number is None else max(0.0, min(number, 1.0)))


def linecap(value: str | None) -> str:
    value = (value or "butt").strip().lower()
    return value if value in ("butt", "round", "square") else "butt"


def linejoin(value: str | None) -> str:
    value = (value or "miter").strip().lower()
    return {"mitre": "miter", "miter": "miter", "round": "round", "bevel": "bevel"}.get(value, "miter")


def svg_colour(value: str) -> str:
    if value == "none" or re.fullmatch(r"#[0-9a-fA-F]{3,8}|[a-zA-Z]+", value):
        return value
    raise InvalidInput(f"Colour {value!r} cannot be used in a mark")


def num(value: float) -> str:
    return f"{value:.10g}"
