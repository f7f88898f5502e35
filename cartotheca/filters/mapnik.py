"""cartotheca.filters.mapnik: a filter's AST → a mapnik expression (the filters of SLD rules).

mapnik evaluates the expression on each feature while drawing, so only what its expression
language can say is accepted: logic, comparisons, LIKE (as a regular expression), null tests,
ranges, feature ids and arithmetic. Spatial and temporal operators and functions are refused.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

from pygeofilter import ast

from cartotheca.errors import InvalidFilter
from cartotheca.filters.parse import FeatureIds

COMPARISONS = {"=": "=", "<>": "!=", "<": "<", ">": ">", "<=": "<=", ">=": ">="}
LIKE_WILDCARD, LIKE_SINGLE_CHAR = "*", "."  # what styles have read when the attributes are missing


def expression(node: Any) -> str:
    """A filter (predicate) or an expression (property, literal, arithmetic) in mapnik's syntax."""
    if isinstance(node, ast.And | ast.Or):
        word = "and" if isinstance(node, ast.And) else "or"
        return f"({expression(node.lhs)} {word} {expression(node.rhs)})"
    if isinstance(node, ast.Not):
        return f"(not {expression(node.sub_node)})"
    if isinstance(node, ast.Comparison):
        return _comparison(node)
    if isinstance(node, ast.Like):
        return _like(node)
    if isinstance(node, ast.IsNull):
        return f"({expression(node.lhs)} {'!=' if node.not_ else '='} null)"
    if isinstance(node, ast.Between):
        value, low, high = expression(node.lhs), expression(node.low), expression(node.high)
        inside = f"({value} >= {low} and {value} <= {high})"
        return f"(not {inside})" if node.not_ else inside
    if isinstance(node, FeatureIds):
        return _feature_ids(node.ids)
    if isinstance(node, ast.Attribute):
        return attribute(node.name)
    if isinstance(node, ast.Arithmetic):
        return f"({expression(node.lhs)} {node.op.value} {expression(node.rhs)})"
    if isinstance(node, ast.Node):
        raise InvalidFilter(f"Filter operator {type(node).__name__} is not supported in styles")
    return _literal(node)


def attribute(name: str) -> str:
    """A feature attribute reference, ``[name]`` (a namespace prefix is dropped)."""
    name = name.strip().split(":")[-1]
    if not name or "]" in name or "[" in name or "/" in name:
        raise InvalidFilter(f"Property name {name!r} cannot be used in a style")
    return f"[{name}]"


def string_literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return string_literal(str(value).lower())
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise InvalidFilter(f"Literal {value!r} is not a finite number")
        return _num(float(value))
    if isinstance(value, dt.date | dt.datetime):
        return string_literal(value.isoformat())
    if isinstance(value, str):
        text = value.strip()
        return _num(float(text)) if _is_number(text) else string_literal(text)
    raise InvalidFilter(f"Literal {value!r} is not supported in styles")


def _comparison(node: ast.Comparison) -> str:
    symbol = COMPARISONS[node.op.value]
    lhs, rhs = expression(node.lhs), expression(node.rhs)
    # A numeric literal against a text attribute: compare both ways, as map servers coerce.
    text = _number_text(node.rhs)
    if symbol in ("=", "!=") and text is not None:
        text_rhs = string_literal(text)
        if symbol == "=":
            return f"({lhs} = {rhs} or {lhs} = {text_rhs})"
        return f"({lhs} != {rhs} and {lhs} != {text_rhs})"
    return f"({lhs} {symbol} {rhs})"


def _number_text(value: Any) -> str | None:
    """The text of a literal that reads as a number, else None."""
    if isinstance(value, bool) or isinstance(value, ast.Node):
        return None
    if isinstance(value, int | float):
        return _num(float(value))
    if isinstance(value, str) and _is_number(value.strip()):
        return value.strip()
    return None


def _like(node: ast.Like) -> str:
    wildcard = LIKE_WILDCARD if node.wildcard is None else node.wildcard
    single = LIKE_SINGLE_CHAR if node.singlechar is None else node.singlechar
    pattern, escape, regex, i = str(node.pattern).strip(), node.escapechar, [], 0
    while i < len(pattern):
        char = pattern[i]
        if char == escape and i + 1 < len(pattern):
            regex.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        regex.append(".*" if char == wildcard else "." if char == single else re.escape(char))
        i += 1
    flags = "(?i)" if node.nocase else ""
    match = f"{expression(node.lhs)}.match({string_literal(flags + '^' + ''.join(regex) + '$')})"
    return f"(not {match})" if node.not_ else match


def _feature_ids(ids: list[str]) -> str:
    if not ids:
        raise InvalidFilter("A feature id filter names no feature")
    tests = []
    for fid in ids:
        number = fid.rsplit(".", 1)[-1]
        if not number.isdigit():
            raise InvalidFilter(f"Feature id {fid!r} is not layer.number")
        tests.append(f"[mapnik::feature_id] = {int(number)}")
    return "(" + " or ".join(tests) + ")"


def _is_number(value: str) -> bool:
    try:
        number = float(value)
    except ValueError:
        return False
    return math.isfinite(number) and value.strip() == value and bool(value)


def _num(value: float) -> str:
    return f"{value:.10g}"
