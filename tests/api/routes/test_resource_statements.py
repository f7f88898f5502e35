"""Resource lists cost a constant number of SQL statements, whatever the page size (no N+1)."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from cartotheca.db.models import Favorite
from tests.conftest import basic
from tests.factories import PASSWORD, make_group, make_resource, make_user

REGIONS = ("GLO", "AFR", "EUR", "ASI", "MES")
CATEGORIES = ("inlandWaters", "elevation", "oceans", "farming", "biota")
# Statements per request, measured on both backends; the budget keeps it from creeping up.
# A list: 2 to identify a Basic caller (user, memberships), count, page, 4 selectin loads
# (keywords, regions, tkeywords, contacts), perms of the page, favourites of the page.
LIST_BUDGET = 10
DETAIL_BUDGET = 9


@pytest.fixture
def viewer(db):
    """A regular user who belongs to the group some resources are shared with."""
    return make_user(db, "viewer")


@pytest.fixture
def grow(db, settings, viewer):
    """Adds resources until ``n`` exist, each with its own owner, 2 keywords, a region, a category."""
    team = make_group(db, "Team", members=[viewer])
    made: list[int] = []

    def to(n: int) -> list[int]:
        while len(made) < n:
            i = len(made)
            owner = make_user(db, f"owner{i:03d}", password="")
            resource = make_resource(
                db, settings, owner, f"resource {i:03d}",
                keywords=[f"kw{i % 7}", "shared"], regions=[REGIONS[i % len(REGIONS)]],
                category=CATEGORIES[i % len(CATEGORIES)], extent=(i % 90, 0, i % 90 + 1, 1),
                featured=True, shared_with_group=team if i % 3 == 0 else None,
                group=team if i % 5 == 0 else None,
            )
            db.add(Favorite(user_id=viewer.id, resource_id=resource.id))
            db.commit()
            made.append(resource.id)
        return made

    return to


def measure(client, count_statements, path: str, headers, expected_rows: int, key: str) -> int:
    with count_statements() as counter:
        response = client.get(path, headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert len(body[key]) == expected_rows
    # every record is complete: relations were loaded, not skipped
    for record in body[key]:
        assert len(record["keywords"]) == 2 and len(record["regions"]) == 1
        assert record["category"] is not None and record["owner"]["username"].startswith("owner")
        assert "view_resourcebase" in record["perms"]
    return counter.value


PRINCIPALS = ("anonymous", "viewer", "admin")


def _headers(who: str, admin_auth):
    return {"anonymous": None, "viewer": basic("viewer", PASSWORD), "admin": admin_auth}[who]


@pytest.mark.parametrize("path,key", [
    ("/api/v2/resources", "resources"),
    ("/api/v2/resources/featured", "resources"),
    ("/api/v2/resources/approved", "resources"),
    ("/api/v2/resources/published", "resources"),
    ("/api/v2/resources/favorites", "favorites"),
])
def test_list_statement_count_is_constant(client, grow, count_statements, admin_auth, path, key,
                                          backend, record_property):
    grow(20)
    small = {}
    for who in PRINCIPALS:
        if key == "favorites" and who != "viewer":
            continue
        small[who] = measure(client, count_statements, f"{path}?page_size=20",
                             _headers(who, admin_auth), 20, key)
    grow(200)
    for who, before in small.items():
        after = measure(client, count_statements, f"{path}?page_size=200",
                        _headers(who, admin_auth), 200, key)
        record_property(f"{backend}:{path}:{who}", after)
        print(f"\nSTATEMENTS {backend} {path} {who}: 20 rows -> {before}, 200 rows -> {after}")
        assert after == before
        assert after <= LIST_BUDGET


def test_filtered_list_statement_count(client, grow, count_statements, backend):
    """Filters over relations and extent are subqueries, not extra statements."""
    query = ("filter{keywords.name}=shared&filter{regions.code.in}=GLO&filter{regions.code.in}=AFR"
             "&filter{category.identifier.in}=inlandWaters&filter{category.identifier.in}=elevation"
             "&extent=-10,-10,100,10&sort[]=owner.username&search=resource&search_fields=title")
    grow(20)
    with count_statements() as small:
        first = client.get(f"/api/v2/resources?page_size=200&{query}").json()
    grow(200)
    with count_statements() as large:
        second = client.get(f"/api/v2/resources?page_size=200&{query}").json()
    assert second["total"] > first["total"] > 0
    print(f"\nSTATEMENTS {backend} filtered: {small.value} / {large.value}")
    assert small.value == large.value


def test_detail_statement_count(client, grow, count_statements, admin_auth, backend):
    ids = grow(3)
    for who in PRINCIPALS:
        with count_statements() as counter:
            response = client.get(f"/api/v2/resources/{ids[0]}", headers=_headers(who, admin_auth))
        assert response.status_code == 200
        assert len(response.json()["resource"]["keywords"]) == 2
        print(f"\nSTATEMENTS {backend} detail {who}: {counter.value}")
        assert counter.value <= DETAIL_BUDGET


def test_extent_comes_after_the_filters_in_the_list_statements(client, app, grow, backend):
    """SQLite drives a query from the first ``id IN (subquery)`` it reads, so the extent (an
    R*Tree search, wide) follows a keyword filter (selective) in both the count and the page."""
    grow(6)
    seen: list[str] = []

    def before(_conn, _cursor, statement, *_):
        if "FROM resources" in statement and "keywords.name" in statement:
            seen.append(statement)

    engine = app.state.cartotheca.engine
    event.listen(engine, "before_cursor_execute", before)
    try:
        body = client.get("/api/v2/resources?filter{keywords.name}=kw1&extent=0,0,10,1").json()
    finally:
        event.remove(engine, "before_cursor_execute", before)
    assert [r["title"] for r in body["resources"]] == ["resource 001"] and body["total"] == 1
    extent_marker = "resources_extent" if backend == "sqlite" else "&&"
    # the page's ids, and the count unless the catalogue index gave the total
    assert any("LIMIT" in statement for statement in seen) and len(seen) <= 2
    for statement in seen:
        assert statement.index("keywords.name") < statement.index(extent_marker)
