"""cartotheca.catalogue.csw.repository: pycsw's repository over the catalogue's own tables.

pycsw loads the class named in its configuration (``repository.source``) and gives it the
configured ``repository.filter``; here that filter is the request's ``RequestScope`` (session,
requester, settings), so every answer is limited by ``permissions.visible_to``: anonymous
requests see public records, a user also their own and those shared with them. Records read the
resource rows directly, nothing is copied into a pycsw table.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, and_, desc, func, null, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session
from sqlalchemy.sql.selectable import Subquery

from cartotheca import siteurl, xmlsafe
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.csw.constraint import filter_element
from cartotheca.catalogue.csw.records import CatalogueRecord, records_select
from cartotheca.catalogue.query.resource_list import LOAD_OPTIONS
from cartotheca.db.models import Resource
from cartotheca.db.session import is_unavailable
from cartotheca.filters.columns import RecordFields, compile_predicate
from cartotheca.filters.parse import parse_fes
from cartotheca.settings import Settings

ISO_TIME = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class RequestScope:
    """What one CSW request may read: the repository's ``filter``."""

    session: Session
    principal: Principal
    settings: Settings
    # Errors that mean the database could not serve the request (down, connection dropped, no
    # free connection). pycsw answers every repository error with an exception report of
    # status 200 ("Invalid query syntax"); the endpoint answers these with 503 instead.
    unavailable: list[Exception] = field(default_factory=list, compare=False)


class CatalogueRepository:
    """The read-only repository interface pycsw calls (query, query_ids, query_domain, ...)."""

    def __init__(self, context: Any, repo_filter: RequestScope):
        self.context = context
        self.scope = repo_filter
        self.filter = None  # pycsw's SQL text filter; visibility is an SQL clause here instead
        self.fts = False
        self.label = "Cartotheca"
        self.local_ingest = False
        self.dbtype = repo_filter.session.get_bind().dialect.name
        self.mappings: Mapping[str, str] = context.md_core_model["mappings"]
        self.queryables = _queryables(context)

    # -- what pycsw asks ---------------------------------------------------------------------

    def query_ids(self, ids: Sequence[str]) -> list[CatalogueRecord]:
        """GetRecordById: a record's own URL answers even when it is not advertised in lists."""
        records = self._records(listing=False)
        rows = self._rows(select(records).where(records.c[self.mappings["pycsw:Identifier"]].in_(list(ids))))
        by_id = {row[self.mappings["pycsw:Identifier"]]: row for row in rows}
        return self._load([by_id[i] for i in dict.fromkeys(ids) if i in by_id])

    def query(self, constraint: Mapping[str, Any], sortby: Mapping[str, Any] | None = None,
              typenames: Any = None, maxrecords: int | str = 10,
              startposition: int = 0) -> list[Any]:
        """GetRecords: ``[matched count as text, records of the page]``."""
        records = self._records(listing=True)
        stmt = select(records)
        parsed = constraint.get("_dict") if constraint else None
        if parsed:
            node = parse_fes(filter_element(parsed, self.context.namespaces))
            stmt = stmt.where(compile_predicate(node, self._record_fields(records)))
        total = self._scalar(select(func.count()).select_from(stmt.subquery()))
        page = stmt.order_by(*self._order(records, sortby))
        page = page.offset(max(int(startposition), 0)).limit(max(int(maxrecords), 0))
        return [str(total), self._load(self._rows(page))]

    def _record_fields(self, records: Subquery) -> RecordFields:
        queryables = self.queryables["_all"]

        def column(name: str) -> ColumnElement | None:
            queryable = queryables.get(name)
            if queryable is None:
                return None
            # pycsw's flattened queryables hold {"dbcol": ...} entries and the bare core mappings
            key = queryable if isinstance(queryable, str) else queryable["dbcol"]
            return records.c[key] if key in records.c else null()

        identifier = column("pycsw:Identifier")
        assert identifier is not None  # a core queryable of every pycsw profile
        box = tuple(records.c[c] for c in ("ll_minx", "ll_miny", "ll_maxx", "ll_maxy"))
        return RecordFields(column=column, identifier=identifier,
                            any_text=self.mappings["pycsw:AnyText"], box=box)  # type: ignore[arg-type]

    def query_domain(self, domain: str, typenames: Any, domainquerytype: str = "list",
                     count: bool = False) -> list[tuple]:
        """GetDomain of one property over the visible records."""
        records = self._records(listing=True)
        if domain not in records.c:
            return []
        column = records.c[domain]
        if domainquerytype == "range":
            low, high = self.scope.session.execute(select(func.min(column), func.max(column))).one()
            return [(_text(low), _text(high))]
        if count:
            stmt = select(column, func.count()).group_by(column).order_by(column)
        else:
            stmt = select(column).distinct().order_by(column)
        return [tuple(_text(v) for v in row) for row in self._execute(stmt)]

    def query_insert(self, direction: str = "max") -> str:
        """The latest (or earliest) change of a visible record: the capabilities' updateSequence."""
        records = self._records(listing=True)
        column = records.c[self.mappings["pycsw:Modified"]]
        value = self._scalar(select(func.max(column) if direction == "max" else func.min(column)))
        return (value or dt.datetime(1970, 1, 1)).strftime(ISO_TIME)

    def query_source(self, source: str) -> list:
        return []  # nothing here is harvested

    # -- building blocks -----------------------------------------------------------------------

    def _records(self, *, listing: bool) -> Subquery:
        scope = self.scope
        where = and_(Resource.dirty_state.is_(False),
                     perms.visible_to(scope.principal, scope.settings, check_advertised=listing))
        return records_select(self.mappings, where).subquery("records")

    def _order(self, records: Subquery, sortby: Mapping[str, Any] | None) -> list:
        tiebreak = records.c.resource_id
        if not sortby:
            return [records.c[self.mappings["pycsw:Title"]], tiebreak]
        if sortby.get("spatial"):
            column = (records.c.ll_maxx - records.c.ll_minx) * (records.c.ll_maxy - records.c.ll_miny)
        elif sortby.get("propertyname") in records.c:
            column = records.c[sortby["propertyname"]]
        else:
            return [tiebreak]  # a queryable the catalogue has no value for: every record ties
        return [desc(column) if sortby.get("order") == "DESC" else column, tiebreak]

    def _load(self, rows: Sequence[Mapping[str, Any]]) -> list[CatalogueRecord]:
        """The resources behind ``rows`` with everything their records write, in row order."""
        if not rows:
            return []
        ids = [row["resource_id"] for row in rows]
        loaded = self._execute(
            select(Resource).where(Resource.id.in_(ids)).options(*LOAD_OPTIONS)).scalars().unique()
        by_id = {r.id: r for r in loaded}
        site = siteurl.url(self.scope.settings)
        return [CatalogueRecord(row, by_id[row["resource_id"]], site) for row in rows
                if row["resource_id"] in by_id]

    def _rows(self, stmt) -> list[Mapping[str, Any]]:
        return list(self._execute(stmt).mappings())

    def _scalar(self, stmt) -> Any:
        return self._execute(stmt).scalar()

    def _execute(self, stmt):
        try:
            return self.scope.session.execute(stmt)
        except SQLAlchemyError as exc:
            if is_unavailable(exc):
                self.scope.unavailable.append(exc)
            # pycsw turns the error into an exception report; the session must stay usable.
            self.scope.session.rollback()
            raise


def _queryables(context: Any) -> dict[str, dict[str, Any]]:
    """pycsw's queryables of every typename, and all of them flattened under ``_all``.

    Copied per request: pycsw rewrites ``_all`` in place when it converts between schemas.
    """
    queryables: dict[str, dict[str, Any]] = {}
    for typename in context.model["typenames"].values():
        for group, entries in typename["queryables"].items():
            queryables.setdefault(group, {}).update({k: dict(v) for k, v in entries.items()})
    everything: dict[str, Any] = {}
    for entries in queryables.values():
        everything.update({k: dict(v) for k, v in entries.items()})
    everything.update(context.md_core_model["mappings"])
    queryables["_all"] = everything
    return queryables


def _text(value: Any) -> str | None:
    if isinstance(value, dt.datetime):
        return value.strftime(ISO_TIME)
    return None if value is None else xmlsafe.clean(value)  # pycsw writes it into XML
