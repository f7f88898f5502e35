"""Facets (/api/v2/facets): wire shape, counts equal to the resources list, permissions, paging,
topic_contains, key, and a statement count that does not grow with resources or values."""

from __future__ import annotations

import pytest

from cartotheca.db.models import Thesaurus, ThesaurusKeyword, ThesaurusKeywordLabel
from cartotheca.db.models.resources import resource_tkeywords
from tests.conftest import basic
from tests.factories import PASSWORD, make_group, make_resource, make_user

STATIC_NAMES = ["resourcetype", "featured", "category", "keyword", "region", "owner", "group"]


@pytest.fixture
def catalogue(db, settings):
    """Five resources of two owners; ``hidden`` is private to ana (keyword ``secret``)."""
    ana, bob = make_user(db, "ana"), make_user(db, "bob")
    team = make_group(db, "Hydrology")
    closed = make_group(db, "Closed Club", access="private", members=[bob])
    themes = Thesaurus(identifier="themes", title="Themes", order=100)
    db.add(themes)
    db.flush()
    rivers_tk = ThesaurusKeyword(alt_label="Rivers-alt", thesaurus_id=themes.id)
    soils_tk = ThesaurusKeyword(alt_label="Soils-alt", thesaurus_id=themes.id)
    db.add_all([rivers_tk, soils_tk])
    db.flush()
    db.add(ThesaurusKeywordLabel(keyword_id=rivers_tk.id, lang="it", label="Fiumi"))
    rows = {
        "r1": make_resource(db, settings, ana, "Rivers of Italy", subtype="vector", category="biota",
                            keywords=["rivers", "water"], regions=["ITA"], group=team, featured=True,
                            extent=(6.0, 36.0, 18.0, 47.0)),
        "r2": make_resource(db, settings, ana, "Flood report", resource_type="document",
                            category="biota", keywords=["rivers"], regions=["FRA"]),
        "hidden": make_resource(db, settings, ana, "Secret rivers", subtype="raster", public=False,
                                category="inlandWaters", keywords=["secret"], regions=["ITA"],
                                group=closed),
        "r4": make_resource(db, settings, bob, "Water map", resource_type="map",
                            category="inlandWaters", keywords=["water"], featured=True),
        "r5": make_resource(db, settings, bob, "Borders", subtype="vector",
                            regions=["ITA", "FRA"], extent=(-5.0, 41.0, 10.0, 51.0)),
    }
    for key, tk in (("r1", rivers_tk), ("r4", rivers_tk), ("hidden", soils_tk), ("r5", soils_tk)):
        db.execute(resource_tkeywords.insert().values(resource_id=rows[key].id, tkeyword_id=tk.id))
    db.commit()
    return {"ana": ana, "bob": bob, "team": team, "closed": closed, "rows": rows,
            "tk": {"rivers": rivers_tk.id, "soils": soils_tk.id}}


def facet(client, name, headers=None, **params):
    response = client.get(f"/api/v2/facets/{name}", params=params, headers=headers or {})
    assert response.status_code == 200, response.text
    return response.json()


def counts(body) -> dict:
    return {item["key"]: item.get("count") for item in body["topics"]["items"]}


def as_user(name: str) -> dict[str, str]:
    return basic(name, PASSWORD)


# -- wire shape -----------------------------------------------------------------------------


def test_list_describes_every_facet_in_order(client, catalogue):
    body = client.get("/api/v2/facets").json()
    assert [f["name"] for f in body["facets"]] == [*STATIC_NAMES, "themes"]
    by_name = {f["name"]: f for f in body["facets"]}
    assert by_name["category"] == {"name": "category", "filter": "filter{category.identifier.in}",
                                   "label": "Category", "type": "category", "hierarchical": False,
                                   "order": 5}
    assert by_name["resourcetype"]["hierarchical"] is True
    assert by_name["resourcetype"]["filter"] == "filter{resource_type.in}"
    assert by_name["owner"]["filter"] == "filter{owner.pk.in}"
    assert by_name["group"]["filter"] == "filter{group.in}"
    assert by_name["keyword"]["filter"] == "filter{keywords.slug.in}"
    assert by_name["region"]["filter"] == "filter{regions.code.in}"
    assert by_name["themes"] == {"name": "themes", "filter": "filter{tkeywords}", "label": "Themes",
                                 "type": "thesaurus", "hierarchical": False, "order": 100,
                                 "is_localized": False}
    assert all("topics" not in f and "link" not in f for f in body["facets"])


def test_list_with_topics_links_and_config(client, catalogue):
    body = client.get("/api/v2/facets/", params={"include_topics": "true", "add_links": "True",
                                                 "include_config": "1", "lang": "it"}).json()
    by_name = {f["name"]: f for f in body["facets"]}
    assert by_name["category"]["link"] == \
        "http://testserver/api/v2/facets/category?add_links=True&lang=it"
    assert by_name["category"]["config"] == {"order": 5, "type": "select"}
    assert by_name["category"]["topics"] == {
        "page": 0, "page_size": 10, "start": 0, "total": 2,
        "items": [{"key": "biota", "label": "Biota", "count": 2, "fa_class": "fa-tree"},
                  {"key": "inlandWaters", "label": "Inland Waters", "count": 1,
                   "fa_class": "fa-ship"}],
    }
    # lang chooses the thesaurus labels; a keyword without one keeps its alternate label.
    themes = by_name["themes"]["topics"]["items"]
    assert themes == [{"key": catalogue["tk"]["rivers"], "label": "Fiumi", "is_localized": True,
                       "count": 2, "image": None},
                      {"key": catalogue["tk"]["soils"], "label": "Soils-alt", "is_localized": False,
                       "count": 1, "image": None}]


def test_one_facet_wire_shape(client, catalogue):
    body = facet(client, "resourcetype")
    assert body == {
        "name": "resourcetype", "filter": "filter{resource_type.in}", "label": "Resource type",
        "type": "base", "hierarchical": True, "order": None,
        "topics": {"page": 0, "page_size": 10, "start": 0, "total": 3, "items": [
            {"key": "dataset", "label": "dataset", "count": 2, "filter": "filter{subtype.in}",
             "items": [{"key": "vector", "label": "vector", "count": 2}]},
            {"key": "document", "label": "document", "count": 1},
            {"key": "map", "label": "map", "count": 1},
        ]},
    }
    owners = facet(client, "owner")
    ana, bob = catalogue["ana"].id, catalogue["bob"].id
    assert owners["topics"]["items"] == [{"key": ana, "label": "ana", "count": 2},
                                         {"key": bob, "label": "bob", "count": 2}]
    assert counts(facet(client, "featured")) == {True: 2, False: 2}
    assert facet(client, "featured")["topics"]["items"][0] == {"key": True, "label": "True",
                                                               "count": 2}


def test_unknown_facet_is_404(client, catalogue):
    response = client.get("/api/v2/facets/nothing-like-this")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


# -- counts equal the resources list's total -----------------------------------------------


FILTERS = {
    "resourcetype": "filter{resource_type.in}", "featured": "filter{featured}",
    "category": "filter{category.identifier.in}", "keyword": "filter{keywords.slug.in}",
    "region": "filter{regions.code.in}", "owner": "filter{owner.pk.in}", "group": "filter{group.in}",
    "themes": "filter{tkeywords}",
}


def assert_counts_match_list(client, headers, base: dict):
    listed = client.get("/api/v2/facets", params={**base, "include_topics": "true"},
                        headers=headers).json()["facets"]
    checked = 0
    for info in listed:
        assert info["filter"] == FILTERS[info["name"]]
        for item in info["topics"]["items"]:
            params = {**base, info["filter"]: str(item["key"]), "page_size": 1}
            total = client.get("/api/v2/resources", params=params, headers=headers).json()["total"]
            assert item["count"] == total, (info["name"], item, base)
            for child in item.get("items", []):
                params = {**params, item["filter"]: child["key"]}
                total = client.get("/api/v2/resources", params=params, headers=headers).json()["total"]
                assert child["count"] == total, (info["name"], child, base)
            checked += 1
    return checked


@pytest.mark.parametrize("who", ["anonymous", "ana", "bob", "admin"])
def test_every_topic_count_equals_the_resources_list_total(client, catalogue, admin_auth, who):
    headers = {"anonymous": {}, "admin": admin_auth}[who] if who in ("anonymous", "admin") \
        else as_user(who)
    for base in ({}, {"filter{resource_type.in}": "dataset"}, {"search": "rivers"},
                 {"extent": "5,40,12,48"}, {"filter{category.identifier.in}": "biota"}):
        assert assert_counts_match_list(client, headers, base) > 0, (who, base)


def test_favorites_narrow_the_counts(client, db, catalogue):
    ana_auth = as_user("ana")
    r4 = catalogue["rows"]["r4"].id
    assert client.post(f"/api/v2/resources/{r4}/favorite", headers=ana_auth).status_code == 200
    body = facet(client, "owner", ana_auth, favorite="true")
    assert counts(body) == {catalogue["bob"].id: 1}
    assert assert_counts_match_list(client, ana_auth, {"favorite": "true"}) > 0


def test_a_facet_is_counted_under_its_own_filter_as_in_geonode(client, catalogue):
    body = facet(client, "category", **{"filter{category.identifier.in}": "biota"})
    assert counts(body) == {"biota": 2}
    assert body["topics"]["total"] == 1
    owners = facet(client, "owner", **{"filter{keywords.slug.in}": "water"})
    assert counts(owners) == {catalogue["ana"].id: 1, catalogue["bob"].id: 1}


# -- permissions ----------------------------------------------------------------------------


def test_private_resources_count_only_for_those_who_see_them(client, catalogue, admin_auth):
    ana_id = catalogue["ana"].id
    for headers in ({}, as_user("bob")):
        assert "secret" not in counts(facet(client, "keyword", headers))
        assert counts(facet(client, "category", headers))["inlandWaters"] == 1
        assert counts(facet(client, "owner", headers))[ana_id] == 2
        assert counts(facet(client, "themes", headers))[catalogue["tk"]["soils"]] == 1
    for headers in (as_user("ana"), admin_auth):
        assert counts(facet(client, "keyword", headers))["secret"] == 1
        assert counts(facet(client, "category", headers))["inlandWaters"] == 2
        assert counts(facet(client, "owner", headers))[ana_id] == 3
        dataset = facet(client, "resourcetype", headers)["topics"]["items"][0]
        assert {c["key"]: c["count"] for c in dataset["items"]} == {"vector": 2, "raster": 1}


def test_group_topics_are_only_groups_the_requester_may_see(client, catalogue, admin_auth):
    team, closed = catalogue["team"].id, catalogue["closed"].id
    assert counts(facet(client, "group")) == {team: 1}
    # bob is in the private group but may not see ana's private resource in it.
    assert counts(facet(client, "group", as_user("bob"))) == {team: 1}
    assert counts(facet(client, "group", admin_auth)) == {team: 1, closed: 1}
    # Asking for a hidden group by key does not reveal its name.
    assert counts(facet(client, "group", key=[str(closed)])) == {}


# -- topic parameters -----------------------------------------------------------------------


def test_topic_contains_matches_labels_case_insensitively(client, catalogue):
    body = facet(client, "category", topic_contains="INLAND")
    assert counts(body) == {"inlandWaters": 1}
    assert body["topic_contains"] == "INLAND" and body["topics"]["total"] == 1
    assert counts(facet(client, "owner", topic_contains="an")) == {catalogue["ana"].id: 2}
    assert counts(facet(client, "region", topic_contains="ital")) == {"ITA": 2}
    assert counts(facet(client, "keyword", topic_contains="zzz")) == {}
    # A thesaurus keyword matches on its alternate or on a localized label.
    assert counts(facet(client, "themes", topic_contains="fium")) == {catalogue["tk"]["rivers"]: 2}
    assert counts(facet(client, "category", topic_contains="50%_")) == {}


def test_key_restricts_topics_and_lists_unused_keys_without_count(client, catalogue):
    body = facet(client, "category", key=["biota", "farming", "no-such-category"])
    assert body["topics"]["items"] == [
        {"key": "biota", "label": "Biota", "count": 2, "fa_class": "fa-tree"},
        {"key": "farming", "label": "Farming", "fa_class": "fa-lemon-o"},
    ]
    assert body["topics"]["total"] == 2
    ana = catalogue["ana"].id
    assert counts(facet(client, "owner", key=[str(ana)])) == {ana: 2}
    assert counts(facet(client, "featured", key=["true"])) == {True: 2}
    assert client.get("/api/v2/facets/owner", params={"key": "ana"}).status_code == 400
    maybe = client.get("/api/v2/facets/featured", params={"key": "maybe"})
    assert maybe.status_code == 400 and "Invalid value for key: maybe" in maybe.text


def test_paging_is_zero_based_with_a_total(client, catalogue):
    first = facet(client, "region", page_size=1, add_links="true")
    assert first["topics"] == {"page": 0, "page_size": 1, "start": 0, "total": 2,
                               "items": [{"key": "FRA", "label": "France", "count": 2}]}
    assert first["prev"] is None
    assert first["next"] == "http://testserver/api/v2/facets/region?page_size=1&add_links=true&page=1"
    second = facet(client, "region", page=1, page_size=1, add_links="true")
    # Equal counts are ordered by key, so pages never overlap.
    assert second["topics"]["start"] == 1 and counts(second) == {"ITA": 2}
    assert second["next"] is None and second["prev"].endswith("page=0")
    past = facet(client, "region", page=5, page_size=1)
    assert past["topics"]["items"] == [] and past["topics"]["total"] == 2
    assert facet(client, "resourcetype", page=1, page_size=2)["topics"]["items"][0]["key"] == "map"
    for bad in ({"page": "-1"}, {"page": "x"}, {"page_size": "0"}, {"page_size": "100000"}):
        response = client.get("/api/v2/facets/region", params=bad)
        assert response.status_code == 400, bad


def test_bad_parameters_are_400s_or_404s_never_500s(client, catalogue):
    assert client.get("/api/v2/facets/owner", params={"filter{nonsense}": "1"}).status_code == 400
    assert client.get("/api/v2/facets/owner", params={"key": "9" * 30}).status_code == 400
    assert client.get("/api/v2/facets/keyword", params={"key": "a\x00b"}).status_code == 400
    assert client.get("/api/v2/facets/region", params={"page": str(10**12)}).status_code == 400
    assert client.get("/api/v2/facets/them%00es").status_code == 404
    body = facet(client, "themes", lang="i\x00t", topic_contains="Riv\x00ers")
    assert counts(body) == {catalogue["tk"]["rivers"]: 2}


def test_the_api_root_does_not_list_facets_as_in_geonode(client):
    assert "facets" not in client.get("/api/v2/").json()


# -- cost -----------------------------------------------------------------------------------


def add_tkeywords(db, thesaurus_id: int, resources, prefix: str) -> None:
    for n, resource in enumerate(resources):
        keyword = ThesaurusKeyword(alt_label=f"{prefix}{n}", thesaurus_id=thesaurus_id)
        db.add(keyword)
        db.flush()
        db.execute(resource_tkeywords.insert().values(resource_id=resource.id, tkeyword_id=keyword.id))
    db.commit()


def test_statements_do_not_grow_with_resources_or_values(client, db, settings, count_statements,
                                                         admin_auth):
    owner = make_user(db, "ana")
    themes = Thesaurus(identifier="themes", title="Themes")
    db.add(themes)
    db.commit()
    first = make_resource(db, settings, owner, "one", keywords=["k0"], regions=["ITA"],
                          category="biota")
    add_tkeywords(db, themes.id, [first], "t")

    def cost(headers):
        spent = {}
        for name in [*STATIC_NAMES, "themes"]:
            with count_statements() as n:
                facet(client, name, headers, **{"filter{title.icontains}": "o"})
            spent[name] = n.value
        with count_statements() as n:
            client.get("/api/v2/facets", params={"include_topics": "1"}, headers=headers)
        spent["list"] = n.value
        return spent

    small = {who: cost(h) for who, h in (("anon", {}), ("admin", admin_auth))}
    others = [make_user(db, f"u{i}") for i in range(6)]
    regions = ["FRA", "ESP", "DEU", "AUT", "CHE", "BEL"]
    more = [make_resource(db, settings, others[i % 6], f"more {i}", keywords=[f"k{i}"],
                          regions=[regions[i % 6]], category=["farming", "health", "oceans"][i % 3],
                          resource_type=["dataset", "map", "document"][i % 3], featured=i % 2 == 0)
            for i in range(24)]
    add_tkeywords(db, themes.id, more, "more")
    large = {who: cost(h) for who, h in (("anon", {}), ("admin", admin_auth))}
    assert small == large
    # One statement per static facet; a thesaurus facet is looked up by name first; the list
    # reads the thesauri once and counts each facet once. From the catalogue index (no
    # filters: the list) one poll of the change feed stands for all the counts, then a facet
    # with counted values reads its labels (here 4 static ones and the thesaurus).
    index = client.app.state.catalogue_index
    listed = 7 if index is not None and index.ready else 9
    assert large["anon"] == {**{name: 1 for name in STATIC_NAMES}, "themes": 2, "list": listed}
