"""cartotheca.catalogue.query.paging: one page of a collection, counted or not, ids first.

Every list endpoint answers through ``page``: the request's ``ListQuery`` compiled against
the collection's ``FieldMap``, then the count, the page's ids and the page's rows are the only
statements a page costs, whatever the filters. ``page_items`` is the same arithmetic for the
few lists that exist only in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, TypeVar

from sqlalchemy import ColumnElement, Select, func, select
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import Session
from sqlalchemy.sql.base import ExecutableOption

from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query.compile import compile_term, order_by, search_clause
from cartotheca.catalogue.query.fields import FieldMap
from cartotheca.catalogue.query.request import FilterTerm, ListQuery, Page, parse_page
from cartotheca.errors import InvalidQuery, NotFound
from cartotheca.settings import Settings

T = TypeVar("T")

# Pages ending within this many rows are read with ``walked_where`` when a list gives one: the
# walk down the sort index meets at most a few hundred rows there, and checking each costs less
# than preparing a whole set first. Deeper pages skip more rows than that would pay for.
WALKED_ROWS = 1000


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


class ExactCounts(Protocol):
    """Exact totals and facet counts from somewhere faster than a COUNT (the process's
    catalogue index, given by the composition root); None from either means: count in SQL."""

    def list_total(self, ctx: ListContext, fields: FieldMap, base_terms: Sequence[FilterTerm]
                   ) -> int | None: ...

    def facet_counts(self, ctx: ListContext, families: Sequence[str]) -> Any: ...


@dataclass(frozen=True)
class ListContext:
    """Who asks, with what settings, and the request's query parameters."""

    session: Session
    principal: Principal
    settings: Settings
    params: Mapping[str, list[str]]
    items: Sequence[tuple[str, str]]
    counts: ExactCounts | None = None

    @cached_property
    def query(self) -> ListQuery:
        """The list parameters, parsed on first use: endpoints that read ``params`` without
        paging (facets take a zero-based ``page``) never parse them as a list."""
        return ListQuery.parse(
            self.items,
            self.params,
            default_size=self.settings.API_LIMIT_PER_PAGE,
            search_size=self.settings.DEFAULT_SEARCH_SIZE,
            max_size=self.settings.API_MAX_PAGE_SIZE,
        )

    def paging_only(self, *, search_size: int | None = None) -> ListQuery:
        """Only ``page`` and ``page_size``, for lists with a fixed order and no filters: their
        other parameters stay ignored, as they always were."""
        return ListQuery(page=parse_page(
            self.params,
            default_size=self.settings.API_LIMIT_PER_PAGE,
            search_size=self.settings.DEFAULT_SEARCH_SIZE if search_size is None else search_size,
            max_size=self.settings.API_MAX_PAGE_SIZE,
        ))


def page(session: Session, stmt: Select[Any], query: ListQuery, fields: FieldMap, *,
         where: Sequence[ColumnElement[bool]] = (), load: Sequence[ExecutableOption] = (),
         counted: bool = True, total: Callable[[], int | None] | None = None,
         walked_where: Sequence[ColumnElement[bool]] | None = None,
         where_after_filters: Sequence[ColumnElement[bool]] = ()) -> Listing:
    """One page of ``stmt`` narrowed by ``where`` and the request's filters and search.

    With ``load`` the page's ids are read first and then their rows with those loads; with
    ``counted=False`` (``total=false``) no count is made and one row past the page says
    whether a next page exists. ``total`` may give the exact count instead of a COUNT
    statement (None from it: count in SQL); it is asked after the filters compiled, so a
    malformed request is refused the same way either way. ``walked_where`` says ``where``
    again in the form for an ordered walk that stops after a few rows; it replaces ``where``
    in the page statement of the first pages (up to ``WALKED_ROWS`` rows in).
    ``where_after_filters`` narrows like ``where`` but comes after the request's filters and
    search in the statement: SQLite reads ``id IN (subquery)`` terms in the order written and
    drives the query from the first, so a wide one (an extent's R*Tree search) goes last and a
    selective keyword filter leads (a third of the time for search+keyword+extent).
    """
    clauses = [compile_term(term, fields) for term in query.filters]
    searched = search_clause(query.search, query.search_fields, fields)
    if searched is not None:
        clauses.append(searched)
    clauses.extend(where_after_filters)
    counted_stmt = stmt.where(*where, *clauses) if where or clauses else stmt
    paged_stmt = counted_stmt
    if walked_where is not None and _walks_few_rows(query.page):
        paged_stmt = stmt.where(*walked_where, *clauses) if walked_where or clauses else stmt
    order = order_by(query.sort, fields)
    if not counted:
        return _uncounted(session, paged_stmt.order_by(*order), query.page, load)
    known = total() if total is not None else None
    return _counted(session, counted_stmt, paged_stmt, order, query.page, load, known)


def _walks_few_rows(wanted: Page) -> bool:
    return wanted.number is not None and wanted.size is not None \
        and wanted.number * wanted.size <= WALKED_ROWS


def _counted(session: Session, counted_stmt: Select[Any], paged_stmt: Select[Any],
             order: Sequence[Any], wanted: Page, load: Sequence[ExecutableOption],
             known: int | None = None) -> Listing:
    """Count (unless ``known``), then fetch one page: two statements (three with ``load``)."""
    total = known if known is not None else \
        session.scalar(select(func.count()).select_from(counted_stmt.order_by(None).subquery())) or 0
    number = _page_number(total, wanted)
    stmt = paged_stmt.order_by(*order)
    if wanted.size is not None:
        stmt = stmt.limit(wanted.size).offset((number - 1) * wanted.size)
    return Listing(_rows(session, stmt, load), total, number, wanted.size)


def _uncounted(session: Session, stmt: Select[Any], wanted: Page,
               load: Sequence[ExecutableOption]) -> Listing:
    """One page without the count: the page and one row more, which says whether a next page
    exists. Counting every row the requester may see costs far more than the page itself on a
    large catalogue (the page walks an index and stops early)."""
    if wanted.number is None or wanted.size is None:
        raise InvalidQuery("total=false needs a page number and a page size")
    stmt = stmt.limit(wanted.size + 1).offset((wanted.number - 1) * wanted.size)
    rows = _rows(session, stmt, load)
    if not rows and wanted.number > 1:
        raise NotFound("Invalid page.")
    return Listing(rows[:wanted.size], None, wanted.number, wanted.size,
                   has_next=len(rows) > wanted.size)


def page_items(items: Sequence[T], wanted: Page) -> tuple[Sequence[T], int]:
    """The slice of an in-memory list a page asks for, and that page's number."""
    number = _page_number(len(items), wanted)
    if wanted.size is None:
        return items, number
    return items[(number - 1) * wanted.size:number * wanted.size], number


def _page_number(total: int, wanted: Page) -> int:
    """The page asked for (``last`` resolved); past the last page is a 404, as in GeoNode."""
    last = 1 if wanted.size is None else max(1, -(-total // wanted.size))
    number = last if wanted.number is None else wanted.number
    if number > last:
        raise NotFound("Invalid page.")
    return number


def _rows(session: Session, stmt: Select[Any], load: Sequence[ExecutableOption]) -> list[Any]:
    return _load_page(session, stmt, load) if load else list(session.scalars(stmt).all())


def _load_page(session: Session, stmt: Select[Any], options: Sequence[ExecutableOption]) -> list[Any]:
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
