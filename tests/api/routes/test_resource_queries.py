"""The query language of GET /api/v2/resources over real rows: every spec §4.2 shape, exact sets."""

from __future__ import annotations

import datetime as dt
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from cartotheca.db.models import Favorite, User
from tests.conftest import basic
from tests.factories import PASSWORD, make_group, make_resource, make_user

RIVERS = "Rivers of Africa"
MOUNTAIN = "Mountain Elevation"
COAST = "Coastline Map"
PACIFIC = "Pacific Islands"
LOWER = "rivers lowercase"
ALL = {RIVERS, MOUNTAIN, COAST, PACIFIC, LOWER}


@pytest.fixture
def catalog(db, settings):
    """Five public resources that differ on every filtered property."""
    ana, bob, carol = make_user(db, "ana"), make_user(db, "bob"), make_user(db, "carol")
    made = {
        RIVERS: make_resource(
            db, settings, ana, RIVERS, resource_type="dataset", subtype="vector",
            keywords=["hydro", "water"], regions=["AFR"], category="inlandWaters",
            extent=(10.0, 0.0, 20.0, 10.0), abstract="Main rivers and lakes", featured=True,
            date=dt.datetime(2020, 1, 1)),
        MOUNTAIN: make_resource(
            db, settings, bob, MOUNTAIN, resource_type="dataset", subtype="raster",
            keywords=["terrain"], regions=["EUR"], category="elevation",
            extent=(5.0, 45.0, 15.0, 50.0), abstract="DEM of the Alps", is_approved=False,
            date=dt.datetime(2021, 6, 15)),
        COAST: make_resource(
            db, settings, ana, COAST, resource_type="map", keywords=["Hydro"], regions=["ASI"],
            extent=(175.0, -5.0, 179.0, 5.0), abstract="Shore", date=dt.datetime(2022, 3, 1)),
        PACIFIC: make_resource(
            db, settings, bob, PACIFIC, resource_type="document", category="oceans",
            extent=(-179.0, -5.0, -175.0, 5.0), abstract="rivers absent here",
            date=dt.datetime(2019, 12, 31)),
        LOWER: make_resource(
            db, settings, carol, LOWER, resource_type="geostory", keywords=["water"],
            regions=["MES"], abstract="Story", date=dt.datetime(2023, 1, 1)),
    }
    return {title: r.id for title, r in made.items()}


def titles(client, query: str, headers=None) -> set[str]:
    response = client.get(f"/api/v2/resources?page_size=100&{query}", headers=headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["total"] == len(body["resources"])
    return {r["title"] for r in body["resources"]}


def ordered(client, query: str, headers=None) -> list[str]:
    response = client.get(f"/api/v2/resources?page_size=100&{query}", headers=headers)
    assert response.status_code == 200, response.text
    return [r["title"] for r in response.json()["resources"]]


def q(value: str) -> str:
    return quote(value, safe="")


# -- search -----------------------------------------------------------------------------


@pytest.mark.parametrize(("search", "fields", "expected"), [
    ("rivers", "title", {RIVERS, LOWER}),
    ("rivers", "title&search_fields=abstract", {RIVERS, LOWER, PACIFIC}),
    ("RIVERS africa", "title&search_fields=abstract", {RIVERS}),  # AND across terms
    ("rivers lakes", "title&search_fields=abstract", {RIVERS}),  # terms may hit different fields
    ("rivers,story", "title&search_fields=abstract", {LOWER}),  # commas split terms too
    ("nowhere", "title&search_fields=abstract", set()),
])
def test_search(client, catalog, search, fields, expected):
    assert titles(client, f"search={q(search)}&search_fields={fields}") == expected


def test_search_unknown_field_is_400(client, catalog):
    response = client.get("/api/v2/resources?search=x&search_fields=nosuch")
    assert response.status_code == 400
    assert response.json()["errors"][0] == "Invalid search field: nosuch"


# -- the spec's filters -------------------------------------------------------------------


@pytest.mark.parametrize(("query", "expected"), [
    ("filter{resource_type}=dataset", {RIVERS, MOUNTAIN}),
    ("filter{resource_type.in}=map&filter{resource_type.in}=document", {COAST, PACIFIC}),
    ("filter{subtype.in}=vector&filter{subtype.in}=raster", {RIVERS, MOUNTAIN}),
    ("filter{subtype}=raster", {MOUNTAIN}),
    ("filter{featured}=true", {RIVERS}),
    ("filter{featured}=false", ALL - {RIVERS}),
    ("filter{featured}=0", ALL - {RIVERS}),
    ("filter{is_approved}=false", {MOUNTAIN}),
    ("filter{is_approved}=true", ALL - {MOUNTAIN}),
    ("filter{is_published}=true", ALL),
    ("filter{is_published}=false", set()),
    ("filter{category.identifier}=inlandWaters", {RIVERS}),
    ("filter{category.identifier}=inlandwaters", set()),  # case sensitive
    ("filter{category.identifier.in}=elevation&filter{category.identifier.in}=oceans",
     {MOUNTAIN, PACIFIC}),
    ("filter{keywords.name}=hydro", {RIVERS}),
    ("filter{keywords.name}=water", {RIVERS, LOWER}),
    ("filter{keywords.name.icontains}=HYDRO", {RIVERS, COAST}),
    ("filter{keywords.name.in}=terrain&filter{keywords.name.in}=Hydro", {MOUNTAIN, COAST}),
    ("filter{regions.name}=Africa", {RIVERS}),
    ("filter{regions.name}=Middle%20East", {LOWER}),
    ("filter{regions.code.in}=EUR&filter{regions.code.in}=ASI", {MOUNTAIN, COAST}),
    ("filter{owner.username}=ana", {RIVERS, COAST}),
    ("filter{owner.username.in}=bob&filter{owner.username.in}=carol", {MOUNTAIN, PACIFIC, LOWER}),
    ("filter{owner.username}=Ana", set()),
    # different keys are ANDed
    ("filter{owner.username}=ana&filter{resource_type}=map", {COAST}),
])
def test_filters(client, catalog, query, expected):
    assert titles(client, query) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("filter{-resource_type}=map", ALL - {COAST}),
    ("filter{-resource_type.in}=map&filter{-resource_type.in}=dataset", {PACIFIC, LOWER}),
    # negation over a relation keeps the rows that have no keyword at all
    ("filter{-keywords.name}=hydro", ALL - {RIVERS}),
    ("filter{-keywords.name}=water", {MOUNTAIN, COAST, PACIFIC}),
    # ... and over a nullable to-one relation keeps rows without a category
    ("filter{-category.identifier}=inlandWaters", ALL - {RIVERS}),
    ("filter{-subtype}=vector", ALL - {RIVERS}),
    ("filter{-featured}=true", ALL - {RIVERS}),
])
def test_negation(client, catalog, query, expected):
    assert titles(client, query) == expected


# -- every operator, with the case rules ---------------------------------------------------


@pytest.mark.parametrize(("query", "expected"), [
    ("filter{title.icontains}=rivers", {RIVERS, LOWER}),
    ("filter{title.icontains}=RIVERS", {RIVERS, LOWER}),
    ("filter{title.contains}=Rivers", {RIVERS}),
    ("filter{title.contains}=rivers", {LOWER}),
    ("filter{title.contains}=RIVERS", set()),
    ("filter{title.startswith}=rivers", {LOWER}),
    ("filter{title.startswith}=Rivers", {RIVERS}),
    ("filter{title.istartswith}=RIVERS", {RIVERS, LOWER}),
    ("filter{title.endswith}=Map", {COAST}),
    ("filter{title.endswith}=map", set()),
    ("filter{title.iendswith}=MAP", {COAST}),
    ("filter{title.iendswith}=CASE", {LOWER}),
    ("filter{title}=rivers%20lowercase", {LOWER}),
    ("filter{title}=Rivers%20Lowercase", set()),
    ("filter{title.eq}=Rivers%20Lowercase", set()),
    ("filter{title.iexact}=RIVERS%20LOWERCASE", {LOWER}),
    ("filter{title.in}=Coastline%20Map&filter{title.in}=pacific%20islands", {COAST}),
    ("filter{title.icontains}=%25", set()),  # LIKE wildcards are literal
    ("filter{title.contains}=_", set()),
    ("filter{abstract.icontains}=ALPS", {MOUNTAIN}),
])
def test_text_operators_and_case(client, catalog, query, expected):
    assert titles(client, query) == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("filter{date.gte}=2021-06-15", {MOUNTAIN, COAST, LOWER}),
    ("filter{date.gt}=2021-06-15", {COAST, LOWER}),
    ("filter{date.gt}=2021-06-15T00:00:00Z", {COAST, LOWER}),
    ("filter{date.lt}=2020-01-01", {PACIFIC}),
    ("filter{date.lte}=2020-01-01", {PACIFIC, RIVERS}),
    ("filter{date.range}=2020-01-01&filter{date.range}=2021-12-31", {RIVERS, MOUNTAIN}),
    ("filter{date.range}=2020-01-01,2021-12-31", {RIVERS, MOUNTAIN}),
    ("filter{category.isnull}=true", {COAST, LOWER}),
    ("filter{category.isnull}=false", {RIVERS, MOUNTAIN, PACIFIC}),
    ("filter{category.identifier.isnull}=true", {COAST, LOWER}),
    ("filter{keywords.isnull}=true", {PACIFIC}),
    ("filter{keywords.isnull}=false", ALL - {PACIFIC}),
    ("filter{keywords.name.isnull}=true", {PACIFIC}),
    ("filter{subtype.isnull}=true", {COAST, PACIFIC, LOWER}),
])
def test_comparison_operators(client, catalog, query, expected):
    assert titles(client, query) == expected


def test_pk_operators(client, catalog):
    ids = sorted(catalog.values())
    by_id = {v: k for k, v in catalog.items()}
    middle = ids[2]
    assert titles(client, f"filter{{pk.gt}}={middle}") == {by_id[i] for i in ids[3:]}
    assert titles(client, f"filter{{pk.gte}}={middle}") == {by_id[i] for i in ids[2:]}
    assert titles(client, f"filter{{pk.lt}}={middle}") == {by_id[i] for i in ids[:2]}
    assert titles(client, f"filter{{pk.lte}}={middle}") == {by_id[i] for i in ids[:3]}
    assert titles(client, f"filter{{pk}}={middle}") == {by_id[middle]}
    assert titles(client, f"filter{{pk.range}}={ids[1]}&filter{{pk.range}}={ids[3]}") == \
        {by_id[i] for i in ids[1:4]}
    assert titles(client, f"filter{{pk.in}}={ids[0]}&filter{{pk.in}}={ids[4]}") == \
        {by_id[ids[0]], by_id[ids[4]]}
    assert titles(client, f"filter{{pk.in}}={ids[0]},{ids[1]}") == {by_id[ids[0]], by_id[ids[1]]}
    assert titles(client, f"filter{{-pk}}={middle}") == ALL - {by_id[middle]}


@pytest.mark.parametrize(("query", "message"), [
    ("filter{nosuch}=1", "Invalid filter field: nosuch"),
    ("filter{pk}=abc", "Invalid value for filter{pk}: abc"),
    ("filter{date.gte}=yesterday", "Invalid value for filter{date.gte}: yesterday"),
    ("filter{title=x", '"filter{title" is not a well-formed filter key.'),
    ("filter{pk.range}=1", "Invalid value for filter{pk.range}: range needs two values"),
    ("sort[]=nosuch", "Invalid filter field: ['nosuch']"),
    ("sort[]=keywords.name", "Invalid filter field: ['keywords.name']"),
    ("favorite=maybe", "Invalid value for favorite: maybe"),
    ("filter{featured}=maybe", "Invalid value for filter{featured}: maybe"),
    ("filter{-featured}=maybe", "Invalid value for filter{-featured}: maybe"),
    ("filter{is_published}=2", "Invalid value for filter{is_published}: 2"),
    ("filter{is_approved}=", "Invalid value for filter{is_approved}: "),
    ("filter{advertised}=perhaps", "Invalid value for filter{advertised}: perhaps"),
    ("filter{metadata_only.in}=maybe", "Invalid value for filter{metadata_only.in}: maybe"),
    ("filter{featured.isnull}=maybe", "Invalid value for filter{featured.isnull}: maybe"),
    ("extent=1,2,3", "Invalid value for extent: 1,2,3"),
    ("extent=a,b,c,d", "Invalid value for extent: a,b,c,d"),
])
def test_bad_queries_are_400(client, catalog, query, message):
    response = client.get(f"/api/v2/resources?{query}")
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["success"] is False and body["errors"][0] == message


def test_icontains_is_not_allowed_on_numbers(client, catalog):
    response = client.get("/api/v2/resources?filter{pk.icontains}=1")
    assert response.status_code == 400


# -- favourites ---------------------------------------------------------------------------


def test_favorite_filter(client, db, catalog):
    ana_id = db.scalar(select(User.id).where(User.username == "ana"))
    for title in (MOUNTAIN, PACIFIC):
        db.add(Favorite(user_id=ana_id, resource_id=catalog[title]))
    db.commit()
    ana = basic("ana", PASSWORD)
    assert titles(client, "favorite=true", ana) == {MOUNTAIN, PACIFIC}
    assert titles(client, "favorite=true&filter{resource_type}=document", ana) == {PACIFIC}
    assert titles(client, "favorite=false", ana) == ALL
    assert titles(client, "favorite=true", basic("bob", PASSWORD)) == set()
    assert titles(client, "favorite=true") == set()
    listed = client.get("/api/v2/resources?page_size=100", headers=ana).json()["resources"]
    assert {r["title"] for r in listed if r["favorite"]} == {MOUNTAIN, PACIFIC}


# -- extent -------------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "expected"), [
    ("extent=0,-20,30,20", {RIVERS}),
    ("extent=20,10,30,20", {RIVERS}),  # touching a corner intersects
    ("extent=21,11,30,20", set()),
    ("extent=0,-20,30,20,0,40,20,60", {RIVERS, MOUNTAIN}),  # groups are ORed
    ("extent=0,-20,30,20&extent=0,40,20,60", {RIVERS, MOUNTAIN}),
    ("extent=170,-10,-170,10", {COAST, PACIFIC}),  # crosses the antimeridian
    ("extent=170,-10,190,10", {COAST, PACIFIC}),  # the same box written past 180
    ("extent=-180,-90,180,90", ALL - {LOWER}),  # a resource without extent never matches
    ("extent=12,2,13,3", {RIVERS}),  # a box inside the resource
])
def test_extent(client, catalog, query, expected):
    assert titles(client, query) == expected


# -- sorting ------------------------------------------------------------------------------


def test_sort(client, catalog):
    # The geostory is left out: "Rivers of Africa" vs "rivers lowercase" depends on collation.
    without = "filter{-resource_type}=geostory"
    asc = [COAST, MOUNTAIN, PACIFIC, RIVERS]
    assert ordered(client, f"{without}&sort[]=title") == asc
    assert ordered(client, f"{without}&sort[]=-title") == asc[::-1]
    assert ordered(client, f"{without}&ordering=-title") == asc[::-1]
    assert ordered(client, f"{without}&ordering=title") == asc
    # sort[] wins over ordering
    assert ordered(client, f"{without}&sort[]=title&ordering=-title") == asc
    # default: newest first
    assert ordered(client, "sort[]=-date") == [LOWER, COAST, MOUNTAIN, RIVERS, PACIFIC]
    assert ordered(client, "sort[]=date") == [PACIFIC, RIVERS, MOUNTAIN, COAST, LOWER]


def test_sort_over_relations(client, catalog):
    by_owner = ordered(client, "sort[]=owner.username&sort[]=title")
    assert by_owner == [COAST, RIVERS, MOUNTAIN, PACIFIC, LOWER]
    by_owner_desc = ordered(client, "sort[]=-owner.username&sort[]=title")
    assert by_owner_desc == [LOWER, MOUNTAIN, PACIFIC, COAST, RIVERS]
    by_category = ordered(client, "filter{category.isnull}=false&sort[]=category.identifier")
    assert by_category == [MOUNTAIN, RIVERS, PACIFIC]


def test_nulls_sort_the_same_on_both_databases(client, catalog):
    # PostgreSQL's placement: NULLs last ascending, first descending
    assert ordered(client, "sort[]=category.identifier&sort[]=date") == \
        [MOUNTAIN, RIVERS, PACIFIC, COAST, LOWER]
    assert ordered(client, "sort[]=-category.identifier&sort[]=date") == \
        [COAST, LOWER, PACIFIC, RIVERS, MOUNTAIN]
    assert ordered(client, "sort[]=subtype&sort[]=date") == [MOUNTAIN, RIVERS, PACIFIC, COAST, LOWER]
    assert ordered(client, "sort[]=-subtype&sort[]=date") == [PACIFIC, COAST, LOWER, RIVERS, MOUNTAIN]


# -- paging -------------------------------------------------------------------------------


def test_paging_and_links(client, catalog):
    first = client.get("/api/v2/resources?page_size=2&sort[]=date").json()
    assert (first["total"], first["page"], first["page_size"]) == (5, 1, 2)
    assert [r["title"] for r in first["resources"]] == [PACIFIC, RIVERS]
    assert first["links"]["previous"] is None
    assert first["links"]["next"].startswith("http://testserver/api/v2/resources?")
    assert "page=2" in first["links"]["next"] and "page_size=2" in first["links"]["next"]
    assert "sort%5B%5D=date" in first["links"]["next"]

    second = client.get(first["links"]["next"]).json()
    assert second["page"] == 2 and [r["title"] for r in second["resources"]] == [MOUNTAIN, COAST]
    assert "page=" not in second["links"]["previous"]  # the link to page 1 drops the parameter
    assert "page=3" in second["links"]["next"]

    last = client.get("/api/v2/resources?page_size=2&sort[]=date&page=last").json()
    assert last["page"] == 3 and [r["title"] for r in last["resources"]] == [LOWER]
    assert last["links"]["next"] is None and "page=2" in last["links"]["previous"]


def test_page_past_the_end_is_404(client, catalog):
    response = client.get("/api/v2/resources?page_size=2&page=4")
    assert response.status_code == 404
    assert response.json()["errors"] == ["Invalid page."]
    empty = client.get("/api/v2/resources?filter{title}=none").json()
    assert empty["total"] == 0 and empty["resources"] == [] and empty["links"] == \
        {"next": None, "previous": None}
    assert client.get("/api/v2/resources?filter{title}=none&page=2").status_code == 404


@pytest.mark.parametrize("query", ["page=0", "page=abc", "page_size=0", "page_size=-1",
                                   "page_size=x", "page_size=1001"])
def test_bad_paging_is_400(client, catalog, query):
    response = client.get(f"/api/v2/resources?{query}")
    assert response.status_code == 400
    assert query.split("=")[0] in response.json()["errors"][0]


def test_search_default_page_size(client, db, settings):
    owner = make_user(db, "ana")
    for n in range(23):
        make_resource(db, settings, owner, f"lake {n:02d}")
    plain = client.get("/api/v2/resources").json()
    assert plain["page_size"] == 20 and len(plain["resources"]) == 20 and plain["total"] == 23
    searched = client.get("/api/v2/resources?search=lake&search_fields=title").json()
    assert searched["page_size"] == 10 and len(searched["resources"]) == 10
    assert searched["total"] == 23
    sized = client.get("/api/v2/resources?search=lake&search_fields=title&page_size=15").json()
    assert sized["page_size"] == 15 and len(sized["resources"]) == 15


def test_no_paging_when_limit_is_zero(make_app, db, settings):
    owner = make_user(db, "ana")
    for n in range(25):
        make_resource(db, settings, owner, f"lake {n:02d}")
    with TestClient(make_app(API_LIMIT_PER_PAGE=0)) as unpaged:
        body = unpaged.get("/api/v2/resources").json()
        assert body["total"] == 25 and len(body["resources"]) == 25
        assert body["links"] == {"next": None, "previous": None}
        sized = unpaged.get("/api/v2/resources?page_size=10&page=3").json()
        assert len(sized["resources"]) == 5 and sized["page"] == 3


# -- visibility ---------------------------------------------------------------------------


def test_visibility(client, db, settings, admin_auth):
    ana, bob, member = make_user(db, "ana"), make_user(db, "bob"), make_user(db, "member")
    team = make_group(db, "Team", members=[member])
    make_resource(db, settings, ana, "public")
    make_resource(db, settings, ana, "private", public=False)
    make_resource(db, settings, ana, "shared", public=False, shared_with_group=team)
    make_resource(db, settings, ana, "to bob", public=False, shared_with_user=bob)
    make_resource(db, settings, ana, "unpublished", is_published=False)
    make_resource(db, settings, ana, "unadvertised", advertised=False)
    make_resource(db, settings, bob, "bob private", public=False)

    assert titles(client, "") == {"public"}
    assert titles(client, "", basic("bob", PASSWORD)) == {"public", "to bob", "bob private"}
    assert titles(client, "", basic("member", PASSWORD)) == {"public", "shared"}
    assert titles(client, "", basic("ana", PASSWORD)) == {
        "public", "private", "shared", "to bob", "unpublished", "unadvertised"}
    everything = {"public", "private", "shared", "to bob", "unpublished", "unadvertised",
                  "bob private"}
    assert titles(client, "", admin_auth) == everything
    # a filter never widens what one may see
    assert titles(client, "filter{is_published}=false") == set()
    assert titles(client, "filter{is_published}=false", basic("bob", PASSWORD)) == set()
    assert titles(client, "filter{is_published}=false", admin_auth) == {"unpublished"}
    assert titles(client, "filter{advertised}=false") == set()
    assert titles(client, "advertised=false", admin_auth) == {"unadvertised"}
    assert titles(client, "advertised=all", admin_auth) == everything
    assert titles(client, "advertised=all") == {"public"}
    # counts follow the same rules
    assert client.get("/api/v2/resources").json()["total"] == 1
    # unadvertised is about lists only: its own URL still answers
    unadvertised = client.get("/api/v2/resources?advertised=all", headers=basic("ana", PASSWORD))
    ident = next(r["pk"] for r in unadvertised.json()["resources"] if r["title"] == "unadvertised")
    assert client.get(f"/api/v2/resources/{ident}").status_code == 200
    unpublished = next(r["pk"] for r in client.get(
        "/api/v2/resources", headers=basic("ana", PASSWORD)).json()["resources"]
        if r["title"] == "unpublished")
    assert client.get(f"/api/v2/resources/{unpublished}").status_code == 404
    assert client.get(f"/api/v2/resources/{unpublished}", headers=basic("ana", PASSWORD)).status_code == 200
