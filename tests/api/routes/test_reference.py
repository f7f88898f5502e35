"""Reference collections: categories, keywords, tkeywords, regions (envelope, counts, queries)."""

import json
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from cartotheca.catalogue import reference
from cartotheca.db.models import (
    Category,
    Region,
    Resource,
    Thesaurus,
    ThesaurusKeyword,
    ThesaurusKeywordLabel,
)
from cartotheca.db.models.resources import resource_tkeywords
from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user

COLLECTIONS = ("categories", "keywords", "tkeywords", "regions")


def _category_id(db, identifier: str) -> int:
    return db.scalar(select(Category.id).where(Category.identifier == identifier))


def _region_id(db, code: str) -> int:
    return db.scalar(select(Region.id).where(Region.code == code))


def _add_tkeyword(db, resource: Resource | None = None) -> ThesaurusKeyword:
    thesaurus = Thesaurus(identifier="themes", title="Themes", about="http://ex.org/t")
    db.add(thesaurus)
    db.flush()
    keyword = ThesaurusKeyword(about="http://ex.org/t/1", alt_label="Rivers", thesaurus_id=thesaurus.id)
    db.add(keyword)
    db.flush()
    db.add(ThesaurusKeywordLabel(keyword_id=keyword.id, lang="en", label="Rivers"))
    if resource is not None:
        db.execute(resource_tkeywords.insert().values(resource_id=resource.id, tkeyword_id=keyword.id))
    db.commit()
    return keyword


@pytest.mark.parametrize("name", COLLECTIONS)
def test_envelope_and_detail_keys(client, db, settings, name):
    owner = make_user(db, "ana")
    resource = make_resource(db, settings, owner, "Rivers", keywords=["hydro"], regions=["ITA"],
                             category="inlandWaters")
    _add_tkeyword(db, resource)
    body = client.get(f"/api/v2/{name}/", params={"page_size": 2}).json()
    assert set(body) == {"links", "total", "page", "page_size", name}
    assert body["page"] == 1 and body["page_size"] == 2 and body["total"] >= 1
    item = body[name][0]
    assert "id" in item and "pk" not in item
    assert item["link"] == f"http://testserver/api/v2/{name}/{item['id']}"
    detail = client.get(f"/api/v2/{name}/{item['id']}")
    assert detail.status_code == 200
    assert detail.json() == {name: item}
    assert client.get(f"/api/v2/{name}/{item['id']}/").json() == {name: item}


@pytest.mark.parametrize("name", COLLECTIONS)
def test_unknown_and_non_numeric_ids_are_404(client, name):
    for raw in ("999999", "abc", "1.5", "-1"):
        response = client.get(f"/api/v2/{name}/{raw}")
        assert response.status_code == 404, raw
        assert response.json()["success"] is False and response.json()["code"] == "not_found"


def test_categories_wire_shape_and_visible_counts(client, db, settings):
    ana, bob = make_user(db, "ana"), make_user(db, "bob")
    make_resource(db, settings, ana, "Public rivers", category="inlandWaters")
    make_resource(db, settings, ana, "Secret lakes", category="inlandWaters", public=False)
    make_resource(db, settings, bob, "Roads", category="transportation")
    wanted = {"filter{identifier}": "inlandWaters"}

    anonymous = client.get("/api/v2/categories", params=wanted).json()["categories"]
    assert len(anonymous) == 1
    item = anonymous[0]
    assert set(item) >= {"id", "identifier", "description", "gn_description", "is_choice", "fa_class",
                         "count", "link"}
    assert item["identifier"] == "inlandWaters" and item["is_choice"] is True
    assert item["count"] == 1
    mine = client.get("/api/v2/categories", params=wanted, headers=basic("ana", PASSWORD))
    assert mine.json()["categories"][0]["count"] == 2
    theirs = client.get("/api/v2/categories", params=wanted, headers=basic("bob", PASSWORD))
    assert theirs.json()["categories"][0]["count"] == 1
    detail = client.get(f"/api/v2/categories/{item['id']}", headers=basic("ana", PASSWORD))
    assert detail.json()["categories"]["count"] == 2


def test_categories_default_order_is_identifier(client):
    body = client.get("/api/v2/categories", params={"page_size": 100}).json()
    identifiers = [c["identifier"] for c in body["categories"]]
    assert identifiers == sorted(identifiers) and body["total"] == len(identifiers) > 10


@pytest.mark.parametrize("name", ("categories", "regions"))
def test_with_resources_any_case(client, db, settings, name):
    owner = make_user(db, "ana")
    make_resource(db, settings, owner, "Rivers", regions=["ITA"], category="inlandWaters")
    make_resource(db, settings, owner, "Hidden", regions=["FRA"], category="biota", public=False)
    everything = client.get(f"/api/v2/{name}").json()["total"]
    for value in ("true", "True", "TRUE"):
        body = client.get(f"/api/v2/{name}", params={"with_resources": value}).json()
        # Only what a visible resource uses: the private resource's region/category is not shown.
        assert body["total"] == 1, value
        assert body[name][0]["count"] == 1
    for value in ("false", "False"):
        assert client.get(f"/api/v2/{name}", params={"with_resources": value}).json()["total"] == everything
    owned = client.get(f"/api/v2/{name}", params={"with_resources": "true"}, headers=basic("ana", PASSWORD))
    assert owned.json()["total"] == 2


@pytest.mark.parametrize("value", ("maybe", "1", "", "yes"))
def test_with_resources_bad_value(client, value):
    response = client.get("/api/v2/regions", params={"with_resources": value})
    assert response.status_code == 400
    body = response.json()
    assert body["success"] is False and body["code"] == "invalid"
    assert "with_resources" in body["errors"][0]


def test_keywords_only_those_on_visible_resources(client, db, settings):
    ana = make_user(db, "ana")
    make_resource(db, settings, ana, "Rivers", keywords=["hydro", "water"])
    make_resource(db, settings, ana, "Roads", keywords=["water"])
    secret = make_resource(db, settings, ana, "Secret", keywords=["classified"], public=False)
    body = client.get("/api/v2/keywords").json()
    assert [(k["name"], k["count"]) for k in body["keywords"]] == [("hydro", 1), ("water", 2)]
    item = body["keywords"][0]
    assert set(item) == {"id", "name", "slug", "path", "depth", "numchild", "count", "link"}
    hidden_id = next(k.id for k in reference.keywords_by_name(db, ["classified"]))
    assert client.get(f"/api/v2/keywords/{hidden_id}").status_code == 404
    owner_view = client.get("/api/v2/keywords", headers=basic("ana", PASSWORD)).json()
    assert {k["name"] for k in owner_view["keywords"]} == {"hydro", "water", "classified"}
    assert client.get(f"/api/v2/keywords/{hidden_id}", headers=basic("ana", PASSWORD)).status_code == 200
    assert secret.id  # still stored; only hidden from the anonymous list


def test_tkeywords_shape(client, db, settings):
    ana = make_user(db, "ana")
    resource = make_resource(db, settings, ana, "Rivers")
    keyword = _add_tkeyword(db, resource)
    body = client.get("/api/v2/tkeywords").json()
    assert body["total"] == 1
    item = body["tkeywords"][0]
    assert item["id"] == keyword.id and item["name"] == "Rivers" and item["uri"] == "http://ex.org/t/1"
    assert item["thesaurus"] == {"name": "Themes", "slug": "themes", "uri": "http://ex.org/t"}
    assert item["i18n"] == {"en": "Rivers"} and item["count"] == 1
    filtered = client.get("/api/v2/tkeywords", params={"filter{thesaurus.slug}": "nosuch"}).json()
    assert filtered["total"] == 0
    assert client.get("/api/v2/tkeywords", params={"filter{thesaurus.slug}": "themes"}).json()["total"] == 1


def test_regions_wire_shape(client, db):
    italy_id = _region_id(db, "ITA")
    body = client.get(f"/api/v2/regions/{italy_id}").json()["regions"]
    assert body["code"] == "ITA" and body["name"] == "Italy" and body["srid"] == "EPSG:4326"
    assert body["parent"] == _region_id(db, "EUR") and body["level"] == 2
    for key in ("bbox_x0", "bbox_x1", "bbox_y0", "bbox_y1"):
        assert isinstance(body[key], str) and "." in body[key]
        Decimal(body[key])
    assert 6 < float(body["bbox_x0"]) < float(body["bbox_x1"]) < 19
    assert 35 < float(body["bbox_y0"]) < float(body["bbox_y1"]) < 48
    assert body["lft"] < body["rght"]
    first = client.get("/api/v2/regions", params={"page_size": 1}).json()["regions"][0]
    assert first["code"] == "GLO" and first["bbox_x0"] == "-180.000000000000000" and first["parent"] is None


def test_regions_query_language(client, db):
    by_code = client.get("/api/v2/regions", params={"filter{code}": "FRA"}).json()
    assert [r["name"] for r in by_code["regions"]] == ["France"]
    by_name = client.get("/api/v2/regions", params={"filter{name}": "Italy"}).json()
    assert [r["code"] for r in by_name["regions"]] == ["ITA"]
    fuzzy = client.get("/api/v2/regions", params={"filter{name.icontains}": "GUINEA"}).json()
    assert {"GIN", "GNB", "GNQ", "PNG"} <= {r["code"] for r in fuzzy["regions"]}
    searched = client.get("/api/v2/regions", params={"search": "zealand"}).json()
    assert [r["code"] for r in searched["regions"]] == ["NZL"]
    europe = _region_id(db, "EUR")
    children = client.get("/api/v2/regions", params={"filter{parent}": europe, "sort[]": "-name",
                                                     "page_size": 1000}).json()
    names = [r["name"] for r in children["regions"]]
    assert names == sorted(names, reverse=True) and "Germany" in names and "Japan" not in names
    assert client.get("/api/v2/regions", params={"filter{nosuch}": "1"}).status_code == 400
    assert client.get("/api/v2/regions", params={"sort[]": "count"}).status_code == 400


def test_region_filter_matches_resources(client, db, settings):
    owner = make_user(db, "ana")
    make_resource(db, settings, owner, "Alps", regions=["ITA", "FRA"])
    italy = client.get("/api/v2/regions", params={"filter{code.in}": ["ITA", "FRA", "ESP"]}).json()
    assert {r["code"]: r["count"] for r in italy["regions"]} == {"ITA": 1, "FRA": 1, "ESP": 0}


def test_counts_cost_constant_statements(client, db, settings, count_statements):
    owner = make_user(db, "ana")
    for n in range(6):
        make_resource(db, settings, owner, f"r{n}", keywords=[f"kw{n}", "shared"], regions=["ITA"],
                      category="biota")
    for name in COLLECTIONS:
        with count_statements() as small:
            assert client.get(f"/api/v2/{name}", params={"page_size": 2}).status_code == 200
        with count_statements() as large:
            assert client.get(f"/api/v2/{name}", params={"page_size": 100}).status_code == 200
        assert small.value == large.value, name
        # count, page, grouped counts (+ labels for tkeywords)
        assert large.value <= 4, (name, large.value)


def test_reference_collections_are_read_only(client, admin_auth):
    for name in COLLECTIONS:
        assert client.post(f"/api/v2/{name}", json={}, headers=admin_auth).status_code == 405
        response = client.delete(f"/api/v2/{name}/1", headers=admin_auth)
        assert response.status_code == 405 and response.json()["code"] == "method_not_allowed"


def test_regions_seed_is_complete_and_idempotent(db):
    rows = json.loads((reference.DATA / "regions.json").read_text(encoding="utf-8"))
    codes = [r["code"] for r in rows]
    assert len(codes) == len(set(codes)) and len(codes) > 250
    by_code = {r["code"]: r for r in rows}
    for row in rows:
        minx, miny, maxx, maxy = row["bbox"]
        assert -180 <= minx <= maxx <= 180 and -90 <= miny <= maxy <= 90, row["code"]
        if row["parent"] is not None:
            assert by_code[row["parent"]]["parent"] in (None, "GLO"), row["code"]
    countries = [r for r in rows if len(r["code"]) == 3 and r["parent"] in
                 {"AFR", "AMC", "ANT", "ASI", "EUR", "OCE"}]
    assert len(countries) >= 249
    assert by_code["BRA"]["parent"] == "AMC" and by_code["KEN"]["parent"] == "AFR"
    before = db.scalar(select(func.count()).select_from(Region))
    reference.seed(db)
    db.commit()
    assert db.scalar(select(func.count()).select_from(Region)) == before == len(rows)


def test_seed_adds_only_missing_regions(db):
    """An existing database that lacks some countries gets them; renamed rows are kept."""
    italy = db.scalar(select(Region).where(Region.code == "ITA"))
    original_name = italy.name
    try:
        italy.name = "Italia (local name)"
        for code in ("CHE", "AUT"):
            db.delete(db.scalar(select(Region).where(Region.code == code)))
        db.commit()
        reference.seed(db)
        db.commit()
        restored = {r.code: r for r in db.scalars(select(Region).where(
            Region.code.in_(["CHE", "AUT", "ITA", "EUR"])))}
        assert set(restored) == {"CHE", "AUT", "ITA", "EUR"}
        assert restored["CHE"].parent_id == restored["EUR"].id and restored["CHE"].level == 2
        assert restored["ITA"].name == "Italia (local name)"
        assert restored["EUR"].lft < restored["CHE"].lft < restored["CHE"].rght < restored["EUR"].rght
    finally:
        db.scalar(select(Region).where(Region.code == "ITA")).name = original_name
        db.commit()
