"""cartotheca.catalogue.query.paging: one page of a collection, counted or not, ids first.

Every list answers with a ``Listing``; the count, the page's ids and the page's rows are the
only statements a page costs, whatever the filters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import Session

from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query.fields import strict_bool
from cartotheca.catalogue.query.request import parse_page
from cartotheca.errors import InvalidQuery, NotFound
from cartotheca.settings import Settings


@dataclass
class Listing:
    """One page of a list, with what the wire envelope needs."""

    rows: Sequence[Any]
    total: int | None  # None when the request asked for no count (total=false)
    page: int
    page_size: int | None
    perms: dict[int, list[str]] = field(default_factory=dict)
    favorites: frozenset[int] = frozenset()
    has_next: bool | None = None  # known without a count: one row past the page was asked for


@dataclass(frozen=True)
class ListContext:
    session: Session
    principal: Principal
    settings: Settings
    params: Mapping[str, list[str]]
    items: Sequence[tuple[str, str]]


def paginate(session: Session, stmt: Select, order: Sequence[Any], ctx: ListContext,
             options: Sequence[Any] = ()) -> tuple[Sequence[Any], int, int, int | None]:
    """Count, then fetch one page: two statements whatever the filters."""
    page = parse_page(
        ctx.params,
        default_size=ctx.settings.API_LIMIT_PER_PAGE,
        search_size=ctx.settings.DEFAULT_SEARCH_SIZE,
        max_size=ctx.settings.API_MAX_PAGE_SIZE,
    )
    total = session.scalar(select(func.count()).select_from(stmt.order_by(None).subquery())) or 0
    number = page.number
    if page.size is None:
        last = 1
    else:
        last = max(1, -(-total // page.size))
    if number is None:
        number = last
    if number > last:
        raise NotFound("Invalid page.")
    stmt = stmt.order_by(*order)
    if page.size is not None:
        stmt = stmt.limit(page.size).offset((number - 1) * page.size)
    if not options:
        return session.scalars(stmt).all(), total, number, page.size
    return _load_page(session, stmt, options), total, number, page.size


def paginate_uncounted(session: Session, stmt: Select, order: Sequence[Any], ctx: ListContext,
                       options: Sequence[Any] = ()) -> tuple[Sequence[Any], bool, int, int]:
    """One page without the count (``total=false``): the page and one row more, which says
    whether a next page exists. Counting every row the requester may see costs far more than the
    page itself on a large catalogue (the page walks an index and stops early)."""
    page = parse_page(
        ctx.params,
        default_size=ctx.settings.API_LIMIT_PER_PAGE,
        search_size=ctx.settings.DEFAULT_SEARCH_SIZE,
        max_size=ctx.settings.API_MAX_PAGE_SIZE,
    )
    if page.number is None or page.size is None:
        raise InvalidQuery("total=false needs a page number and a page size")
    stmt = stmt.order_by(*order).limit(page.size + 1).offset((page.number - 1) * page.size)
    rows = _load_page(session, stmt, options) if options else session.scalars(stmt).all()
    if not rows and page.number > 1:
        raise NotFound("Invalid page.")
    return rows[:page.size], len(rows) > page.size, page.number, page.size


def wants_total(params: Mapping[str, list[str]]) -> bool:
    raw = (params.get("total") or [None])[0]
    return True if raw is None else strict_bool(raw, "total")


def _load_page(session: Session, stmt: Select, options: Sequence[Any]) -> list[Any]:
    """Ids of the page first, then the rows with their joined loads.

    With OFFSET, joining owner, category, licence ... in the paging query would make the
    database build those joins for every skipped row as well; this way only the page's rows
    are joined, whatever the page number.
    """
    entity = stmt.column_descriptions[0]["entity"]
    pk = sa_inspect(entity).primary_key[0]
    ids = list(session.scalars(stmt.with_only_columns(pk)))
    if not ids:
        return []
    rows = session.scalars(select(entity).where(pk.in_(ids)).options(*options)).unique().all()
    by_id = {getattr(row, pk.key): row for row in rows}
    return [by_id[i] for i in ids if i in by_id]

