"""Comparing the catalogue index's totals and facet counts with SQL's, in process.

``check_all`` runs every list query of ``catalogue_changes`` for every requester, with the
index and without it (``ListContext.counts`` None: SQL, exactly as before the index), and the
facets likewise; it also checks that the index did answer (a silent fallback to SQL would make
the comparison vacuous).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca.catalogue import facets
from cartotheca.catalogue.auth import Principal, anonymous, principal_for
from cartotheca.catalogue.index import IndexedCounts
from cartotheca.catalogue.query import ListContext, query_lists
from cartotheca.catalogue.query.resource_list import RESOURCE_FIELDS, list_resources
from cartotheca.db.models import User
from tests.support.catalogue_changes import FACET_QUERIES, LIST_QUERIES, Cast


def superuser_of(db: Session, app) -> Principal:
    admin = db.scalar(select(User).where(User.username == "admin"))
    return principal_for(db, admin, app.state.cartotheca.groups, "basic")


def requesters(db: Session, app, cast: Cast) -> dict[str, Principal]:
    groups = app.state.cartotheca.groups
    out = {"anonymous": anonymous(groups), "superuser": superuser_of(db, app)}
    for user in cast.users:
        out[user.username] = principal_for(db, user, groups, "basic")
    return out


def context(db: Session, principal: Principal, settings, items, counts=None) -> ListContext:
    items = [*items, ("page_size", "1")]
    return ListContext(db, principal, settings, query_lists(items), items, counts)


def sql_total(db: Session, principal: Principal, settings, items) -> int | None:
    return list_resources(context(db, principal, settings, items)).total


def check_lists(db: Session, counts: IndexedCounts, who: dict[str, Principal], settings,
                queries=LIST_QUERIES) -> int:
    """Every requester's total for every query: index == SQL. The number compared."""
    compared = 0
    for name, principal in who.items():
        for items in queries:
            expected = sql_total(db, principal, settings, items)
            got = counts.list_total(context(db, principal, settings, items, counts), RESOURCE_FIELDS, ())
            assert got is not None, f"the index did not answer {name} {items}"
            assert got == expected, f"{name} {dict(items)}: index {got} != SQL {expected}"
            listed = list_resources(context(db, principal, settings, items, counts)).total
            assert listed == expected
            compared += 1
    return compared


def check_facets(db: Session, counts: IndexedCounts, who: dict[str, Principal], settings) -> int:
    """Every facet's topics for every requester: index == SQL (and the index answered)."""
    compared = 0
    for name, principal in who.items():
        for items in FACET_QUERIES:
            plain = ListContext(db, principal, settings, query_lists(items), list(items), None)
            indexed = ListContext(db, principal, settings, query_lists(items), list(items), counts)
            assert counts.facet_counts(indexed, ["type"]) is not None
            # (the thesaurus facets are built per call: compare names and topic pages)
            expected = [(f.name, page) for f, page in facets.list_facets(plain, include_topics=True)]
            got = [(f.name, page) for f, page in facets.list_facets(indexed, include_topics=True)]
            assert got == expected, f"{name} {dict(items)}: facets differ"
            compared += len(got)
    return compared
