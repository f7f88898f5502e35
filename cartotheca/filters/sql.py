"""cartotheca.filters.sql: a filter's AST → a store query over a layer's table (WFS).

A filter becomes a ``Selection``: an SQLAlchemy predicate over the layer's table (attributes,
run by the database), a shapely mask for spatial operators (run on the geometries that pass the
bbox prefilter, which the store answers from its spatial index) and feature ids. Values are
always bound parameters, never pasted into SQL text.

A spatial test nested under OR/NOT together with attribute tests cannot be split that way; it
is answered first (the ids of the features it selects) and enters the SQL as ``fid IN (...)``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pygeofilter import ast, values
from pyproj import CRS
from sqlalchemy import ColumnElement, Table, and_, false, func, literal, not_, or_, true

from cartotheca.errors import InvalidFilter
from cartotheca.filters.parse import FeatureIds, parse_fids
from cartotheca.filters.spatial import Bounds, Mask, SpatialTests, Srs
from cartotheca.filters.values import (
    CaseSensitiveLike,
    coerce,
    compare,
    date_compare,
    like_pattern,
    period,
)

Sql = Callable[[Table], ColumnElement[bool]]
GEOMETRY_NAMES = ("the_geom", "geom", "geometry", "shape", "wkb_geometry")
# FES requires ``wildCard`` and ``singleChar``; GeoServer reads these when they are missing
LIKE_WILDCARD, LIKE_SINGLE_CHAR = "*", "?"


# -- what compiling needs to know about the layer -------------------------------------------


@dataclass
class FilterLayer:
    table: Table  # the store's table: attribute names and types
    geometry_column: str
    fid_column: str
    type_name: str  # bare layer name, the prefix of feature ids ("points.3")
    native_crs: CRS
    # srsName → EPSG code and axis order (the OGC services' own rules); raises ValueError
    parse_srs: Callable[[str], Srs]
    default_srs: Srs | None = None  # CRS of filter geometries without srsName
    # Answers a spatial test on its own (ids of the matching features); lets spatial tests
    # combine with attribute tests under OR/NOT.
    spatial_fids: Callable[[Mask, Bounds | None], list[int]] | None = None
    # Attribute name → xsd type from the catalogue; the store's column types can hide what
    # they hold (GeoPackage dates are text columns)
    field_types: dict[str, str] = field(default_factory=dict)


XSD_PYTHON: dict[str, type] = {
    "xsd:int": int, "xsd:long": int, "xsd:short": int, "xsd:integer": int, "xsd:byte": int,
    "xsd:double": float, "xsd:float": float, "xsd:decimal": float, "xsd:boolean": bool,
    "xsd:string": str, "xsd:date": dt.date, "xsd:dateTime": dt.datetime,
}


@dataclass
class Selection:
    """A compiled filter. Parts are AND-ed; None means no restriction."""

    where: Sql | None = None
    geometry_predicate: Mask | None = None
    bbox: Bounds | None = None  # native CRS prefilter (a necessary condition of the mask)
    fids: list[int] | None = None

    def and_(self, other: Selection) -> Selection:
        return Selection(
            where=_and_sql(self.where, other.where),
            geometry_predicate=_and_mask(self.geometry_predicate, other.geometry_predicate),
            bbox=_narrow(self.bbox, other.bbox),
            fids=_and_fids(self.fids, other.fids),
        )


def _and_sql(a: Sql | None, b: Sql | None) -> Sql | None:
    if a is None or b is None:
        return a or b
    return lambda t: and_(a(t), b(t))


def _and_mask(a: Mask | None, b: Mask | None) -> Mask | None:
    if a is None or b is None:
        return a or b
    return lambda g: a(g) & b(g)


def _and_fids(a: list[int] | None, b: list[int] | None) -> list[int] | None:
    if a is None or b is None:
        return b if a is None else a
    keep = set(b)
    return [f for f in a if f in keep]


def _narrow(a: Bounds | None, b: Bounds | None) -> Bounds | None:
    """The prefilter box of a conjunction: the overlap of both boxes (either one alone is a
    necessary condition too, which is all a prefilter needs when they do not overlap)."""
    if a is None or b is None:
        return a or b
    out = (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
    if out[0] > out[2] or out[1] > out[3]:
        return a
    return out


def _union_bounds(a: Bounds | None, b: Bounds | None) -> Bounds | None:
    if a is None or b is None:
        return None
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


# -- compiling ------------------------------------------------------------------------------


@dataclass
class _Part:
    """A conjunction of an SQL predicate and a geometry mask (each optional)."""

    sql: Sql | None = None
    mask: Mask | None = None
    bbox: Bounds | None = None
    fids: list[int] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def pure_sql(self) -> bool:
        return self.mask is None and self.fids is None

    @property
    def pure_mask(self) -> bool:
        return self.sql is None and self.fids is None and self.mask is not None


def compile_filter(node: ast.Node, layer: FilterLayer) -> Selection:
    part = _Compiler(layer).part(node)
    return Selection(where=part.sql, geometry_predicate=part.mask, bbox=part.bbox, fids=part.fids)


class _Compiler:
    def __init__(self, layer: FilterLayer):
        self.layer = layer
        self.columns = {c.name: c for c in layer.table.columns}
        self.lower_columns = {c.name.lower(): c.name for c in layer.table.columns}
        self.spatial_tests = SpatialTests(layer.native_crs, layer.default_srs, layer.parse_srs)

    # -- structure --

    def part(self, node: Any) -> _Part:
        if isinstance(node, FeatureIds):
            return _Part(fids=parse_fids(node.ids, self.layer.type_name))
        if isinstance(node, ast.And):
            return self._and(self.part(node.lhs), self.part(node.rhs))
        if isinstance(node, ast.Or):
            return self._or(self.part(node.lhs), self.part(node.rhs))
        if isinstance(node, ast.Not):
            return self._not(node.sub_node)
        if isinstance(node, ast.Include):
            return _Part(sql=(lambda t: false()) if node.not_ else (lambda t: true()))
        spatial = self.spatial(node)
        if spatial is not None:
            return spatial
        return _Part(sql=self.predicate(node))

    def _and(self, a: _Part, b: _Part) -> _Part:
        return _Part(sql=_and_sql(a.sql, b.sql), mask=_and_mask(a.mask, b.mask),
                     bbox=_narrow(a.bbox, b.bbox), fids=_and_fids(a.fids, b.fids))

    def _or(self, a: _Part, b: _Part) -> _Part:
        if a.pure_sql and b.pure_sql and a.sql and b.sql:
            sa, sb = a.sql, b.sql
            return _Part(sql=lambda t: or_(sa(t), sb(t)))
        if a.pure_mask and b.pure_mask and a.mask and b.mask:
            ma, mb = a.mask, b.mask
            return _Part(mask=lambda g: ma(g) | mb(g), bbox=_union_bounds(a.bbox, b.bbox))
        sa, sb = self.as_sql(a), self.as_sql(b)
        return _Part(sql=lambda t: or_(sa(t), sb(t)))

    def _not(self, sub: Any) -> _Part:
        if isinstance(sub, ast.Not):
            return self.part(sub.sub_node)
        # FES BBOX arrives as NOT(DISJOINT(...)): keep it an intersects test with a prefilter
        if isinstance(sub, ast.GeometryDisjoint):
            intersects = self.spatial(ast.GeometryIntersects(sub.lhs, sub.rhs))
            if intersects is not None:
                return intersects
        inner = self.part(sub)
        if inner.pure_sql and inner.sql is not None:
            s = inner.sql
            return _Part(sql=lambda t: not_(s(t)))
        if inner.pure_mask and inner.mask is not None:
            m = inner.mask
            return _Part(mask=lambda g: ~m(g))
        s = self.as_sql(inner)
        return _Part(sql=lambda t: not_(s(t)))

    def as_sql(self, part: _Part) -> Sql:
        """The part as one SQL predicate: spatial tests become ``fid IN (ids)``."""
        sql = part.sql
        fid = self.layer.fid_column
        if part.mask is not None:
            if self.layer.spatial_fids is None:
                raise InvalidFilter("Spatial tests cannot be combined with OR/NOT here")
            ids = self.layer.spatial_fids(part.mask, part.bbox)
            sql = _and_sql(sql, lambda t: t.c[fid].in_(ids))
        if part.fids is not None:
            fids = part.fids
            sql = _and_sql(sql, lambda t: t.c[fid].in_(fids))
        return sql or (lambda t: true())

    # -- attributes --

    def column_name(self, attribute: ast.Attribute) -> str:
        name = attribute.name.rsplit("/", 1)[-1].rpartition(":")[2].strip('"')
        if name in self.columns:
            return name
        if name.lower() in self.lower_columns:
            return self.lower_columns[name.lower()]
        raise InvalidFilter(f"Unknown property {attribute.name!r}")

    def is_geometry(self, value: Any) -> bool:
        if value is None:
            return True
        if not isinstance(value, ast.Attribute):
            return False
        name = value.name.rsplit("/", 1)[-1].rpartition(":")[2].strip('"')
        if name == self.layer.geometry_column or name.lower() in GEOMETRY_NAMES:
            return True
        return name not in self.columns and name.lower() not in self.lower_columns

    def python_type(self, name: str) -> type | None:
        declared = XSD_PYTHON.get(self.layer.field_types.get(name, ""))
        if declared is not None:
            return declared
        try:
            return self.columns[name].type.python_type
        except (NotImplementedError, AttributeError):
            return None

    def expression(self, value: Any, hint: type | None = None) -> Callable[[Table], Any]:
        """An SQL expression builder for an attribute, literal, arithmetic or function."""
        if isinstance(value, ast.Attribute):
            name = self.column_name(value)
            return lambda t: t.c[name]
        if isinstance(value, ast.Arithmetic):
            lhs, rhs = self.expression(value.lhs, float), self.expression(value.rhs, float)
            op = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
                  "/": lambda a, b: a / b}[value.op.value]
            return lambda t: op(lhs(t), rhs(t))
        if isinstance(value, ast.Function):
            return self.function(value)
        coerced = coerce(value, hint)
        return lambda t: literal(coerced)

    def function(self, node: ast.Function) -> Callable[[Table], Any]:
        name = node.name.lower()
        args = [self.expression(a) for a in node.arguments]
        simple = {"strtolowercase": func.lower, "lower": func.lower, "strtouppercase": func.upper,
                  "upper": func.upper, "strlength": func.length, "length": func.length,
                  "abs": func.abs}
        if name in simple and len(args) == 1:
            sql_func, arg = simple[name], args[0]
            return lambda t: sql_func(arg(t))
        raise InvalidFilter(f"Unsupported filter function {node.name!r}")

    def operand_type(self, value: Any) -> type | None:
        if isinstance(value, ast.Attribute):
            return self.python_type(self.column_name(value))
        return None

    def predicate(self, node: Any) -> Sql:
        if isinstance(node, ast.Comparison):
            return self.comparison(node)
        if isinstance(node, ast.Between):
            kind = self.operand_type(node.lhs)
            lhs = self.expression(node.lhs)
            low, high = coerce(node.low, kind), coerce(node.high, kind)
            if node.not_:
                return lambda t: not_(lhs(t).between(low, high))
            return lambda t: lhs(t).between(low, high)
        if isinstance(node, ast.Like):
            return self.like(node)
        if isinstance(node, ast.In):
            kind = self.operand_type(node.lhs)
            lhs = self.expression(node.lhs)
            options = [coerce(v, kind) for v in node.sub_nodes]
            if node.not_:
                return lambda t: lhs(t).not_in(options)
            return lambda t: lhs(t).in_(options)
        if isinstance(node, ast.IsNull):
            lhs = self.expression(node.lhs)
            return (lambda t: lhs(t).is_not(None)) if node.not_ else (lambda t: lhs(t).is_(None))
        if isinstance(node, ast.Exists):
            known = isinstance(node.lhs, ast.Attribute) and (
                node.lhs.name in self.columns or node.lhs.name.lower() in self.lower_columns)
            return (lambda t: true()) if known != node.not_ else (lambda t: false())
        if isinstance(node, ast.TemporalPredicate):
            return self.temporal(node)
        raise InvalidFilter(f"Unsupported filter operator {type(node).__name__}")

    def comparison(self, node: ast.Comparison) -> Sql:
        lhs_node, rhs_node, op = node.lhs, node.rhs, node.op.value
        if not isinstance(lhs_node, ast.Node) and isinstance(rhs_node, ast.Node):
            lhs_node, rhs_node = rhs_node, lhs_node  # literal on the left: flip the operator
            op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
        kind = self.operand_type(lhs_node) or self.operand_type(rhs_node)
        if kind is dt.date and isinstance(rhs_node, dt.datetime | str) and \
                isinstance(lhs_node, ast.Attribute):
            instant = coerce(rhs_node, dt.datetime)
            name = self.column_name(lhs_node)
            return lambda t: date_compare(t.c[name], op, instant)
        lhs, rhs = self.expression(lhs_node, kind), self.expression(rhs_node, kind)
        return lambda t: compare(lhs(t), op, rhs(t))

    def like(self, node: ast.Like) -> Sql:
        lhs = self.expression(node.lhs)
        single = LIKE_SINGLE_CHAR if node.singlechar is None else node.singlechar
        wildcard = LIKE_WILDCARD if node.wildcard is None else node.wildcard
        pattern = like_pattern(str(node.pattern), wildcard, single, node.escapechar)
        if node.nocase:
            sql = lambda t: lhs(t).ilike(pattern, escape="\\")  # noqa: E731
        else:
            sql = lambda t: CaseSensitiveLike(lhs(t), pattern)  # noqa: E731
        return (lambda t: not_(sql(t))) if node.not_ else sql

    def temporal(self, node: ast.TemporalPredicate) -> Sql:
        if not isinstance(node.lhs, ast.Attribute):
            raise InvalidFilter("A temporal operator compares a property with a time")
        name = self.column_name(node.lhs)
        kind = self.python_type(name)
        start, end = period(node.rhs)
        op = type(node)
        tests: dict[type, list[tuple[str, Any]]] = {
            ast.TimeAfter: [(">", end)], ast.TimeBefore: [("<", start)],
            ast.TimeDuring: [(">", start), ("<", end)], ast.TimeEquals: [("=", start)]
            if start == end else [("=", start), ("=", end)],
            ast.TimeBeforeOrDuring: [("<", end)], ast.TimeDuringOrAfter: [(">", start)],
            ast.TimeBegins: [("=", start)], ast.TimeEnds: [("=", end)],
            ast.TimeMeets: [("=", start)], ast.TimeMetBy: [("=", end)],
        }
        if op is ast.TimeDisjoint:
            during = self.temporal(ast.TimeDuring(node.lhs, values.Interval(start, end)))
            return lambda t: not_(during(t)) if start != end else not_(t.c[name] == start)
        if op not in tests:
            raise InvalidFilter(f"Unsupported temporal operator {op.__name__}")
        conditions = tests[op]

        def build(t: Table) -> ColumnElement[bool]:
            column = t.c[name]
            if kind is dt.date:
                return and_(*(date_compare(column, o, v) for o, v in conditions))
            return and_(*(compare(column, o, literal(coerce(v, kind))) for o, v in conditions))

        return build

    def spatial(self, node: Any) -> _Part | None:
        compiled = self.spatial_tests.compile(node, self.is_geometry)
        if compiled is None:
            return None
        mask, bounds = compiled
        return _Part(mask=mask, bbox=bounds)
