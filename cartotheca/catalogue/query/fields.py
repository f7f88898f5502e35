"""cartotheca.catalogue.query.fields: the names a collection may be filtered and sorted on, and
how a query-string value becomes a typed value for them.

Every collection declares a ``FieldMap``; unknown names and malformed values raise
``InvalidQuery`` naming the parameter: never a silent no-op, never a 500.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement

from cartotheca import timeutil
from cartotheca.errors import InvalidQuery

TRUE_WORDS = {"1", "true", "t", "yes", "y", "on"}
FALSE_WORDS = {"0", "false", "f", "no", "n", "off", ""}

Wrap = Callable[[ColumnElement[bool]], ColumnElement[bool]]


@dataclass(frozen=True)
class Field:
    """One filterable/sortable name.

    ``column`` is the SQL expression compared; ``kind`` its value type. For a name reached
    through a relation (``owner.username``, ``keywords.name``), ``via`` turns a condition on
    the related table into a condition on the collection's rows (an indexed ``IN`` subquery
    that is never NULL, so negation keeps rows that have no related record, as Django does).
    ``sort`` is the expression to order by, or None when the name cannot be sorted.
    """

    column: Any
    kind: type = str
    via: Wrap | None = None
    sortable: bool = True
    sort: Any = None
    nullable: bool = True

    @property
    def sort_expression(self) -> Any:
        return self.sort if self.sort is not None else self.column


@dataclass
class FieldMap:
    fields: dict[str, Field]
    search_fields: dict[str, Any] = field(default_factory=dict)
    default_search_fields: Sequence[str] = ()
    default_sort: Sequence[Any] = ()
    tiebreak: Any = None  # unique column appended to every order, so pages never overlap

    def get(self, name: str, param: str) -> Field:
        found = self.fields.get(name)
        if found is None:
            raise InvalidQuery(f"Invalid filter field: {name}", extra=[f"parameter: {param}"])
        return found


# ---------------------------------------------------------------------------------------
# values


def to_bool(raw: str) -> bool:
    return raw.strip().lower() not in FALSE_WORDS


def strict_bool(raw: str, param: str) -> bool:
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS and word != "":
        return False
    raise InvalidQuery(f"Invalid value for {param}: {raw}")


def convert(raw: str, kind: type, param: str) -> Any:
    try:
        if kind is bool:  # "maybe" is not a boolean: a 400 naming the parameter, as GeoNode's
            return strict_bool(raw, param)
        if kind is int:
            value = int(raw.strip())
            if not -2**63 <= value < 2**63:  # beyond BIGINT the driver raises, not the database
                raise ValueError(raw)
            return value
        if kind is float:
            number = float(raw.strip())
            if not math.isfinite(number):
                raise ValueError(raw)
            return number
        if kind is dt.datetime:
            return timeutil.parse_datetime(raw)
        if "\x00" in raw:
            raise ValueError(raw)
        return raw
    except (ValueError, OverflowError):
        raise InvalidQuery(f"Invalid value for {param}: {raw}") from None

