"""cartotheca.filters.parse: FES 1.0/1.1/2.0 XML and ECQL text → one pygeofilter AST.

pygeofilter reads both; a few of its FES handlers are replaced here so the AST says what the
client wrote: untyped literals (QGIS sends no type), GML geometry literals with their srsName,
``matchCase`` on equality, the FES 1.0 spelling of attributes, and feature ids. ``PropertyIsLike``
keeps ``wildCard`` and ``singleChar`` as written (None when absent): each back end has its own
default.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import shapely
from lark.exceptions import LarkError
from pygeofilter import ast
from pygeofilter.parsers.ecql import parse as parse_ecql
from pygeofilter.parsers.fes.gml import is_temporal, parse_temporal
from pygeofilter.parsers.fes.util import NodeParsingError
from pygeofilter.parsers.fes.v11 import FES11Parser
from pygeofilter.parsers.fes.v20 import FES20Parser
from pygeofilter.util import parse_datetime

from cartotheca.errors import InvalidFilter
from cartotheca.filters import gml

# pygeofilter builds its ECQL grammar with debug=True, which turns lark's shared logger to DEBUG:
# every grammar built later in the process (jsonschema's format checker builds 38) would print
# its unused rules to the server's log.
logging.getLogger("lark").setLevel(logging.WARNING)


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
    func_.subiter = subiter  # type: ignore[attr-defined]  # read by pygeofilter's parser
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
        raise InvalidFilter(f"Invalid GML geometry: {exc}") from exc
    return GeometryLiteral(geometry, srs)


def _like(parser, node, lhs, rhs):
    # FES 1.0 spells the escape attribute ``escape``, 1.1 ``escapeChar``, 2.0 ``escapeChar``
    return ast.Like(lhs, rhs, nocase=node.get("matchCase", "true") == "false",
                    wildcard=node.get("wildCard"), singlechar=node.get("singleChar"),
                    escapechar=node.get("escapeChar", node.get("escape", "\\")), not_=False)


def _equal(parser, node, lhs, rhs):
    if node.get("matchCase", "true") == "false" and isinstance(rhs, str):
        return _nocase_equal(lhs, rhs)
    return ast.Equal(lhs, rhs)


def _not_equal(parser, node, lhs, rhs):
    if node.get("matchCase", "true") == "false" and isinstance(rhs, str):
        return ast.Not(_nocase_equal(lhs, rhs))
    return ast.NotEqual(lhs, rhs)


def _nocase_equal(lhs: Any, text: str) -> ast.Like:
    """Equality ignoring case is a LIKE without wildcards (every back end has a caseless LIKE)."""
    pattern = re.sub(r"([*?!])", r"!\1", text)
    return ast.Like(lhs, pattern, nocase=True, wildcard="*", singlechar="?", escapechar="!",
                    not_=False)


def _logical(kind: type) -> Callable:
    """``And``/``Or`` of two operands or more, folded left (FES's schema asks for two)."""

    def handler(parser, node, *operands):
        if len(operands) < 2:
            raise InvalidFilter(f"{kind.__name__} needs at least two operands")
        result = operands[0]
        for operand in operands[1:]:
            result = kind(result, operand)
        return result

    return handler


def _function(parser, node, *arguments):
    return ast.Function(node.get("name") or "", list(arguments))


def _resource_id(parser, node):
    rid = node.get("rid") or node.get("fid") or node.get("{http://www.opengis.net/gml}id") \
        or node.get("{http://www.opengis.net/gml/3.2}id")
    return FeatureIds([rid] if rid else [])


def _filter(parser, node, *children):
    if not children:
        raise InvalidFilter("Empty filter")
    if all(isinstance(c, FeatureIds) for c in children):
        return FeatureIds([i for c in children for i in c.ids])
    if len(children) != 1:
        raise InvalidFilter("A filter has one root operator")
    return children[0]


def _distance(parser, node):
    # FES 2.0 names the unit ``uom``, FES 1.x ``units``
    return float(node.text), node.get("uom") or node.get("units") or ""


def _property_name(parser, node):
    return ast.Attribute((node.text or "").strip())


def _build(base: Any, extra: dict[str, Callable]) -> Any:
    """A parser class with some of pygeofilter's handlers replaced (its metaclass would let
    the base class's handlers win over a subclass's, so the maps are set here)."""
    cls: Any = type(f"Cartotheca{base.__name__}", (base,), {})
    ns = base.namespace
    cls.tag_map = {**base.tag_map, **{f"{{{ns}}}{tag}": h for tag, h in extra.items()}}
    cls.namespace_map = {**base.namespace_map, gml.GML2_NS: _handler(_gml, False),
                         gml.GML32_NS: _handler(_gml, False)}
    return cls


_COMMON = {
    "Filter": _handler(_filter), "Literal": _handler(_literal, False),
    "PropertyIsLike": _handler(_like), "PropertyIsEqualTo": _handler(_equal),
    "PropertyIsNotEqualTo": _handler(_not_equal),
    "And": _handler(_logical(ast.And)), "Or": _handler(_logical(ast.Or)),
    "Function": _handler(_function),
    "PropertyName": _handler(_property_name, False), "ValueReference": _handler(_property_name, False),
    "FeatureId": _handler(_resource_id, False), "GmlObjectId": _handler(_resource_id, False),
    "ResourceId": _handler(_resource_id, False), "Distance": _handler(_distance, False),
}
_FES11 = _build(FES11Parser, _COMMON)
_FES20 = _build(FES20Parser, _COMMON)


def parse_fes(element: Any) -> ast.Node:
    """An ``ogc:Filter`` (FES 1.0/1.1) or ``fes:Filter`` (FES 2.0) element → AST; an
    expression element alone (``PropertyName``, ``Literal``, ``Add`` ...) gives its value."""
    namespace = element.nsmap.get(element.prefix) if element.prefix else None
    namespace = namespace or (element.tag[1:].split("}")[0] if element.tag.startswith("{") else "")
    parser = {FES11Parser.namespace: _FES11, FES20Parser.namespace: _FES20}.get(namespace)
    if parser is None:
        raise InvalidFilter(f"Unsupported filter namespace {namespace!r}")
    try:
        return parser().parse(element)
    except InvalidFilter:
        raise
    except (NodeParsingError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvalidFilter(f"Invalid filter: {exc}") from exc


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
        raise InvalidFilter(f"Invalid CQL filter: {str(exc).splitlines()[0]}") from exc
    return _cql_like_wildcards(node)


def _cql_like_wildcards(node: Any) -> Any:
    """ECQL's LIKE uses SQL's wildcards (% and _), as GeoServer reads it."""
    if isinstance(node, ast.Like):
        node.singlechar = "_"
    if isinstance(node, ast.Node):
        for sub in node.get_sub_nodes():
            _cql_like_wildcards(sub)
    return node


# -- feature ids ----------------------------------------------------------------------------


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
