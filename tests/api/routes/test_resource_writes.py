"""Writes on /api/v2/resources: create, update, delete (one and bulk), patch-all, favourites."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, func, select

from cartotheca.db.models import Favorite, Resource
from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user
from tests.support.executions import wait_execution

ANA = basic("ana", PASSWORD)
BOB = basic("bob", PASSWORD)


@pytest.fixture
def people(db):
    return make_user(db, "ana"), make_user(db, "bob")


def count_resources(db) -> int:
    db.expire_all()
    return db.scalar(select(func.count()).select_from(Resource))


def fetch(client, resource_id: int, headers=ANA) -> dict:
    response = client.get(f"/api/v2/resources/{resource_id}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["resource"]


# -- create -------------------------------------------------------------------------------


def test_create_one(client, db, people):
    response = client.post("/api/v2/resources", json={"title": "New map", "resource_type": "map",
                                                      "abstract": "drawn today"}, headers=ANA)
    assert response.status_code == 201, response.text
    record = response.json()["resource"]
    assert record["title"] == "New map" and record["resource_type"] == "map"
    assert record["owner"]["username"] == "ana" and record["is_published"] is True
    assert fetch(client, int(record["pk"]))["abstract"] == "drawn today"
    # the public may view a new resource (GeoNode's default perm spec)
    assert client.get(f"/api/v2/resources/{record['pk']}").status_code == 200


@pytest.mark.parametrize("wrap", [lambda items: items, lambda items: {"resources": items}])
def test_create_many(client, db, people, wrap):
    body = wrap([{"title": "one"}, {"title": "two", "resource_type": "document"}])
    response = client.post("/api/v2/resources", json=body, headers=ANA)
    assert response.status_code == 201, response.text
    created = response.json()["resources"]
    assert [r["title"] for r in created] == ["one", "two"]
    assert [r["resource_type"] for r in created] == ["dataset", "document"]
    assert count_resources(db) == 2


def test_create_errors_save_nothing(client, db, people):
    assert client.post("/api/v2/resources", json={"title": "x"}).status_code == 401
    bad = client.post("/api/v2/resources", json=[{"title": "ok"}, {"abstract": "no title"}],
                      headers=ANA)
    assert bad.status_code == 400
    wrong_type = client.post("/api/v2/resources", json={"title": "x", "resource_type": "layer"},
                             headers=ANA)
    assert wrong_type.status_code == 400
    assert client.post("/api/v2/resources", json={"title": "x", "featured": True},
                       headers=ANA).status_code == 403
    assert count_resources(db) == 0


# -- update -------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["put", "patch"])
def test_update_fields(client, db, settings, people, method):
    resource = make_resource(db, settings, people[0], "Old", keywords=["old"])
    body = {
        "title": "New title", "abstract": "New abstract",
        "keywords": [{"name": "rivers"}, {"name": "lakes"}],
        "category": {"identifier": "inlandWaters"}, "license": {"identifier": "CC-BY-4.0"},
        "date": "2020-05-06T07:08:09Z", "advertised": False,
    }
    response = getattr(client, method)(f"/api/v2/resources/{resource.id}", json=body, headers=ANA)
    assert response.status_code == 200, response.text
    record = response.json()["resource"]
    assert record["title"] == "New title" and record["abstract"] == "New abstract"
    assert [k["name"] for k in record["keywords"]] == ["rivers", "lakes"]
    assert record["category"]["identifier"] == "inlandWaters"
    assert record["license"] == {"identifier": "CC-BY-4.0"}
    assert record["date"] == "2020-05-06T07:08:09.000000Z" and record["advertised"] is False
    assert fetch(client, resource.id) == {**record, "last_updated": fetch(client, resource.id)[
        "last_updated"]}
    # the updated values are what filters see
    listed = client.get("/api/v2/resources?filter{keywords.name}=lakes", headers=ANA).json()
    assert [r["title"] for r in listed["resources"]] == ["New title"]
    # wrapped in the singular key works too; clearing the category with null
    wrapped = client.patch(f"/api/v2/resources/{resource.id}",
                           json={"resource": {"category": None, "keywords": []}}, headers=ANA)
    assert wrapped.status_code == 200
    assert wrapped.json()["resource"]["category"] is None
    assert wrapped.json()["resource"]["keywords"] == []


def test_flags_need_staff(client, db, settings, people, admin_auth):
    resource = make_resource(db, settings, people[0], "Mine")
    url = f"/api/v2/resources/{resource.id}"
    denied = client.patch(url, json={"featured": True}, headers=ANA)
    assert denied.status_code == 403
    assert fetch(client, resource.id)["featured"] is False
    # sending the current value is not a change
    assert client.patch(url, json={"featured": False}, headers=ANA).status_code == 200
    allowed = client.patch(url, json={"featured": True, "is_approved": False}, headers=admin_auth)
    assert allowed.status_code == 200
    record = fetch(client, resource.id, admin_auth)
    assert record["featured"] is True and record["is_approved"] is False
    assert client.patch(url, json={"featured": "yes"}, headers=admin_auth).status_code == 400


def test_update_needs_change_permission(client, db, settings, people):
    resource = make_resource(db, settings, people[0], "Mine")
    assert client.patch(f"/api/v2/resources/{resource.id}", json={"title": "x"}).status_code == 401
    assert client.patch(f"/api/v2/resources/{resource.id}", json={"title": "x"},
                        headers=BOB).status_code == 403
    assert fetch(client, resource.id)["title"] == "Mine"
    assert client.patch("/api/v2/resources/999999", json={"title": "x"}, headers=ANA).status_code == 404


@pytest.mark.parametrize(("field", "value"), [
    ("bbox_polygon", {"type": "Polygon", "coordinates": [[[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]]]}),
    ("ll_bbox_polygon", {"type": "Polygon", "coordinates": [[[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]]]}),
    ("pk", "12345"),
    ("uuid", "00000000-0000-0000-0000-000000000000"),
    ("owner", {"pk": 1, "username": "admin"}),
    ("resource_type", "map"),
    ("perms", ["change_resourcebase_permissions"]),
    ("created", "2000-01-01T00:00:00Z"),
])
def test_read_only_fields(client, db, settings, people, field, value):
    resource = make_resource(db, settings, people[0], "Fixed", extent=(1.0, 2.0, 3.0, 4.0))
    before = fetch(client, resource.id)
    response = client.patch(f"/api/v2/resources/{resource.id}",
                            json={"title": "changed", field: value}, headers=ANA)
    assert response.status_code == 400, response.text
    assert field in response.json()["errors"][0]
    after = fetch(client, resource.id)
    assert after == before  # nothing applied, not even the title


def test_echoing_a_record_back_is_accepted(client, db, settings, people):
    """Clients PUT back what they GET, read-only fields included, with the one change."""
    resource = make_resource(db, settings, people[0], "Echo", extent=(1.0, 2.0, 3.0, 4.0),
                             keywords=["a"], category="elevation")
    record = fetch(client, resource.id)
    response = client.put(f"/api/v2/resources/{resource.id}", json={**record, "title": "Echoed"},
                          headers=ANA)
    assert response.status_code == 200, response.text
    assert fetch(client, resource.id)["title"] == "Echoed"
    # re-sending a contact role with the same user plus another one, then without the first
    ana, bob = people
    both = client.patch(f"/api/v2/resources/{resource.id}",
                        json={"poc": [{"pk": bob.id}, {"pk": ana.id}]}, headers=ANA)
    assert both.status_code == 200, both.text
    assert {u["username"] for u in both.json()["resource"]["poc"]} == {"ana", "bob"}
    assert {u["username"] for u in fetch(client, resource.id)["poc"]} == {"ana", "bob"}
    only_bob = client.patch(f"/api/v2/resources/{resource.id}", json={"poc": [{"username": "bob"}]},
                            headers=ANA)
    assert [u["username"] for u in only_bob.json()["resource"]["poc"]] == ["bob"]


def test_unknown_field_is_400(client, db, settings, people):
    resource = make_resource(db, settings, people[0], "Plain")
    response = client.patch(f"/api/v2/resources/{resource.id}", json={"nosuch": 1}, headers=ANA)
    assert response.status_code == 400 and "nosuch" in response.json()["errors"][0]
    bad_category = client.patch(f"/api/v2/resources/{resource.id}",
                                json={"category": {"identifier": "nosuch"}}, headers=ANA)
    assert bad_category.status_code == 400
    assert client.patch(f"/api/v2/resources/{resource.id}", json={"title": ""},
                        headers=ANA).status_code == 400
    assert client.patch(f"/api/v2/resources/{resource.id}", json={"date": "soon"},
                        headers=ANA).status_code == 400


# -- delete -------------------------------------------------------------------------------


def test_delete_one(client, db, settings, people):
    resource = make_resource(db, settings, people[0], "Doomed")
    assert client.delete(f"/api/v2/resources/{resource.id}", headers=BOB).status_code == 403
    assert client.delete(f"/api/v2/resources/{resource.id}").status_code == 401
    response = client.delete(f"/api/v2/resources/{resource.id}", headers=ANA)
    assert response.status_code == 204 and response.content == b""
    assert client.get(f"/api/v2/resources/{resource.id}", headers=ANA).status_code == 404
    assert client.delete(f"/api/v2/resources/{resource.id}", headers=ANA).status_code == 404


@pytest.mark.parametrize("wrap", [lambda items: items, lambda items: {"resources": items}])
def test_bulk_delete(client, db, settings, people, wrap):
    ids = [make_resource(db, settings, people[0], f"r{i}").id for i in range(3)]
    response = client.request("DELETE", "/api/v2/resources", json=wrap([{"id": i} for i in ids[:2]]),
                              headers=ANA)
    assert response.status_code == 204, response.text
    assert count_resources(db) == 1
    assert client.get(f"/api/v2/resources/{ids[2]}").status_code == 200


def test_bulk_delete_is_all_or_nothing(client, db, settings, people, admin_auth):
    ana, bob = people
    mine = make_resource(db, settings, ana, "mine").id
    theirs = make_resource(db, settings, bob, "theirs").id  # public: ana may view, not delete
    private = make_resource(db, settings, bob, "private", public=False).id
    for ids, status in (([mine, theirs], 403), ([mine, private], 403), ([mine, 999999], 404)):
        response = client.request("DELETE", "/api/v2/resources", json=[{"id": i} for i in ids],
                                  headers=ANA)
        assert response.status_code == status, response.text
        assert count_resources(db) == 3
    assert client.request("DELETE", "/api/v2/resources", json=[], headers=ANA).status_code == 400
    assert client.request("DELETE", "/api/v2/resources", json=[{"id": mine}]).status_code == 401
    both = client.request("DELETE", "/api/v2/resources", json=[{"id": theirs}, {"id": private}],
                          headers=admin_auth)
    assert both.status_code == 204 and count_resources(db) == 1


# -- bulk patch and patch-all ---------------------------------------------------------------


def test_bulk_patch(make_app, db, settings, people):
    ana, bob = people
    ids = [make_resource(db, settings, ana, f"r{i}").id for i in range(2)]
    theirs = make_resource(db, settings, bob, "theirs").id
    body = [{"id": ids[0], "title": "first"}, {"id": ids[1], "abstract": "second"}]
    with TestClient(make_app()) as disabled:
        response = disabled.patch("/api/v2/resources", json=body, headers=ANA)
        assert response.status_code == 405
    with TestClient(make_app(ENABLE_BULK_UPDATE=True)) as enabled:
        response = enabled.patch("/api/v2/resources", json=body, headers=ANA)
        assert response.status_code == 200, response.text
        records = response.json()["resources"]
        assert [(r["title"], r["abstract"]) for r in records] == [("first", ""), ("r1", "second")]
        denied = enabled.patch("/api/v2/resources", json=[{"id": ids[0], "title": "again"},
                                                          {"id": theirs, "title": "mine now"}],
                               headers=ANA)
        assert denied.status_code == 403
        assert fetch(enabled, ids[0])["title"] == "first"
        assert fetch(enabled, theirs)["title"] == "theirs"


@pytest.mark.parametrize("mode", ["true", "query"])
def test_patch_all(make_app, db, settings, people, admin_auth, mode):
    ana, bob = people
    make_resource(db, settings, ana, "hydro a", keywords=["hydro"])
    make_resource(db, settings, ana, "hydro b", keywords=["hydro"])
    make_resource(db, settings, ana, "dry", keywords=["dry"])
    make_resource(db, settings, bob, "bob hydro", keywords=["hydro"])
    url = f"/api/v2/resources?patch-all={mode}&filter{{keywords.name}}=hydro"
    with TestClient(make_app()) as disabled:
        assert disabled.patch(url, json={"abstract": "x"}, headers=ANA).status_code == 405
    with TestClient(make_app(ENABLE_PATCH_ALL=True)) as enabled:
        response = enabled.patch(url, json={"abstract": "wet"}, headers=ANA)
        assert response.status_code == 200, response.text
        assert response.json() == {"meta": {"updated": 2}}  # bob's resource is not ana's to change
        listed = enabled.get("/api/v2/resources?filter{abstract}=wet&page_size=10").json()
        assert {r["title"] for r in listed["resources"]} == {"hydro a", "hydro b"}
        everything = enabled.patch(url, json={"abstract": "all wet"}, headers=admin_auth)
        assert everything.json() == {"meta": {"updated": 3}}
        assert enabled.patch(url, json={"abstract": "x"}).status_code == 401
        assert enabled.patch(url, json={"nosuch": "x"}, headers=ANA).status_code == 400


# -- favourites ---------------------------------------------------------------------------


def test_favorites(client, db, settings, people):
    resource = make_resource(db, settings, people[1], "Liked")
    other = make_resource(db, settings, people[1], "Other")
    url = f"/api/v2/resources/{resource.id}/favorite"
    assert client.post(url).status_code == 401
    added = client.post(url, headers=ANA)
    assert added.status_code == 200
    assert added.json() == {"message": "Successfuly added resource to favorites"}
    again = client.post(url, headers=ANA)
    assert again.status_code == 400 and again.json()["errors"] == ["Resource is already in favorites"]

    listed = client.get("/api/v2/resources/favorites", headers=ANA).json()
    assert set(listed) == {"links", "total", "page", "page_size", "favorites"}
    assert [r["title"] for r in listed["favorites"]] == ["Liked"]
    assert listed["favorites"][0]["favorite"] is True
    assert client.get("/api/v2/resources/favorites", headers=BOB).json()["favorites"] == []
    assert client.get("/api/v2/resources/favorites").status_code == 401
    assert fetch(client, other.id)["favorite"] is False

    assert client.delete(url).status_code == 401
    removed = client.delete(url, headers=ANA)
    assert removed.status_code == 200
    assert client.delete(url, headers=ANA).status_code == 404
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Favorite)) == 0
    assert client.post("/api/v2/resources/999999/favorite", headers=ANA).status_code == 404


def test_favorite_added_by_a_concurrent_request_is_a_400_not_a_500(client, app, db, settings, people):
    """The same user's other request inserts the favourite between this one's check and insert:
    the unique constraint refuses the second, which is answered like any duplicate."""
    resource = make_resource(db, settings, people[1], "Raced")
    user_id = db.scalar(select(Resource.owner_id).where(Resource.id == resource.id))
    ana_id = people[0].id
    assert user_id != ana_id
    engine = app.state.cartotheca.engine
    raced = []

    def other_request_first(conn, cursor, statement, *_args):
        if statement.lstrip().upper().startswith("INSERT INTO FAVORITES") and not raced:
            raced.append(True)
            with engine.begin() as other:
                other.execute(Favorite.__table__.insert().values(user_id=ana_id, resource_id=resource.id))

    event.listen(engine, "before_cursor_execute", other_request_first)
    try:
        answer = client.post(f"/api/v2/resources/{resource.id}/favorite", headers=ANA)
    finally:
        event.remove(engine, "before_cursor_execute", other_request_first)
    assert raced == [True]
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"] == ["Resource is already in favorites"]
    assert db.scalar(select(func.count()).select_from(Favorite).where(
        Favorite.resource_id == resource.id)) == 1
    # the request's session is usable afterwards: the favourite is listed
    listed = client.get("/api/v2/resources/favorites", headers=ANA).json()["favorites"]
    assert [r["title"] for r in listed] == ["Raced"]


def test_favorite_of_invisible_resource(client, db, settings, people):
    private = make_resource(db, settings, people[1], "Hidden", public=False)
    assert client.post(f"/api/v2/resources/{private.id}/favorite", headers=ANA).status_code == 403


# -- resource_types and related objects ------------------------------------------------------


def test_resource_types_count_only_visible(client, db, settings, people, admin_auth):
    ana, bob = people
    make_resource(db, settings, ana, "d1")
    make_resource(db, settings, ana, "d2", public=False)
    make_resource(db, settings, bob, "m1", resource_type="map")
    make_resource(db, settings, bob, "g1", resource_type="geostory", is_published=False)

    def counts(headers=None):
        body = client.get("/api/v2/resources/resource_types", headers=headers).json()
        return {t["name"]: t["count"] for t in body["resource_types"]}

    assert counts() == {"dataset": 1, "map": 1, "document": 0, "geostory": 0, "dashboard": 0}
    assert counts(ANA)["dataset"] == 2
    assert counts(BOB)["geostory"] == 1 and counts(BOB)["dataset"] == 1
    assert counts(admin_auth) == {"dataset": 2, "map": 1, "document": 0, "geostory": 1,
                                  "dashboard": 0}


def test_related_objects(client, db, settings, people):
    resource = make_resource(db, settings, people[0], "Related", keywords=["b", "a"])
    keywords = client.get(f"/api/v2/resources/{resource.id}/keywords")
    assert keywords.status_code == 200
    assert keywords.json() == {"keywords": [{"name": "b", "slug": "b"}, {"name": "a", "slug": "a"}]}
    owner = client.get(f"/api/v2/resources/{resource.id}/owner").json()["owner"]
    assert owner["username"] == "ana" and owner["pk"] == people[0].id
    assert client.get(f"/api/v2/resources/{resource.id}/nosuch").status_code == 400
    private = make_resource(db, settings, people[0], "Private", public=False)
    assert client.get(f"/api/v2/resources/{private.id}/keywords").status_code == 401
    assert client.get(f"/api/v2/resources/{private.id}/keywords", headers=BOB).status_code == 403


# -- regions ------------------------------------------------------------------------------


def test_patch_replaces_the_regions(client, db, settings, people):
    resource = make_resource(db, settings, people[0], "Lakes", regions=["ITA"])
    record = fetch(client, resource.id)
    assert [r["code"] for r in record["regions"]] == ["ITA"]
    # by code, by name in any case, or by the echoed object; repeats collapse
    changed = client.patch(f"/api/v2/resources/{resource.id}",
                           json={"regions": [{"code": "FRA"}, "spain", "FRA"]}, headers=ANA)
    assert changed.status_code == 200, changed.text
    assert sorted(r["code"] for r in changed.json()["resource"]["regions"]) == ["ESP", "FRA"]
    assert sorted(r["name"] for r in fetch(client, resource.id)["regions"]) == ["France", "Spain"]
    listed = client.get("/api/v2/resources?filter{regions.code}=ESP").json()["resources"]
    assert [int(r["pk"]) for r in listed] == [resource.id]
    # the typed endpoint writes them too, and an empty list removes them all
    cleared = client.patch(f"/api/v2/datasets/{resource.id}", json={"regions": []}, headers=ANA)
    assert cleared.status_code == 200, cleared.text
    assert fetch(client, resource.id)["regions"] == []


def test_unknown_region_is_400_and_changes_nothing(client, db, settings, people):
    resource = make_resource(db, settings, people[0], "Lakes", regions=["ITA"])
    refused = client.patch(f"/api/v2/resources/{resource.id}",
                           json={"title": "changed", "regions": ["FRA", "Atlantis"]}, headers=ANA)
    assert refused.status_code == 400
    assert refused.json()["errors"][0] == "regions: unknown region Atlantis"
    assert client.patch(f"/api/v2/resources/{resource.id}", json={"regions": "FRA"},
                        headers=ANA).status_code == 400
    after = fetch(client, resource.id)
    assert after["title"] == "Lakes" and [r["code"] for r in after["regions"]] == ["ITA"]
    # someone without the change right may not set them
    assert client.patch(f"/api/v2/resources/{resource.id}", json={"regions": ["FRA"]},
                        headers=BOB).status_code == 403


def test_update_operation_takes_regions_as_geonode_does(client, db, settings, people):
    """``PUT resources/{id}/update``: known names or codes replace the regions, other names
    become keywords, and a form-encoded body carries the list as JSON text."""
    resource = make_resource(db, settings, people[0], "Lakes", regions=["ITA"], keywords=["old"])
    start = client.put(f"/api/v2/resources/{resource.id}/update", headers=ANA,
                       data={"regions": '["France", "ESP", "Lake country"]'})
    assert start.status_code == 200, start.text
    assert wait_execution(client.get, start.json()["status_url"], ANA)["status"] == "finished"
    record = fetch(client, resource.id)
    assert sorted(r["code"] for r in record["regions"]) == ["ESP", "FRA"]
    assert [k["name"] for k in record["keywords"]] == ["Lake country"]
    # an empty list leaves the regions as they are
    again = client.put(f"/api/v2/resources/{resource.id}/update", headers=ANA,
                       json={"regions": [], "vals": {"abstract": "kept"}})
    assert wait_execution(client.get, again.json()["status_url"], ANA)["status"] == "finished"
    record = fetch(client, resource.id)
    assert record["abstract"] == "kept" and len(record["regions"]) == 2
    assert client.put(f"/api/v2/resources/{resource.id}/update", headers=ANA,
                      json={"regions": "FRA"}).status_code == 400
