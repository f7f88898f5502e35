"""cartotheca.ows.filters: OGC filters (FES 1.1/2.0 XML, CQL/ECQL text) → a store query.

Parsing is pygeofilter's; compiling is ours, in one place. A filter becomes a ``Selection``:
an SQLAlchemy predicate over the layer's table (attributes, run by the database), a shapely
mask for spatial operators (run on the geometries that pass the bbox prefilter, which the
store answers from its spatial index) and feature ids. Values are always bound parameters,
never pasted into SQL text.

A spatial test nested under OR/NOT together with attribute tests cannot be split that way; it
is answered first (the ids of the features it selects) and enters the SQL as ``fid IN (...)``.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import shapely
from lark.exceptions import LarkError
from pygeofilter import ast, values
from pygeofilter.parsers.ecql import parse as parse_ecql
from pygeofilter.parsers.fes.gml import is_temporal, parse_temporal
from pygeofilter.parsers.fes.util import NodeParsingError
from pygeofilter.parsers.fes.v11 import FES11Parser
from pygeofilter.parsers.fes.v20 import FES20Parser
from pygeofilter.util import parse_datetime
from pyproj import CRS, Transformer
from sqlalchemy import ColumnElement, Table, and_, false, func, literal, not_, or_, true

from cartotheca.ows import gml
from cartotheca.ows.exceptions import OWSException
from cartotheca.ows.filter_values import (
    CaseSensitiveLike,
    coerce,
    compare,
    date_compare,
    invalid,
    like_pattern,
    period,
    to_metres,
)

Sql = Callable[[Table], ColumnElement[bool]]
Mask = Callable[[np.ndarray], np.ndarray]
Bounds = tuple[float, float, float, float]
GEOMETRY_NAMES = ("the_geom", "geom", "geometry", "shape", "wkb_geometry")


# -- parsing --------------------------------------------------------------------------------


@dataclass
class FeatureIds(ast.Node):
    """``ResourceId``/``FeatureId``/``GmlObjectId`` elements, or an ECQL ``IN ('a.1')``."""

    ids: list[str]


@dataclass
class GeometryLiteral:
    """A geometry read from GML, with the srsName written on it (coordinates as written)."""

    geometry: Any
    srs: str | None


def _handler(func_: Callable, subiter: bool = True) -> Callable:
    func_.subiter = subiter
    return func_


def _literal(parser, node):
    # FES 2.0 literals often come without a type (QGIS sends none); GML inside a literal is a
    # geometry value.
    for child in node:
        if isinstance(child.tag, str):
            return _gml(parser, child)
    value = node.text or ""
    kind = (node.get("type") or "").rpartition(":")[2]
    if kind in ("int", "integer", "long", "short", "byte"):
        return int(value)
    if kind in ("double", "float", "decimal"):
        return float(value)
    if kind == "boolean":
        return value.strip().lower() == "true"
    if kind == "date":
        return dt.date.fromisoformat(value.strip())
    if kind == "dateTime":
        return parse_datetime(value.strip())
    return value


def _gml(parser, node):
    if is_temporal(node):
        nsmap = {"gml": node.nsmap.get(node.prefix) or gml.GML32_NS}
        return parse_temporal(node, nsmap)
    try:
        geometry, srs = gml.read_geometry(node)
    except (ValueError, TypeError, IndexError, shapely.errors.ShapelyError) as exc:
        raise invalid(f"Invalid GML geometry: {exc}") from exc
    return GeometryLiteral(geometry, srs)


def _like(parser, node, lhs, rhs):
    # FES 1.0 spells the escape attribute ``escape``, 1.1 ``escapeChar``, 2.0 ``escapeChar``
    return ast.Like(lhs, rhs, nocase=node.get("matchCase", "true") == "false",
                    wildcard=node.get("wildCard", "*"), singlechar=node.get("singleChar", "?"),
                    escapechar=node.get("escapeChar", node.get("escape", "\\")), not_=False)


def _equal(parser, node, lhs, rhs):
    if node.get("matchCase", "true") == "false" and isinstance(rhs, str):
        pattern = re.sub(r"([*?!])", r"!\1", rhs)
        return ast.Like(lhs, pattern, nocase=True, wildcard="*", singlechar="?", escapechar="!",
                        not_=False)
    return ast.Equal(lhs, rhs)


def _resource_id(parser, node):
    rid = node.get("rid") or node.get("fid") or node.get("{http://www.opengis.net/gml}id") \
        or node.get("{http://www.opengis.net/gml/3.2}id")
    return FeatureIds([rid] if rid else [])


def _filter(parser, node, *children):
    if not children:
        raise invalid("Empty filter")
    if all(isinstance(c, FeatureIds) for c in children):
        return FeatureIds([i for c in children for i in c.ids])
    if len(children) != 1:
        raise invalid("A filter has one root operator")
    return children[0]


def _distance(parser, node):
    # FES 2.0 names the unit ``uom``, FES 1.x ``units``
    return float(node.text), node.get("uom") or node.get("units") or ""


def _property_name(parser, node):
    return ast.Attribute((node.text or "").strip())


def _build(base: type, extra: dict[str, Callable]) -> type:
    """A parser class with some of pygeofilter's handlers replaced (its metaclass would let
    the base class's handlers win over a subclass's, so the maps are set here)."""
    cls = type(f"Cartotheca{base.__name__}", (base,), {})
    ns = base.namespace
    cls.tag_map = {**base.tag_map, **{f"{{{ns}}}{tag}": h for tag, h in extra.items()}}
    cls.namespace_map = {**base.namespace_map, gml.GML2_NS: _handler(_gml, False),
                         gml.GML32_NS: _handler(_gml, False)}
    return cls


_COMMON = {
    "Filter": _handler(_filter), "Literal": _handler(_literal, False),
    "PropertyIsLike": _handler(_like), "PropertyIsEqualTo": _handler(_equal),
    "PropertyName": _handler(_property_name, False), "ValueReference": _handler(_property_name, False),
    "FeatureId": _handler(_resource_id, False), "GmlObjectId": _handler(_resource_id, False),
    "ResourceId": _handler(_resource_id, False), "Distance": _handler(_distance, False),
}
_FES11 = _build(FES11Parser, _COMMON)
_FES20 = _build(FES20Parser, _COMMON)


def parse_fes(element: Any) -> ast.Node:
    """An ``ogc:Filter`` (FES 1.0/1.1) or ``fes:Filter`` (FES 2.0) element → AST."""
    namespace = element.nsmap.get(element.prefix) if element.prefix else None
    namespace = namespace or (element.tag[1:].split("}")[0] if element.tag.startswith("{") else "")
    parser = {FES11Parser.namespace: _FES11, FES20Parser.namespace: _FES20}.get(namespace)
    if parser is None:
        raise invalid(f"Unsupported filter namespace {namespace!r}")
    try:
        return parser().parse(element)
    except OWSException:
        raise
    except (NodeParsingError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise invalid(f"Invalid filter: {exc}") from exc


_CQL_IDS = re.compile(r"^\s*IN\s*\((.*)\)\s*$", re.I | re.S)


def parse_cql(text: str) -> ast.Node:
    """ECQL text (GeoServer's CQL_FILTER) → AST. ``IN ('type.1', ...)`` selects feature ids."""
    match = _CQL_IDS.match(text)
    if match:
        ids = [s.strip().strip("'\"") for s in match.group(1).split(",") if s.strip()]
        return FeatureIds(ids)
    try:
        node = parse_ecql(text)
    except (LarkError, ValueError) as exc:
        raise invalid(f"Invalid CQL filter: {str(exc).splitlines()[0]}") from exc
    return _cql_like_wildcards(node)


def _cql_like_wildcards(node: Any) -> Any:
    """ECQL's LIKE uses SQL's wildcards (% and _), as GeoServer reads it."""
    if isinstance(node, ast.Like):
        node.singlechar = "_"
    if isinstance(node, ast.Node):
        for sub in node.get_sub_nodes():
            _cql_like_wildcards(sub)
    return node


# -- what compiling needs to know about the layer -------------------------------------------


@dataclass
class FilterLayer:
    table: Table  # the store's table: attribute names and types
    geometry_column: str
    fid_column: str
    type_name: str  # bare layer name, the prefix of feature ids ("points.3")
    native_crs: CRS
    default_srs: gml.Srs | None = None  # CRS of filter geometries without srsName
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


# -- feature ids ----------------------------------------------------------------------------


def parse_fids(ids: list[str], type_name: str) -> list[int]:
    """``points.3``, ``geonode:points.3`` or ``3`` → 3; ids of other types are dropped."""
    out = []
    for rid in ids:
        prefix, _, number = rid.strip().rpartition(".")
        if prefix and prefix.rpartition(":")[2] != type_name:
            continue
        if number.lstrip("-").isdigit():
            out.append(int(number))
    return out


def id_type_names(ids: list[str]) -> list[str]:
    """The type names that feature ids name (``points.3`` → ``points``), in order."""
    names: list[str] = []
    for rid in ids:
        prefix = rid.strip().rpartition(".")[0]
        if prefix and prefix not in names:
            names.append(prefix)
    return names


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
        if a.pure_mask and b.pure_mask:
            ma, mb = a.mask, b.mask
            return _Part(mask=lambda g: ma(g) | mb(g), bbox=_union_bounds(a.bbox, b.bbox))
        sa, sb = self.as_sql(a), self.as_sql(b)
        return _Part(sql=lambda t: or_(sa(t), sb(t)))

    def _not(self, sub: Any) -> _Part:
        if isinstance(sub, ast.Not):
            return self.part(sub.sub_node)
        # FES BBOX arrives as NOT(DISJOINT(...)): keep it an intersects test with a prefilter
        if isinstance(sub, ast.GeometryDisjoint):
            return self.spatial(ast.GeometryIntersects(sub.lhs, sub.rhs))
        inner = self.part(sub)
        if inner.pure_sql and inner.sql is not None:
            s = inner.sql
            return _Part(sql=lambda t: not_(s(t)))
        if inner.pure_mask:
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
                raise invalid("Spatial tests cannot be combined with OR/NOT here")
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
        raise invalid(f"Unknown property {attribute.name!r}")

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
        raise invalid(f"Unsupported filter function {node.name!r}")

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
        raise invalid(f"Unsupported filter operator {type(node).__name__}")

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
        pattern = like_pattern(str(node.pattern), node.wildcard, node.singlechar, node.escapechar)
        if node.nocase:
            sql = lambda t: lhs(t).ilike(pattern, escape="\\")  # noqa: E731
        else:
            sql = lambda t: CaseSensitiveLike(lhs(t), pattern)  # noqa: E731
        return (lambda t: not_(sql(t))) if node.not_ else sql

    def temporal(self, node: ast.TemporalPredicate) -> Sql:
        if not isinstance(node.lhs, ast.Attribute):
            raise invalid("A temporal operator compares a property with a time")
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
            raise invalid(f"Unsupported temporal operator {op.__name__}")
        conditions = tests[op]

        def build(t: Table) -> ColumnElement[bool]:
            column = t.c[name]
            if kind is dt.date:
                return and_(*(date_compare(column, o, v) for o, v in conditions))
            return and_(*(compare(column, o, literal(coerce(v, kind))) for o, v in conditions))

        return build

    # -- spatial --

    def spatial(self, node: Any) -> _Part | None:
        if isinstance(node, ast.BBox):
            if not self.is_geometry(node.lhs):
                raise invalid("BBOX applies to the geometry")
            box = shapely.box(node.minx, node.miny, node.maxx, node.maxy)
            srs = gml.parse_srs(node.crs) if node.crs else self._default_srs(cql=True)
            return self._test("intersects", box, srs)
        if isinstance(node, ast.SpatialComparisonPredicate | ast.Relate | ast.SpatialDistancePredicate):
            lhs, rhs = node.lhs, node.rhs
            if not self.is_geometry(lhs) and self.is_geometry(rhs):
                lhs, rhs = rhs, lhs
            if not self.is_geometry(lhs):
                raise invalid(f"{type(node).__name__} applies to the geometry")
            geometry, srs = self.literal_geometry(rhs)
            if isinstance(node, ast.Relate):
                return self._test("relate", geometry, srs, pattern=node.pattern)
            if isinstance(node, ast.SpatialDistancePredicate):
                op = "dwithin" if isinstance(node, ast.DistanceWithin) else "beyond"
                return self._test(op, geometry, srs, distance=float(node.distance),
                                  units=str(node.units))
            return self._test(node.op.value.lower(), geometry, srs)
        return None

    def _default_srs(self, cql: bool = False) -> gml.Srs | None:
        srs = self.layer.default_srs
        if srs is not None and cql:
            return gml.Srs(srs.epsg, False, srs.name)  # WKT literals are always x/y
        return srs

    def literal_geometry(self, value: Any) -> tuple[Any, gml.Srs | None]:
        try:
            if isinstance(value, GeometryLiteral):
                srs = gml.parse_srs(value.srs) if value.srs else self._default_srs()
                return value.geometry, srs
            if isinstance(value, values.Envelope):
                return shapely.box(min(value.x1, value.x2), min(value.y1, value.y2),
                                   max(value.x1, value.x2), max(value.y1, value.y2)), \
                    self._default_srs(cql=True)
            if isinstance(value, values.Geometry):
                mapping = dict(value.geometry)
                crs = mapping.pop("crs", None)
                geometry = shapely.geometry.shape(mapping)
                if crs:
                    epsg = gml.parse_srs(crs["properties"]["name"]).epsg
                    return geometry, gml.Srs(epsg, False, f"EPSG:{epsg}")  # EWKT is x/y
                return geometry, self._default_srs(cql=True)
        except gml.SrsError as exc:
            raise invalid(str(exc)) from exc
        raise invalid("A spatial operator needs a geometry literal")

    def to_native(self, geometry: Any, srs: gml.Srs | None) -> Any:
        if srs is None:
            return geometry
        if srs.swap:
            geometry = shapely.transform(geometry, lambda c: c[:, ::-1])
        source = CRS.from_epsg(srs.epsg)
        if source == self.layer.native_crs:
            return geometry
        xmin, ymin, xmax, ymax = geometry.bounds
        step = max(xmax - xmin, ymax - ymin) / 32
        if step > 0 and geometry.geom_type not in ("Point", "MultiPoint"):
            geometry = shapely.segmentize(geometry, step)
        transformer = Transformer.from_crs(source, self.layer.native_crs, always_xy=True)
        return shapely.transform(geometry, lambda c: np.column_stack(transformer.transform(c[:, 0], c[:, 1])))

    def _test(self, op: str, geometry: Any, srs: gml.Srs | None, *, pattern: str = "",
              distance: float = 0.0, units: str = "") -> _Part:
        native = self.to_native(geometry, srs)
        if not shapely.is_valid(native):
            native = shapely.make_valid(native)
        shapely.prepare(native)
        bounds: Bounds | None = tuple(native.bounds) if not shapely.is_empty(native) else None
        tests: dict[str, Mask] = {
            "intersects": lambda g: shapely.intersects(native, g),
            "disjoint": lambda g: shapely.disjoint(native, g) & ~shapely.is_missing(g),
            "contains": lambda g: shapely.within(native, g),  # the feature contains the literal
            "within": lambda g: shapely.contains(native, g),  # the feature is within it
            "touches": lambda g: shapely.touches(native, g),
            "crosses": lambda g: shapely.crosses(g, native),
            "overlaps": lambda g: shapely.overlaps(g, native),
            "equals": lambda g: shapely.equals(g, native),
            "relate": lambda g: shapely.relate_pattern(g, native, pattern),
        }
        if op in ("dwithin", "beyond"):
            mask, bounds = self._distance(native, distance, units)
            if op == "beyond":
                within = mask
                mask = lambda g: ~within(g) & ~shapely.is_missing(g)  # noqa: E731
                bounds = None
            return _Part(mask=mask, bbox=bounds)
        if op not in tests:
            raise invalid(f"Unsupported spatial operator {op}")
        if op in ("disjoint", "relate"):
            bounds = None
        return _Part(mask=tests[op], bbox=bounds)

    def _distance(self, native: Any, distance: float, units: str) -> tuple[Mask, Bounds | None]:
        crs = self.layer.native_crs
        metres = to_metres(distance, units)
        xmin, ymin, xmax, ymax = native.bounds
        if metres is None or not crs.is_geographic:
            if metres is not None and crs.axis_info and crs.axis_info[0].unit_conversion_factor:
                distance = metres / crs.axis_info[0].unit_conversion_factor
            d = distance
            return (lambda g: shapely.dwithin(g, native, d)), (xmin - d, ymin - d, xmax + d, ymax + d)
        # Geographic data, linear distance: measure in an azimuthal equidistant projection
        # centred on the literal (exact distances from it, GeoServer-like results).
        centre = native.centroid
        local = CRS.from_proj4(f"+proj=aeqd +lat_0={centre.y} +lon_0={centre.x} +datum=WGS84 +units=m")
        transformer = Transformer.from_crs(crs, local, always_xy=True)

        def project(g: Any) -> Any:
            return shapely.transform(g, lambda c: np.column_stack(transformer.transform(c[:, 0], c[:, 1])))

        target = project(native)
        shapely.prepare(target)
        dlat = metres / 110_574.0
        maxlat = min(89.9, max(abs(ymin), abs(ymax)) + dlat)
        dlon = min(360.0, metres / (111_320.0 * math.cos(math.radians(maxlat))))
        return (lambda g: shapely.dwithin(target, project(g), metres)), \
            (xmin - dlon, ymin - dlat, xmax + dlon, ymax + dlat)
