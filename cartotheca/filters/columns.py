"""cartotheca.filters.columns: a filter's AST → an SQL predicate over named columns (CSW records).

Where ``sql`` compiles over a layer's features, this compiles over rows that stand for records:
each queryable property names a column (``fields``; a property whose column is not filled
compares as NULL and matches nothing), and footprints are lon/lat boxes kept in four columns, so
spatial operators are box tests against the literal's envelope (after its srsName's axis order
and a reprojection to EPSG:4326, read as pycsw reads GML): exact for BBOX and envelopes, an
approximation for other geometries. The ``any_text`` column is searched, not matched whole.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import shapely
from dateutil import parser as dateparser
from owslib import crs as owscrs
from pygeofilter import ast
from pyproj import Transformer
from sqlalchemy import ColumnElement, Float, Integer, and_, false, func, literal, not_, or_
from sqlalchemy.types import Date, DateTime

from cartotheca.errors import InvalidFilter
from cartotheca.filters.parse import FeatureIds, GeometryLiteral
from cartotheca.filters.values import like_pattern

COMPARISONS: dict[str, Callable[[Any, Any], ColumnElement[bool]]] = {
    "=": lambda a, b: a == b, "<>": lambda a, b: a != b, "<": lambda a, b: a < b,
    ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
}
FUNCTIONS = {"lower": func.lower, "upper": func.upper, "length": func.length, "trim": func.trim,
             "ltrim": func.ltrim, "rtrim": func.rtrim}
DEFAULT_SRS = "urn:x-ogc:def:crs:EPSG:6.11:4326"  # GML without srsName: latitude first, as pycsw
LIKE_WILDCARD, LIKE_SINGLE_CHAR = "%", "_"  # what CSW clients get when the attributes are missing


@dataclass
class RecordFields:
    """The columns a CSW constraint is compiled over."""

    column: Callable[[str], ColumnElement | None]  # queryable → its column; None: not queryable
    identifier: ColumnElement  # what feature/resource ids select
    any_text: str  # the key of the full-text column
    box: tuple[ColumnElement, ColumnElement, ColumnElement, ColumnElement]  # west, south, east, north


def compile_predicate(node: Any, fields: RecordFields) -> ColumnElement[bool]:
    """The filter as one SQL predicate over the record columns (``InvalidFilter`` if it cannot be)."""
    return _Compiler(fields).predicate(node)


class _Compiler:
    def __init__(self, fields: RecordFields):
        self.fields = fields

    def predicate(self, node: Any) -> ColumnElement[bool]:
        if isinstance(node, ast.And):
            return and_(self.predicate(node.lhs), self.predicate(node.rhs))
        if isinstance(node, ast.Or):
            return or_(self.predicate(node.lhs), self.predicate(node.rhs))
        if isinstance(node, ast.Not):
            return not_(self.predicate(node.sub_node))
        if isinstance(node, FeatureIds):
            return self.fields.identifier.in_(node.ids)
        if isinstance(node, ast.Comparison):
            return self.comparison(node)
        if isinstance(node, ast.Like):
            return self.like(node)
        if isinstance(node, ast.IsNull):
            column = self.operand(node.lhs)
            return column.is_not(None) if node.not_ else column.is_(None)
        if isinstance(node, ast.Between):
            column = self.property_operand(node.lhs, "PropertyIsBetween")
            inside = column.between(_coerce(column, node.low), _coerce(column, node.high))
            return not_(inside) if node.not_ else inside
        if isinstance(node, ast.SpatialComparisonPredicate | ast.SpatialDistancePredicate):
            return self.spatial(node)
        raise InvalidFilter(f"Unsupported filter operator {type(node).__name__}")

    # -- operands --------------------------------------------------------------------------

    def column(self, name: str) -> ColumnElement:
        column = self.fields.column(name)
        if column is None:
            raise InvalidFilter(f"{name} is not a queryable property")
        return column

    def operand(self, value: Any) -> ColumnElement:
        if isinstance(value, ast.Attribute):
            return self.column(value.name)
        if isinstance(value, ast.Function):
            function = FUNCTIONS.get(value.name.lower())
            if function is None or len(value.arguments) != 1:
                raise InvalidFilter(f"Unsupported function {value.name}")
            if not isinstance(value.arguments[0], ast.Attribute | ast.Function):
                raise InvalidFilter("Functions apply to a property")
            return function(self.operand(value.arguments[0]))
        if isinstance(value, ast.Node):
            raise InvalidFilter(f"Unsupported operand {type(value).__name__}")
        raise InvalidFilter("A property is expected here")

    def property_operand(self, value: Any, operator: str) -> ColumnElement:
        if not isinstance(value, ast.Attribute | ast.Function):
            raise InvalidFilter(f"{operator} applies to a property")
        return self.operand(value)

    def is_any_text(self, column: ColumnElement) -> bool:
        return getattr(column, "key", None) == self.fields.any_text

    # -- comparisons -----------------------------------------------------------------------

    def comparison(self, node: ast.Comparison) -> ColumnElement[bool]:
        lhs_is_property = isinstance(node.lhs, ast.Attribute | ast.Function)
        rhs_is_property = isinstance(node.rhs, ast.Attribute | ast.Function)
        if lhs_is_property == rhs_is_property or isinstance(node.lhs if rhs_is_property else node.rhs,
                                                              ast.Node):
            raise InvalidFilter(f"{type(node).__name__} compares a property with a literal")
        column = self.operand(node.lhs if lhs_is_property else node.rhs)
        text = node.rhs if lhs_is_property else node.lhs
        op = node.op.value
        if self.is_any_text(column) and op in ("=", "<>"):
            # "AnyText = word" is a text search (CSW 3's ``q`` comes as one), as pycsw has it
            found = column.ilike(f"%{_escape_like(str(text))}%", escape="\\")
            return found if op == "=" else not_(found)
        value = _coerce(column, text)
        return COMPARISONS[op](column, value) if lhs_is_property else COMPARISONS[op](literal(value), column)

    def like(self, node: ast.Like) -> ColumnElement[bool]:
        if isinstance(node.pattern, ast.Node):
            raise InvalidFilter("PropertyIsLike compares a property with a literal")
        column = self.property_operand(node.lhs, "PropertyIsLike")
        wildcard = LIKE_WILDCARD if node.wildcard is None else node.wildcard
        single = LIKE_SINGLE_CHAR if node.singlechar is None else node.singlechar
        pattern = like_pattern(str(node.pattern), wildcard, single, node.escapechar)
        if self.is_any_text(column):
            # AnyText is a search, not a match of the whole text (pycsw pads it the same way)
            pattern = "%" + pattern.strip("%") + "%"
        if self.is_any_text(column) or node.nocase:
            found = column.ilike(pattern, escape="\\")
        else:
            found = column.like(pattern, escape="\\")
        return not_(found) if node.not_ else found

    # -- spatial ---------------------------------------------------------------------------

    def spatial(self, node: Any) -> ColumnElement[bool]:
        name = type(node).__name__
        west, south, east, north = _envelope(node.rhs, name)
        if isinstance(node, ast.SpatialDistancePredicate):
            distance = float(node.distance)
            if not math.isfinite(distance) or distance < 0:
                raise InvalidFilter(f"{name} needs a Distance")
            west, south, east, north = west - distance, south - distance, east + distance, north + distance
        x0, y0, x1, y1 = self.fields.box
        present = x0.is_not(None)
        touching = and_(present, x0 <= east, x1 >= west, y0 <= north, y1 >= south)
        interiors = and_(present, x0 < east, x1 > west, y0 < north, y1 > south)
        within = and_(present, x0 >= west, x1 <= east, y0 >= south, y1 <= north)
        contains = and_(present, x0 <= west, x1 >= east, y0 <= south, y1 >= north)
        tests: dict[type, ColumnElement[bool]] = {
            ast.GeometryIntersects: touching, ast.DistanceWithin: touching,
            ast.GeometryDisjoint: not_(touching), ast.DistanceBeyond: not_(touching),
            ast.GeometryWithin: within, ast.GeometryContains: contains,
            ast.GeometryEquals: and_(present, x0 == west, x1 == east, y0 == south, y1 == north),
            ast.GeometryTouches: and_(touching, not_(interiors)),
            ast.GeometryOverlaps: and_(interiors, not_(within), not_(contains)),
            # two areas never cross (crossing needs a lower dimension on one side)
            ast.GeometryCrosses: false(),
        }
        if type(node) not in tests:
            raise InvalidFilter(f"Unsupported filter operator {name}")
        return tests[type(node)]


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _coerce(column: ColumnElement, value: Any) -> Any:
    """The literal as the column's type, so dates compare as dates on every database."""
    kind = getattr(column, "type", None)
    text = value if isinstance(value, str) else str(value)
    try:
        if isinstance(kind, DateTime | Date):
            instant = dateparser.isoparse(text.strip())
            # timestamps are kept as naive UTC
            return instant.astimezone(dt.UTC).replace(tzinfo=None) if instant.tzinfo else instant
        if isinstance(kind, Float):
            return float(text)
        if isinstance(kind, Integer):
            return int(text)
    except (ValueError, OverflowError):
        raise InvalidFilter(f"{text!r} is not a value of this property") from None
    return value if isinstance(value, str) else text


def _envelope(value: Any, operator: str) -> tuple[float, float, float, float]:
    """The literal's lon/lat bounds: its srsName's axis order, then reprojected to EPSG:4326."""
    if not isinstance(value, GeometryLiteral):
        raise InvalidFilter(f"Unreadable geometry in {operator}")
    try:
        srs = owscrs.Crs(value.srs or DEFAULT_SRS)
        geometry = value.geometry
        if srs.axisorder == "yx":
            geometry = shapely.transform(geometry, lambda c: c[:, ::-1])
        if srs.code not in (4326, "CRS84"):
            transformer = Transformer.from_crs(f"epsg:{srs.code}", "epsg:4326", always_xy=True)
            geometry = shapely.transform(
                geometry, lambda c: np.column_stack(transformer.transform(c[:, 0], c[:, 1])))
        bounds = tuple(float(v) for v in geometry.bounds)
    except Exception as exc:  # owslib and pyproj raise plain exceptions for unknown CRSs
        raise InvalidFilter(f"Unreadable geometry in {operator}: {exc}") from None
    if not all(map(math.isfinite, bounds)):
        raise InvalidFilter(f"Empty geometry in {operator}")
    west, south, east, north = bounds
    return west, south, east, north

