"""cartotheca.catalogue.index.counts: a list's exact total and the facets' counts from the index.

The counted set is the requester's visible set, intersected with the set of every indexed
filter term and, when the request has other filters (text search, extent, favourites, any
other ``filter{...}``), with the ids SQL finds for those alone (no visibility clause, so the
statement is cheap when they are selective). Above ``CATALOGUE_INDEX_MAX_IDS`` such ids, or
when the index is not ready or far behind, these functions answer None and the caller counts
in SQL exactly as it would without an index.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyroaring import BitMap
from sqlalchemy import ColumnElement, select

from cartotheca.catalogue.index.bitmaps import Bitmaps
from cartotheca.catalogue.index.catalogue_index import CatalogueIndex
from cartotheca.catalogue.index.terms import RESOLVED, resolve, split_terms, term_set
from cartotheca.catalogue.index.visibility import visible_set
from cartotheca.catalogue.query import FieldMap, FilterTerm, ListContext, compile_term, filter_terms
from cartotheca.catalogue.query.compile import search_clause
from cartotheca.catalogue.query.request import first, search_terms
from cartotheca.catalogue.query.resource_list import RESOURCE_FIELDS, asked_scope
from cartotheca.db.models import Resource

REFERENCE_FAMILIES = ("category", "keyword", "region", "owner", "group", "tkeyword")


@dataclass
class Scope:
    """What a request counts: its indexed terms with their values, and the SQL-only clauses."""

    terms: list[tuple[FilterTerm, list[Any]]]
    clauses: list[ColumnElement[bool]]


@dataclass
class FacetCounts:
    """Counts of one request's scope, read under the index lock at one point in time."""

    types: list[tuple[str, str | None, int]] = field(default_factory=list)  # as SQL's GROUP BY rows
    featured: list[tuple[bool, int]] = field(default_factory=list)
    by: dict[str, dict[Hashable, int]] = field(default_factory=dict)


def _scope(ctx: ListContext, terms: Sequence[FilterTerm], search: tuple[str, ...],
           search_fields: tuple[str, ...], fields: FieldMap) -> Scope:
    mine, rest = split_terms(terms, fields)
    clauses = [compile_term(t, fields) for t in rest]
    searched = search_clause(search, search_fields, fields)
    if searched is not None:
        clauses.append(searched)
    clauses.extend(asked_scope(ctx))
    return Scope(list(zip(mine, resolve(ctx.session, mine), strict=True)), clauses)


def _asks_scope(ctx: ListContext) -> bool:
    """Favourites or extent: the clauses of ``asked_scope``."""
    return first(ctx.params, "favorite") is not None or bool(ctx.params.get("extent"))


def _ids(ctx: ListContext, index: CatalogueIndex, clauses: list[ColumnElement[bool]]
         ) -> BitMap | None | bool:
    """The ids the SQL-only clauses match; True when there are none to apply; None above the
    limit (SQL counts instead)."""
    if not clauses:
        return True
    limit = index.settings.CATALOGUE_INDEX_MAX_IDS
    ids = ctx.session.scalars(select(Resource.id).where(*clauses).limit(limit + 1)).all()
    return None if len(ids) > limit else BitMap(ids)


def _counted(b: Bitmaps, ctx: ListContext, scope: Scope, ids: BitMap | bool) -> BitMap:
    counted = visible_set(b, ctx.principal, ctx.settings, first(ctx.params, "advertised"))
    for term, values in scope.terms:
        counted &= term_set(b, term, values)
    if isinstance(ids, BitMap):
        counted &= ids
    return counted


def list_total(index: CatalogueIndex, ctx: ListContext, fields: FieldMap,
               base_terms: Sequence[FilterTerm]) -> int | None:
    """The exact ``total`` of a resource list, or None (count in SQL)."""
    if not index.ready or first(ctx.params, "favorite") is not None:
        # A user's favourites are few: SQL counts them cheaply in one statement, where the
        # index would need their ids and a poll (two).
        return None
    query = ctx.query
    scope = _scope(ctx, query.filters, query.search, query.search_fields, fields)
    ids = _ids(ctx, index, scope.clauses)
    if ids is None:
        return None
    # The collection's own terms (types, a flag) read RESOURCE_FIELDS whatever ``fields`` is;
    # they name no reference table, so resolving them makes no statement.
    scope.terms[:0] = zip(base_terms, resolve(ctx.session, base_terms), strict=True)
    with index.fresh(ctx.session.connection()) as b:
        if b is None:
            return None
        return len(_counted(b, ctx, scope, ids))


def facet_counts(index: CatalogueIndex, ctx: ListContext, families: Sequence[str]) -> FacetCounts | None:
    """Counts per value of ``families`` ("type", "featured" or a reference family) over the
    request's scope, as the facets' grouped SQL counts would find them; or None."""
    if not index.ready:
        return None
    terms = filter_terms(ctx.items)
    search = search_terms(ctx.params)
    mine, rest = split_terms(terms, RESOURCE_FIELDS)
    if rest or search or any(t.path in RESOLVED for t in mine) or _asks_scope(ctx):
        # A facet costs one statement in SQL; an id set or a resolved name would make it two.
        return None
    scope = _scope(ctx, terms, search, (), RESOURCE_FIELDS)
    limit = index.settings.CATALOGUE_INDEX_MAX_TOPICS
    with index.fresh(ctx.session.connection()) as b:
        if b is None:
            return None
        if any(len(b.by[f]) > limit for f in families if f in REFERENCE_FAMILIES):
            return None
        counted = _counted(b, ctx, scope, True)
        out = FacetCounts()
        if "type" in families:
            out.types = _types(b, counted)
        if "featured" in families:
            featured = counted.intersection_cardinality(b.state["featured"])
            split = ((True, featured), (False, len(counted) - featured))
            out.featured = [(flag, n) for flag, n in split if n]
        for family in families:
            if family in REFERENCE_FAMILIES:
                out.by[family] = {key: n for key, members in b.by[family].items()
                                  if (n := counted.intersection_cardinality(members))}
        return out


def _types(b: Bitmaps, counted: BitMap) -> list[tuple[str, str | None, int]]:
    rows: list[tuple[str, str | None, int]] = []
    for rtype, members in b.by["type"].items():
        of_type = counted & members
        if not of_type:
            continue
        rest = len(of_type)
        for subtype, sub in b.by["subtype"].items():
            n = of_type.intersection_cardinality(sub)
            if n:
                rows.append((str(rtype), str(subtype), n))
                rest -= n
        if rest:
            rows.append((str(rtype), None, rest))
    return rows


class IndexedCounts:
    """What lists and facets are handed (through ``ListContext.counts``) by the composition
    root: the counting functions bound to this process's index."""

    def __init__(self, index: CatalogueIndex):
        self.index = index

    def list_total(self, ctx: ListContext, fields: FieldMap, base_terms: Sequence[FilterTerm]
                   ) -> int | None:
        return list_total(self.index, ctx, fields, base_terms)

    def facet_counts(self, ctx: ListContext, families: Sequence[str]) -> FacetCounts | None:
        return facet_counts(self.index, ctx, families)
