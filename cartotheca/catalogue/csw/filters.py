"""cartotheca.catalogue.csw.filters: a CSW constraint (OGC Filter 1.1 or 2.0) → an SQL predicate.

pycsw parses and checks every constraint (FILTER, CQL_TEXT, the ``q``/``bbox`` parameters of
CSW 3) into an OGC Filter, and also renders it as SQL text of its own. That text is not run
here: its spatial tests call functions the catalogue database does not have (it keeps no
PostGIS), and it pastes some client values (``ogc:Distance``, GML coordinates) into the SQL.
The filter pycsw parsed (``constraint["_dict"]``) is compiled here instead, into SQLAlchemy
over the record columns, with every value bound.

Footprints are the lon/lat boxes the catalogue keeps, and a query geometry is taken by its
envelope (in EPSG:4326, after pycsw's GML reading, which honours srsName and axis order), so the
spatial operators are box tests: exact for BBOX and envelopes, an approximation for others.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from typing import Any

import shapely.wkt
import xmltodict
from dateutil import parser as dateparser
from lxml import etree
from pycsw.ogc.gml import gml3, gml32
from shapely.errors import ShapelyError
from sqlalchemy import ColumnElement, Float, Integer, and_, false, func, literal, not_, null, or_
from sqlalchemy.sql.selectable import Subquery
from sqlalchemy.types import Date, DateTime

from cartotheca import xmlsafe
from cartotheca.filters.values import like_pattern

GML = "http://www.opengis.net/gml"
GML32 = "http://www.opengis.net/gml/3.2"
COMPARISONS: dict[str, Callable[[Any, Any], ColumnElement[bool]]] = {
    "PropertyIsEqualTo": lambda a, b: a == b,
    "PropertyIsNotEqualTo": lambda a, b: a != b,
    "PropertyIsLessThan": lambda a, b: a < b,
    "PropertyIsGreaterThan": lambda a, b: a > b,
    "PropertyIsLessThanOrEqualTo": lambda a, b: a <= b,
    "PropertyIsGreaterThanOrEqualTo": lambda a, b: a >= b,
}
FUNCTIONS = {"lower": func.lower, "upper": func.upper, "length": func.length, "trim": func.trim,
             "ltrim": func.ltrim, "rtrim": func.rtrim}
SPATIAL = {"BBOX", "Intersects", "Disjoint", "Within", "Contains", "Equals", "Touches", "Overlaps",
           "Crosses", "DWithin", "Beyond"}
ID_ATTRIBUTES = ("fid", "rid", f"{{{GML}}}id", f"{{{GML32}}}id")


class InvalidFilter(ValueError):
    """The constraint cannot be answered; the message says why (an InvalidParameterValue)."""


def filter_element(parsed: Mapping[str, Any], namespaces: Mapping[str, str]) -> etree._Element:
    """The Filter element back from pycsw's dictionary form (``constraint["_dict"]``)."""
    ((root, body),) = parsed.items()
    body = dict(body or {})
    declared = dict(body.get("@xmlns") or {})
    body["@xmlns"] = {**namespaces, **declared}
    text = xmltodict.unparse({root: body}, full_document=False)
    return xmlsafe.parse(text, "Filter constraint")


class FilterCompiler:
    """Compile one Filter over ``records`` (see ``records.records_select``).

    ``queryables`` is pycsw's ``{name: {"dbcol": column name}}`` of every queryable property;
    a queryable whose column the catalogue does not fill compares as NULL (matches nothing).
    """

    def __init__(self, records: Subquery, queryables: Mapping[str, Mapping[str, str]],
                 nsmap: Mapping[str, str], anytext_column: str):
        self.records = records
        self.queryables = queryables
        self.nsmap = dict(nsmap)
        self.anytext = anytext_column

    def compile(self, root: etree._Element) -> ColumnElement[bool]:
        children = _elements(root)
        if len(children) == 1:
            return self._node(children[0])
        ids = self._ids(children)
        if ids is not None:
            return ids
        raise InvalidFilter("A Filter holds one operator")

    # -- structure -------------------------------------------------------------------------

    def _node(self, el: etree._Element) -> ColumnElement[bool]:
        name = etree.QName(el).localname
        if name in ("And", "Or"):
            parts = [self._node(child) for child in _elements(el)]
            if len(parts) < 2:
                raise InvalidFilter(f"{name} needs two operands or more")
            return and_(*parts) if name == "And" else or_(*parts)
        if name == "Not":
            (child,) = _elements(el) or [None]
            if child is None:
                raise InvalidFilter("Not needs an operand")
            return not_(self._node(child))
        if name in COMPARISONS:
            return self._comparison(el, name)
        if name == "PropertyIsLike":
            return self._like(el)
        if name == "PropertyIsNull":
            return self._operands(el)[0].is_(None)
        if name == "PropertyIsBetween":
            return self._between(el)
        if name in SPATIAL:
            return self._spatial(el, name)
        ids = self._ids([el])
        if ids is not None:
            return ids
        raise InvalidFilter(f"Unsupported filter operator {name}")

    def _ids(self, elements: list[etree._Element]) -> ColumnElement[bool] | None:
        values = [next((el.get(a) for a in ID_ATTRIBUTES if el.get(a)), None) for el in elements]
        if not elements or any(etree.QName(el).localname not in ("FeatureId", "GmlObjectId", "ResourceId")
                               for el in elements) or None in values:
            return None
        return self._column("pycsw:Identifier").in_(values)

    # -- operands --------------------------------------------------------------------------

    def _column(self, name: str) -> ColumnElement:
        queryable = self.queryables.get(name)
        if queryable is None:
            raise InvalidFilter(f"{name} is not a queryable property")
        # pycsw's flattened queryables hold {"dbcol": ...} entries and the bare core mappings
        column = queryable if isinstance(queryable, str) else queryable["dbcol"]
        return self.records.c[column] if column in self.records.c else null()

    def _property(self, el: etree._Element) -> ColumnElement:
        return self._column((el.text or "").strip())

    def _operand(self, el: etree._Element) -> tuple[str, Any]:
        name = etree.QName(el).localname
        if name in ("PropertyName", "ValueReference"):
            return "property", self._property(el)
        if name == "Literal":
            return "literal", el.text or ""
        if name == "Function":
            function = FUNCTIONS.get((el.get("name") or "").lower())
            args = _elements(el)
            if function is None or len(args) != 1:
                raise InvalidFilter(f"Unsupported function {el.get('name')}")
            kind, value = self._operand(args[0])
            if kind != "property":
                raise InvalidFilter("Functions apply to a property")
            return "property", function(value)
        raise InvalidFilter(f"Unsupported operand {name}")

    def _operands(self, el: etree._Element) -> list[Any]:
        return [value for _kind, value in (self._operand(child) for child in _elements(el))]

    def _property_and_literal(self, el: etree._Element) -> tuple[ColumnElement, str]:
        operands = [self._operand(child) for child in _elements(el)]
        kinds = [kind for kind, _value in operands]
        if sorted(kinds) != ["literal", "property"]:
            raise InvalidFilter(f"{etree.QName(el).localname} compares a property with a literal")
        column = next(v for k, v in operands if k == "property")
        value = next(v for k, v in operands if k == "literal")
        return column, value

    # -- comparisons -----------------------------------------------------------------------

    def _comparison(self, el: etree._Element, name: str) -> ColumnElement[bool]:
        column, text = self._property_and_literal(el)
        if getattr(column, "key", None) == self.anytext and name in ("PropertyIsEqualTo",
                                                                     "PropertyIsNotEqualTo"):
            # "AnyText = word" is a text search (CSW 3's ``q`` comes as one), as pycsw has it
            found = column.ilike(f"%{_escape_like(text)}%", escape="\\")
            return found if name == "PropertyIsEqualTo" else not_(found)
        value = _coerce(column, text)
        if el.get("matchCase", "true").lower() == "false" and isinstance(value, str):
            column, value = func.lower(column), value.lower()
        first_is_literal = etree.QName(_elements(el)[0]).localname == "Literal"
        return COMPARISONS[name](literal(value), column) if first_is_literal else \
            COMPARISONS[name](column, value)

    def _like(self, el: etree._Element) -> ColumnElement[bool]:
        column, text = self._property_and_literal(el)
        pattern = like_pattern(text, el.get("wildCard") or "%", el.get("singleChar") or "_",
                               el.get("escapeChar") or el.get("escape") or "\\")
        is_anytext = getattr(column, "key", None) == self.anytext
        if is_anytext:
            # AnyText is a search, not a match of the whole text (pycsw pads it the same way)
            pattern = "%" + pattern.strip("%") + "%"
        if is_anytext or el.get("matchCase", "true").lower() == "false":
            return column.ilike(pattern, escape="\\")
        return column.like(pattern, escape="\\")

    def _between(self, el: etree._Element) -> ColumnElement[bool]:
        children = {etree.QName(c).localname: c for c in _elements(el)}
        lower, upper = children.get("LowerBoundary"), children.get("UpperBoundary")
        subject = [c for name, c in children.items() if name not in ("LowerBoundary", "UpperBoundary")]
        if lower is None or upper is None or len(subject) != 1:
            raise InvalidFilter("PropertyIsBetween needs a property and two boundaries")
        kind, column = self._operand(subject[0])
        if kind != "property":
            raise InvalidFilter("PropertyIsBetween applies to a property")
        bounds = []
        for boundary in (lower, upper):
            values = [self._operand(c) for c in _elements(boundary)]
            if len(values) != 1 or values[0][0] != "literal":
                raise InvalidFilter("A boundary is a literal")
            bounds.append(_coerce(column, values[0][1]))
        return column.between(*bounds)

    # -- spatial ---------------------------------------------------------------------------

    def _spatial(self, el: etree._Element, name: str) -> ColumnElement[bool]:
        west, south, east, north = _envelope(el, self.nsmap)
        box = [self.records.c[c] for c in ("ll_minx", "ll_miny", "ll_maxx", "ll_maxy")]
        if name in ("DWithin", "Beyond"):
            distance = _distance(el)
            west, south, east, north = west - distance, south - distance, east + distance, north + distance
        x0, y0, x1, y1 = box
        present = x0.is_not(None)
        touching = and_(present, x0 <= east, x1 >= west, y0 <= north, y1 >= south)
        interiors = and_(present, x0 < east, x1 > west, y0 < north, y1 > south)
        within = and_(present, x0 >= west, x1 <= east, y0 >= south, y1 <= north)
        contains = and_(present, x0 <= west, x1 >= east, y0 <= south, y1 >= north)
        tests = {
            "BBOX": touching, "Intersects": touching, "DWithin": touching,
            "Disjoint": not_(touching), "Beyond": not_(touching),
            "Within": within, "Contains": contains,
            "Equals": and_(present, x0 == west, x1 == east, y0 == south, y1 == north),
            "Touches": and_(touching, not_(interiors)),
            "Overlaps": and_(interiors, not_(within), not_(contains)),
            # two areas never cross (crossing needs a lower dimension on one side)
            "Crosses": false(),
        }
        return tests[name]


def _elements(el: etree._Element) -> list[etree._Element]:
    return [child for child in el if isinstance(child.tag, str)]


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _coerce(column: ColumnElement, text: str) -> Any:
    """The literal as the column's type, so dates compare as dates on every database."""
    kind = getattr(column, "type", None)
    try:
        if isinstance(kind, (DateTime, Date)):
            value = dateparser.isoparse(text.strip())
            # timestamps are kept as naive UTC
            return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value
        if isinstance(kind, Float):
            return float(text)
        if isinstance(kind, Integer):
            return int(text)
    except (ValueError, OverflowError):
        raise InvalidFilter(f"{text!r} is not a value of this property") from None
    return text


def _envelope(el: etree._Element, nsmap: Mapping[str, str]) -> tuple[float, float, float, float]:
    uses_gml32 = any(child.tag.startswith(f"{{{GML32}}}") for child in _elements(el))
    try:
        geometry = (gml32 if uses_gml32 else gml3).Geometry(el, dict(nsmap))
        bounds = shapely.wkt.loads(geometry.wkt).bounds
    except (RuntimeError, IndexError, ShapelyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidFilter(f"Unreadable geometry in {etree.QName(el).localname}: {exc}") from None
    if not all(map(math.isfinite, bounds)):
        raise InvalidFilter(f"Empty geometry in {etree.QName(el).localname}")
    return bounds


def _distance(el: etree._Element) -> float:
    distance = next((c for c in _elements(el) if etree.QName(c).localname == "Distance"), None)
    try:
        value = float((distance.text or "").strip()) if distance is not None else None
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value < 0:
        raise InvalidFilter(f"{etree.QName(el).localname} needs a Distance")
    return value
