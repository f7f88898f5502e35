"""``total=false``: a resource page without the count of every visible row, for clients that
show results first (the web catalogue). The page, its order, visibility and the next link are
those of the counted page; ``total`` is null and the count statement is not run."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user


def _titles(body) -> list[str]:
    return [r["title"] for r in body["resources"]]


def test_uncounted_pages_match_the_counted_ones(client, db, settings):
    owner = make_user(db, "ana")
    for n in range(7):
        make_resource(db, settings, owner, f"Sheet {n}")
    make_resource(db, settings, owner, "Hidden sheet", public=False)
    for page in (1, 2, 3):
        query = f"/api/v2/resources?sort[]=title&page_size=3&page={page}"
        counted = client.get(query).json()
        uncounted = client.get(query + "&total=false")
        assert uncounted.status_code == 200
        body = uncounted.json()
        assert set(body) == set(counted)
        assert body["total"] is None and counted["total"] == 7
        assert _titles(body) == _titles(counted) and body["page"] == page and body["page_size"] == 3
        for link in ("previous", "next"):
            mine, theirs = body["links"][link], counted["links"][link]
            assert (mine is None) == (theirs is None)
            if mine is not None:  # the same page, and the links keep asking for no count
                mine, theirs = parse_qs(urlsplit(mine).query), parse_qs(urlsplit(theirs).query)
                assert mine.get("page") == theirs.get("page") and mine["total"] == ["false"]
    last = client.get("/api/v2/resources?sort[]=title&page_size=3&page=3&total=false").json()
    assert _titles(last) == ["Sheet 6"] and last["links"]["next"] is None
    first = client.get("/api/v2/resources?sort[]=title&page_size=3&total=false").json()
    assert parse_qs(urlsplit(first["links"]["next"]).query)["page"] == ["2"]
    # Past the end, as for a counted page.
    assert client.get("/api/v2/resources?page_size=3&page=4&total=false").status_code == 404
    # total=true is the default.
    assert client.get("/api/v2/resources?page_size=3&total=true").json()["total"] == 7


def test_uncounted_pages_keep_visibility_and_filters(client, db, settings):
    owner = make_user(db, "ana")
    make_resource(db, settings, owner, "Rivers", keywords=["hydro"])
    make_resource(db, settings, owner, "Lakes", keywords=["hydro"], public=False)
    make_resource(db, settings, owner, "Roads", keywords=["transport"])
    anonymous = client.get("/api/v2/resources?filter{keywords.slug}=hydro&total=false").json()
    assert _titles(anonymous) == ["Rivers"]
    own = client.get("/api/v2/resources?filter{keywords.slug}=hydro&sort[]=title&total=false",
                     headers=basic("ana", PASSWORD)).json()
    assert _titles(own) == ["Lakes", "Rivers"]
    # The typed collections take it too.
    datasets = client.get("/api/v2/datasets?total=false&search=Roads").json()
    assert datasets["total"] is None and [r["title"] for r in datasets["datasets"]] == ["Roads"]


def test_uncounted_page_runs_no_count(client, app, db, settings, count_statements):
    owner = make_user(db, "ana")
    for n in range(3):
        make_resource(db, settings, owner, f"Sheet {n}")
    with count_statements() as counted:
        assert client.get("/api/v2/resources?page_size=2").status_code == 200
    with count_statements() as uncounted:
        assert client.get("/api/v2/resources?page_size=2&total=false").status_code == 200
    assert uncounted.value == counted.value - 1


def test_bad_total_values_are_refused(client):
    response = client.get("/api/v2/resources?total=maybe")
    assert response.status_code == 400 and "total" in response.text
    assert client.get("/api/v2/resources?total=false&page=last").status_code == 400
