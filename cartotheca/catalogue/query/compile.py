"""cartotheca.catalogue.query.compile: filter{...}, search and sort compiled against a ``FieldMap``.

The parsed request (``ListQuery``) is turned into WHERE and ORDER BY clauses of one ``Select``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, and_, false, func, not_, or_

from cartotheca.catalogue.query.fields import FieldMap, convert, strict_bool
from cartotheca.catalogue.query.request import FilterTerm, filter_terms, search_terms, sort_names
from cartotheca.errors import InvalidQuery


def compile_term(term: FilterTerm, fields: FieldMap) -> ColumnElement[bool]:
    spec = fields.get(term.path, term.param)
    column = spec.column
    first = term.values[0]

    if term.op == "isnull":
        wanted = strict_bool(first, term.param)
        if spec.via is not None:
            present = spec.via(column.is_not(None))
            cond = not_(present) if wanted else present
        else:
            cond = column.is_(None) if wanted else column.is_not(None)
        return not_(cond) if term.negated else cond

    if term.op == "in":
        values = [v for raw in term.values for v in (raw.split(",") if spec.kind is int else [raw])]
        converted = [convert(v, spec.kind, term.param) for v in values if v != "" or spec.kind is str]
        cond = column.in_(converted) if converted else false()
    elif term.op == "range":
        bounds = term.values if len(term.values) >= 2 else tuple(first.split(","))
        if len(bounds) != 2:
            raise InvalidQuery(f"Invalid value for {term.param}: range needs two values")
        low, high = (convert(b, spec.kind, term.param) for b in bounds[:2])
        cond = column.between(low, high)
    else:
        cond = _compare(column, term.op, convert(first, spec.kind, term.param), spec.kind, term)

    if spec.via is not None:
        cond = spec.via(cond)
        return not_(cond) if term.negated else cond
    if term.negated:
        return or_(not_(cond), column.is_(None)) if spec.nullable else not_(cond)
    return cond


def _compare(column: ColumnElement[Any], op: str, value: Any, kind: type, term: FilterTerm
             ) -> ColumnElement[bool]:
    if op == "eq":
        return column.is_(None) if value is None else column == value
    if op in ("gt", "gte", "lt", "lte"):
        compared: dict[str, ColumnElement[bool]] = {
            "gt": column > value, "gte": column >= value, "lt": column < value,
            "lte": column <= value}
        return compared[op]
    if kind is not str:
        raise InvalidQuery(f"Invalid filter operator for {term.param}: {op}")
    if op == "icontains":
        return column.icontains(value, autoescape=True)
    if op == "contains":
        return column.contains(value, autoescape=True)
    if op == "startswith":
        return column.startswith(value, autoescape=True)
    if op == "istartswith":
        return column.istartswith(value, autoescape=True)
    if op == "endswith":
        return column.endswith(value, autoescape=True)
    if op == "iendswith":
        return column.iendswith(value, autoescape=True)
    if op == "iexact":
        lowered: ColumnElement[str] = func.lower(column)
        text: str = value
        return lowered == text.lower()
    raise InvalidQuery(f"Invalid filter operator for {term.param}: {op}")


def compile_filters(params: Iterable[tuple[str, str]], fields: FieldMap) -> list[ColumnElement[bool]]:
    return [compile_term(term, fields) for term in filter_terms(params)]


# ---------------------------------------------------------------------------------------
# search


def compile_search(params: Mapping[str, list[str]], fields: FieldMap) -> ColumnElement[bool] | None:
    return search_clause(search_terms(params), tuple(params.get("search_fields") or ()), fields)


def search_clause(terms: Sequence[str], names: Sequence[str], fields: FieldMap
                  ) -> ColumnElement[bool] | None:
    """DRF SearchFilter semantics: every term must match at least one field (icontains).

    ``search`` without ``search_fields`` uses the collection's default fields (GeoNode ignores
    it, which leaves clients like geonodectl's ``--search`` unable to find anything).
    """
    if not terms:
        return None
    columns = []
    for raw in names or fields.default_search_fields:
        for name in raw.split(","):
            name = name.strip()
            mode = name[:1] if name[:1] in "^=@$" else ""
            key = name[len(mode):]
            column = fields.search_fields.get(key)
            if column is None:
                raise InvalidQuery(f"Invalid search field: {key}", extra=["parameter: search_fields"])
            columns.append((mode, column))
    if not columns:
        return None
    clauses = []
    for term in terms:
        options = []
        for mode, column in columns:
            if mode == "^":
                options.append(column.istartswith(term, autoescape=True))
            elif mode == "=":
                options.append(func.lower(column) == term.lower())
            else:
                options.append(column.icontains(term, autoescape=True))
        clauses.append(or_(*options))
    return and_(*clauses)


# ---------------------------------------------------------------------------------------
# sort


def compile_sort(params: Mapping[str, list[str]], fields: FieldMap) -> list[Any]:
    return order_by(sort_names(params), fields)


def order_by(names: Sequence[tuple[str, str]], fields: FieldMap) -> list[Any]:
    """The ORDER BY of ``sort[]`` names (each with the parameter it came from), or the default."""
    order = []
    first_desc = None
    for name, param in names:
        desc = name.startswith("-")
        key = name.lstrip("-+")
        spec = fields.fields.get(key)
        if spec is None or not spec.sortable:
            raise InvalidQuery(f"Invalid filter field: ['{key}']", extra=[f"parameter: {param}"])
        order.append(_ordered(spec.sort_expression, desc))
        first_desc = desc if first_desc is None else first_desc
    if not order:
        order = list(fields.default_sort)
        first_desc = bool(order) and "desc" in str(getattr(order[0], "modifier", ""))
    if fields.tiebreak is not None:
        # The tiebreak follows the direction of the first key so an index on (key, id) serves
        # the whole ORDER BY in either direction.
        order.append(fields.tiebreak.desc() if first_desc else fields.tiebreak.asc())
    return order


def _ordered(expr: Any, desc: bool) -> Any:
    """PostgreSQL's NULL placement (last ascending, first descending) on both databases.

    SQLite puts NULLs first ascending; saying it explicitly keeps pages identical on both.
    Only nullable expressions get the clause, so NOT NULL columns keep their plain index order.
    """
    column = getattr(expr, "expression", expr)  # an ORM attribute's Column; subqueries have none
    if not getattr(column, "nullable", True):
        return expr.desc() if desc else expr.asc()
    return expr.desc().nulls_first() if desc else expr.asc().nulls_last()
