"""/mapclient/rest/resources/ and /mapclient/rest/users/: authenticated users, their own data only."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from cartotheca.db.models import MapClientResource, User
from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import PASSWORD, make_user

CONFIG = {"map": {"center": {"x": 11.2, "y": 43.7, "crs": "EPSG:4326"}, "zoom": 6, "layers": []}}
ATTRIBUTES = [{"name": "title", "type": "string", "label": "Title", "value": "Florence"},
              {"name": "abstract", "type": "string", "label": "Abstract", "value": ""}]


@pytest.fixture
def users(db):
    make_user(db, "ana")
    make_user(db, "bob")
    return basic("ana", PASSWORD), basic("bob", PASSWORD)


def test_crud_of_ones_own_resources(client, db, users):
    ana, _ = users
    created = client.post("/mapclient/rest/resources/", headers=ana,
                          json={"name": "Florence map", "data": CONFIG, "attributes": ATTRIBUTES})
    assert created.status_code == 201, created.text
    record = created.json()
    assert record["user"] == "ana" and record["name"] == "Florence map"
    assert record["data"] == CONFIG and record["attributes"] == ATTRIBUTES
    pk = record["id"]
    listed = client.get("/mapclient/rest/resources", headers=ana).json()
    assert listed["total"] == 1 and set(listed["resources"][0]) == {
        "id", "user", "name", "creation_date", "last_update"}
    full = client.get("/mapclient/rest/resources/?full=true", headers=ana).json()["resources"][0]
    assert full["data"] == CONFIG
    one = client.get(f"/mapclient/rest/resources/{pk}/?full=true", headers=ana).json()
    assert one["attributes"] == ATTRIBUTES
    patched = client.patch(f"/mapclient/rest/resources/{pk}", headers=ana, json={"name": "Firenze"})
    assert patched.status_code == 200
    assert patched.json()["name"] == "Firenze" and patched.json()["data"] == CONFIG
    put = client.put(f"/mapclient/rest/resources/{pk}/", headers=ana, json={"name": "Only name"})
    assert put.status_code == 200
    assert put.json()["data"] is None and put.json()["attributes"] == []
    as_text = client.patch(f"/mapclient/rest/resources/{pk}", headers=ana,
                           json={"data": '{"map": {"zoom": 3}}'})
    assert as_text.json()["data"] == {"map": {"zoom": 3}}
    deleted = client.delete(f"/mapclient/rest/resources/{pk}/", headers=ana)
    assert deleted.status_code == 204 and deleted.content == b""
    assert client.get(f"/mapclient/rest/resources/{pk}", headers=ana).status_code == 404


def test_mapstores_own_resource_fields_are_accepted(client, db, users):
    """A body as MapStore's GeoStore resource model has it: the description is kept (as the
    attribute of that name), what the server decides or has no place here is ignored."""
    ana, _ = users
    body = {"id": 999, "name": "Florence map", "description": "Rivers of Tuscany",
            "creation": "2020-01-01T00:00:00Z", "lastUpdate": "2020-01-02T00:00:00Z",
            "metadata": {"name": "Florence map", "description": "Rivers of Tuscany"},
            "category": {"name": "MAP"}, "attributes": ATTRIBUTES, "canEdit": True,
            "canDelete": True, "canCopy": True, "advertised": False, "data": CONFIG}
    created = client.post("/mapclient/rest/resources/?full=true", headers=ana, json=body)
    assert created.status_code == 201, created.text
    record = created.json()
    assert record["id"] != 999 and record["name"] == "Florence map" and record["data"] == CONFIG
    assert not record["creation_date"].startswith("2020")
    described = {"name": "description", "type": "STRING", "label": "", "value": "Rivers of Tuscany"}
    assert record["attributes"] == [*ATTRIBUTES, described]
    pk = record["id"]
    # metadata alone names and describes; a later description replaces the kept one
    renamed = client.patch(f"/mapclient/rest/resources/{pk}/?full=true", headers=ana,
                           json={"metadata": {"name": "Firenze", "description": "Arno"}, "canEdit": False})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["name"] == "Firenze"
    assert renamed.json()["attributes"] == [*ATTRIBUTES, {**described, "value": "Arno"}]
    for bad in ({"description": 5}, {"metadata": "x"}, {"metadata": {"name": ""}}):
        refused = client.patch(f"/mapclient/rest/resources/{pk}/", headers=ana, json=bad)
        assert refused.status_code == 400, (bad, refused.text)


def test_others_data_is_invisible(client, db, users):
    ana, bob = users
    pk = client.post("/mapclient/rest/resources", headers=ana,
                     json={"name": "Ana's map", "data": CONFIG}).json()["id"]
    assert client.get("/mapclient/rest/resources", headers=bob).json()["resources"] == []
    for method in ("GET", "PUT", "PATCH", "DELETE"):
        response = client.request(method, f"/mapclient/rest/resources/{pk}", headers=bob,
                                  json={"name": "taken"})
        assert response.status_code == 404, method
        assert "Ana's map" not in response.text
    admin = basic("admin", ADMIN_PASSWORD)
    assert client.get(f"/mapclient/rest/resources/{pk}", headers=admin).status_code == 404
    db.rollback()
    assert db.get(MapClientResource, pk).name == "Ana's map"


def test_anonymous_gets_nothing(client, db, users):
    ana, _ = users
    pk = client.post("/mapclient/rest/resources", headers=ana, json={"name": "m"}).json()["id"]
    for method, path in (("GET", "/mapclient/rest/resources"), ("POST", "/mapclient/rest/resources"),
                         ("GET", f"/mapclient/rest/resources/{pk}"),
                         ("DELETE", f"/mapclient/rest/resources/{pk}"),
                         ("GET", "/mapclient/rest/users"), ("POST", "/mapclient/rest/users")):
        response = client.request(method, path, json={"name": "x"})
        assert response.status_code == 401, (method, path)
    db.rollback()
    assert db.scalar(select(func.count()).select_from(MapClientResource)) == 1


@pytest.mark.parametrize("body", [
    {}, {"name": ""}, {"name": 5}, {"name": "m", "data": 7}, {"name": "m", "data": "{bad"},
    {"name": "m", "attributes": "x"}, {"name": "m", "attributes": [{"type": "string"}]},
    {"name": "m", "attributes": [{"name": "a"}, {"name": "a"}]},
    {"name": "m", "attributes": [{"name": "a", "value": 3}]}, {"name": "m", "nosuch": 1}, [1],
])
def test_invalid_bodies(client, db, users, body):
    ana, _ = users
    assert client.post("/mapclient/rest/resources", headers=ana, json=body).status_code == 400
    db.rollback()
    assert db.scalar(select(func.count()).select_from(MapClientResource)) == 0


def test_resources_go_with_their_user(client, db, users):
    ana, _ = users
    client.post("/mapclient/rest/resources", headers=ana, json={"name": "m"})
    admin = basic("admin", ADMIN_PASSWORD)
    ana_id = client.get("/api/v2/users?filter{username}=ana", headers=admin).json()["users"][0]["pk"]
    assert client.delete(f"/mapclient/rest/users/{ana_id}", headers=admin).status_code == 204
    db.rollback()
    assert db.scalar(select(func.count()).select_from(MapClientResource)) == 0


def test_users(client, db, users):
    ana, bob = users
    admin = basic("admin", ADMIN_PASSWORD)
    mine = client.get("/mapclient/rest/users/", headers=ana).json()
    assert [u["username"] for u in mine["users"]] == ["ana"]
    record = mine["users"][0]
    assert set(record) == {"id", "url", "username", "email", "is_staff", "is_active", "is_superuser"}
    assert record["url"] == f"http://testserver/mapclient/rest/users/{record['id']}/"
    everyone = {u["username"] for u in client.get("/mapclient/rest/users", headers=admin).json()["users"]}
    assert {"admin", "ana", "bob"} <= everyone
    bob_id = db.scalar(select(User.id).where(User.username == "bob"))
    assert client.get(f"/mapclient/rest/users/{bob_id}", headers=ana).status_code == 404
    assert client.patch(f"/mapclient/rest/users/{bob_id}", headers=ana,
                        json={"first_name": "X"}).status_code == 404
    me = client.patch(f"/mapclient/rest/users/{record['id']}", headers=ana, json={"first_name": "Ana"})
    assert me.status_code == 200
    db.rollback()
    assert db.scalar(select(User.first_name).where(User.username == "ana")) == "Ana"
    created = client.post("/mapclient/rest/users", headers=admin,
                          json={"username": "carla", "email": "c@example.org", "password": "Very-secret-9"})
    assert created.status_code == 201 and created.json()["username"] == "carla"
    gone = client.delete(f"/mapclient/rest/users/{created.json()['id']}/", headers=admin)
    assert gone.status_code == 204
    assert client.delete(f"/mapclient/rest/users/{bob_id}", headers=ana).status_code == 404
