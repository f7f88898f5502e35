"""cartotheca.filters.values: filter literals made SQL-ready: types, dates, LIKE patterns, units.

Literals are converted to the column's Python type before binding, so a comparison means the
same on SQLite and PostgreSQL; LIKE keeps OGC's case rules on both (SQLite's own LIKE ignores
ASCII case, so case-sensitive matching compiles to GLOB there).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pygeofilter import ast, values
from pygeofilter.util import parse_datetime
from sqlalchemy import Boolean, ColumnElement, false, literal, true
from sqlalchemy.ext.compiler import compiles

from cartotheca.errors import InvalidFilter

UNITS_TO_METRES = {
    "m": 1.0, "meter": 1.0, "meters": 1.0, "metre": 1.0, "metres": 1.0, "9001": 1.0,
    "km": 1000.0, "kilometer": 1000.0, "kilometers": 1000.0, "kilometre": 1000.0,
    "kilometres": 1000.0, "9036": 1000.0,
    "ft": 0.3048, "foot": 0.3048, "feet": 0.3048, "9002": 0.3048,
    "mi": 1609.344, "mile": 1609.344, "miles": 1609.344, "statute miles": 1609.344,
    "nautical miles": 1852.0, "nm": 1852.0,
}


def to_metres(distance: float, units: str) -> float | None:
    """A distance in metres, or None when the units are degrees or unknown (layer units)."""
    key = units.strip().lower().rsplit(":", 1)[-1].rsplit("#", 1)[-1]
    factor = UNITS_TO_METRES.get(key)
    return None if factor is None else distance * factor


def period(value: Any) -> tuple[Any, Any]:
    if isinstance(value, values.Interval):
        start, end = value.start, value.end
        if isinstance(start, dt.timedelta):
            start = end - start
        if isinstance(end, dt.timedelta):
            end = start + end
        return start, end
    if isinstance(value, str):
        value = coerce(value, dt.datetime)
    return value, value


def coerce(value: Any, kind: type | None) -> Any:
    """A literal converted to the column's Python type (so comparisons bind correctly)."""
    if value is None or kind is None or isinstance(value, ast.Node):
        return value
    try:
        if kind is bool:
            return value if isinstance(value, bool) else str(value).strip().lower() in ("true", "1")
        if kind is int:
            if isinstance(value, float) and not value.is_integer():
                return value
            return int(value) if not isinstance(value, str) else int(float(value))
        if kind is float:
            return float(value)
        if kind is str:
            return value if isinstance(value, str) else str(value)
        if kind is dt.datetime:
            if isinstance(value, dt.datetime):
                instant = value
            elif isinstance(value, dt.date):
                instant = dt.datetime(value.year, value.month, value.day)
            else:
                instant = parse_datetime(str(value).strip())
            if instant.tzinfo is not None:
                instant = instant.astimezone(dt.UTC).replace(tzinfo=None)
            return instant
        if kind is dt.date:
            if isinstance(value, dt.datetime):
                return value.date()
            if isinstance(value, dt.date):
                return value
            return dt.date.fromisoformat(str(value).strip()[:10])
    except (TypeError, ValueError) as exc:
        raise InvalidFilter(f"{value!r} is not a valid {kind.__name__}") from exc
    return value


def compare(lhs: Any, op: str, rhs: Any) -> ColumnElement[bool]:
    return {"=": lambda: lhs == rhs, "<>": lambda: lhs != rhs, "<": lambda: lhs < rhs,
            "<=": lambda: lhs <= rhs, ">": lambda: lhs > rhs, ">=": lambda: lhs >= rhs}[op]()


def date_compare(column: Any, op: str, instant: Any) -> ColumnElement[bool]:
    """A date column compared with an instant: a date stands for its midnight."""
    instant = coerce(instant, dt.datetime)
    day = instant.date()
    midnight = instant == dt.datetime(day.year, day.month, day.day)
    ceiling = day if midnight else day + dt.timedelta(days=1)
    if op == ">":
        return column > day
    if op == ">=":
        return column >= ceiling
    if op == "<":
        return column < ceiling
    if op == "<=":
        return column <= day
    if op == "=":
        return column == day if midnight else false()
    return column != day if midnight else true()


def like_pattern(pattern: str, wildcard: str, single: str, escape: str) -> str:
    """An OGC LIKE pattern → an SQL LIKE pattern with ``\\`` as its escape character."""
    out = []
    chars = iter(pattern)
    for ch in chars:
        if escape and ch == escape:
            nxt = next(chars, "")
            out.append("\\" + nxt if nxt in ("%", "_", "\\") else nxt)
        elif ch == wildcard:
            out.append("%")
        elif ch == single:
            out.append("_")
        elif ch in ("%", "_", "\\"):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


class CaseSensitiveLike(ColumnElement):
    """``LIKE`` that respects case on every database (SQLite's LIKE ignores ASCII case; GLOB
    does not)."""

    inherit_cache = False
    type = Boolean()

    def __init__(self, expr: Any, pattern: str):
        self.expr = expr
        self.pattern = pattern


@compiles(CaseSensitiveLike)
def _like_default(element: CaseSensitiveLike, compiler, **kw) -> str:
    expr = compiler.process(element.expr, **kw)
    pattern = compiler.process(literal(element.pattern), **kw)
    return f"({expr} LIKE {pattern} ESCAPE '\\')"


@compiles(CaseSensitiveLike, "sqlite")
def _like_sqlite(element: CaseSensitiveLike, compiler, **kw) -> str:
    expr = compiler.process(element.expr, **kw)
    pattern = compiler.process(literal(_glob_pattern(element.pattern)), **kw)
    return f"({expr} GLOB {pattern})"


def _glob_pattern(like: str) -> str:
    out = []
    chars = iter(like)
    for ch in chars:
        if ch == "\\":
            ch = next(chars, "")
            out.append(f"[{ch}]" if ch in "*?[" else ch)
        elif ch == "%":
            out.append("*")
        elif ch == "_":
            out.append("?")
        elif ch in "*?[":
            out.append(f"[{ch}]")
        else:
            out.append(ch)
    return "".join(out)


