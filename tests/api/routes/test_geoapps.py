"""Geoapps (geostories, dashboards) and the legacy geostories path, over the full resource base."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from cartotheca.db.models import Resource, User
from tests.api.routes.test_permissions_and_executions import wait
from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import PASSWORD, make_resource, make_user

STORY = {"sections": [{"type": "title", "contents": [{"html": "<h1>Rivers</h1>"}]}],
         "settings": {"theme": "dark"}}


@pytest.fixture
def ana(db):
    make_user(db, "ana")
    return basic("ana", PASSWORD)


def create(client, headers, path="/api/v2/geoapps", **body):
    return client.post(path, headers=headers, json=body)


def resource_count(db) -> int:
    db.rollback()
    return db.scalar(select(func.count()).select_from(Resource))


def test_create_and_read_a_geostory(client, ana):
    created = create(client, ana, name="rivers-story", title="Rivers of Europe",
                     resource_type="geostory", data=STORY)
    assert created.status_code == 201, created.text
    record = created.json()["geoapp"]
    assert record["resource_type"] == "geostory" and record["name"] == "rivers-story"
    assert record["title"] == "Rivers of Europe" and record["data"] == STORY
    assert record["owner"]["username"] == "ana" and record["link"].endswith(f"/geoapps/{record['pk']}")
    assert "download_resourcebase" not in record["perms"] and "change_resourcebase" in record["perms"]
    detail = client.get(f"/api/v2/geoapps/{record['pk']}").json()["geoapp"]
    assert detail["data"] == STORY
    listed = client.get("/api/v2/geoapps").json()
    assert [g["pk"] for g in listed["geoapps"]] == [record["pk"]]
    assert "data" not in listed["geoapps"][0]
    legacy = client.get(f"/api/v2/geostories/{record['pk']}").json()["geostory"]
    assert legacy["data"] == STORY and legacy["link"].endswith(f"/geostories/{record['pk']}")
    generic = client.get(f"/api/v2/resources/{record['pk']}").json()["resource"]
    assert generic["resource_type"] == "geostory"


def test_dashboards_and_the_legacy_path(client, ana):
    dashboard = create(client, ana, name="dash", resource_type="dashboard", data={"widgets": []})
    assert dashboard.status_code == 201
    story = create(client, ana, "/api/v2/geostories", title="Only a title", data=STORY)
    assert story.status_code == 201, story.text
    assert story.json()["geostory"]["resource_type"] == "geostory"
    assert story.json()["geostory"]["name"] == "Only a title"
    wrong = create(client, ana, "/api/v2/geostories", name="x", resource_type="dashboard")
    assert wrong.status_code == 400
    geoapps = {g["name"] for g in client.get("/api/v2/geoapps").json()["geoapps"]}
    geostories = {g["name"] for g in client.get("/api/v2/geostories").json()["geostories"]}
    assert geoapps == {"dash", "Only a title"} and geostories == {"Only a title"}
    dash_pk = dashboard.json()["geoapp"]["pk"]
    assert client.get(f"/api/v2/geostories/{dash_pk}").status_code == 404
    types = {t["name"]: t["count"] for t in
             client.get("/api/v2/resources/resource_types").json()["resource_types"]}
    assert types.get("geostory") == 1 and types.get("dashboard") == 1
    only = client.get("/api/v2/resources?filter{resource_type}=dashboard").json()["resources"]
    assert [r["pk"] for r in only] == [dash_pk]


def test_bulk_create(client, ana):
    created = client.post("/api/v2/geoapps", headers=ana, json={"geoapps": [
        {"name": "a", "resource_type": "geostory"}, {"name": "b", "resource_type": "dashboard"}]})
    assert created.status_code == 201
    assert [g["name"] for g in created.json()["geoapps"]] == ["a", "b"]


@pytest.mark.parametrize("body,message", [
    ({"name": "x"}, "resource_type"),
    ({"name": "x", "resource_type": "map"}, "resource_type"),
    ({"name": "x", "resource_type": "dataset"}, "resource_type"),
    ({"resource_type": "geostory"}, "name"),
    ({"name": "x", "resource_type": "geostory", "data": [1, 2]}, "JSON object"),
    ({"name": "x", "resource_type": "geostory", "data": "{not json"}, "not valid JSON"),
    ({"name": "x", "resource_type": "geostory", "data": 5}, "JSON object"),
    ({"name": "x", "resource_type": "geostory", "nosuch": 1}, "unknown field"),
    ({"name": "", "resource_type": "geostory"}, "name"),
])
def test_invalid_creations_change_nothing(client, db, ana, body, message):
    before = resource_count(db)
    response = client.post("/api/v2/geoapps", headers=ana, json=body)
    assert response.status_code == 400, response.text
    assert message in " ".join(response.json()["errors"])
    assert resource_count(db) == before


def test_data_arrives_as_json_text_in_forms(client, ana):
    created = client.post("/api/v2/geoapps", headers=ana, data={
        "name": "form-story", "resource_type": "geostory", "data": json.dumps(STORY)})
    assert created.status_code == 201, created.text
    assert created.json()["geoapp"]["data"] == STORY


def test_data_size_is_limited(make_app, db):
    make_user(db, "ana")
    app = make_app(MAX_GEOAPP_DATA_SIZE=200)
    with TestClient(app) as client:
        headers = basic("ana", PASSWORD)
        big = {"text": "x" * 300}
        refused = create(client, headers, name="big", resource_type="geostory", data=big)
        assert refused.status_code == 400 and "MAX_GEOAPP_DATA_SIZE" in refused.json()["errors"][0]
        fine = create(client, headers, name="small", resource_type="geostory", data={"t": "x"})
        assert fine.status_code == 201
        pk = fine.json()["geoapp"]["pk"]
        grow = client.patch(f"/api/v2/geoapps/{pk}", headers=headers, json={"data": big})
        assert grow.status_code == 400
        assert client.get(f"/api/v2/geoapps/{pk}").json()["geoapp"]["data"] == {"t": "x"}


def test_names_are_unique(client, ana):
    assert create(client, ana, name="story", resource_type="geostory").status_code == 201
    again = create(client, ana, name="story", resource_type="dashboard")
    assert again.status_code == 400 and "already exists" in again.json()["errors"][0]
    other = create(client, ana, name="other", resource_type="dashboard").json()["geoapp"]
    clash = client.patch(f"/api/v2/geoapps/{other['pk']}", headers=ana, json={"name": "story"})
    assert clash.status_code == 400


def test_patch_put_and_permissions(client, db, ana):
    make_user(db, "bob")
    record = create(client, ana, name="story", resource_type="geostory", data=STORY).json()["geoapp"]
    pk = record["pk"]
    new_data = {"sections": []}
    patched = client.patch(f"/api/v2/geoapps/{pk}/", headers=ana,
                           json={"data": new_data, "title": "Renamed", "name": "story-2"})
    assert patched.status_code == 200, patched.text
    body = patched.json()["geoapp"]
    assert body["data"] == new_data and body["title"] == "Renamed" and body["name"] == "story-2"
    blob = client.patch(f"/api/v2/geoapps/{pk}", headers=ana, json={"blob": STORY})
    assert blob.status_code == 200 and blob.json()["geoapp"]["data"] == STORY
    echoed = client.put(f"/api/v2/geoapps/{pk}", headers=ana, json=blob.json()["geoapp"])
    assert echoed.status_code == 200, echoed.text
    bob = client.patch(f"/api/v2/geoapps/{pk}", headers=basic("bob", PASSWORD), json={"data": {}})
    assert bob.status_code == 403
    assert client.patch(f"/api/v2/geoapps/{pk}", json={"data": {}}).status_code == 401
    assert client.get(f"/api/v2/geoapps/{pk}").json()["geoapp"]["data"] == STORY
    unchanged = client.patch(f"/api/v2/geoapps/{pk}", headers=ana, json={"resource_type": "dashboard"})
    assert unchanged.status_code == 400


def test_private_geoapps_stay_private(client, db, ana):
    make_user(db, "bob")
    pk = create(client, ana, name="secret", title="Secret story", resource_type="geostory",
                data=STORY).json()["geoapp"]["pk"]
    assert client.put(f"/api/v2/resources/{pk}/set_perms", headers=ana,
                      json={"users": {}, "groups": {}}).status_code == 200
    assert client.get(f"/api/v2/geoapps/{pk}").status_code == 401
    assert client.get(f"/api/v2/geoapps/{pk}", headers=basic("bob", PASSWORD)).status_code == 403
    for path in ("/api/v2/geoapps", "/api/v2/geostories", "/api/v2/resources"):
        assert "Secret story" not in client.get(path, headers=basic("bob", PASSWORD)).text
    admin = basic("admin", ADMIN_PASSWORD)
    assert client.get(f"/api/v2/geoapps/{pk}", headers=admin).json()["geoapp"]["data"] == STORY


def test_favorites_permissions_and_executions(client, db, ana):
    pk = create(client, ana, name="story", resource_type="geostory", data=STORY).json()["geoapp"]["pk"]
    assert client.post(f"/api/v2/resources/{pk}/favorite", headers=ana).status_code == 200
    favorites = client.get("/api/v2/geoapps?favorite=true", headers=ana).json()["geoapps"]
    assert [f["pk"] for f in favorites] == [pk] and favorites[0]["favorite"] is True
    spec = client.get(f"/api/v2/resources/{pk}/permissions", headers=ana).json()
    assert spec["users"][0]["permissions"] == "owner"
    done = wait(client, client.put(f"/api/v2/resources/{pk}/permissions", headers=ana,
                                   json={"groups": [], "users": []}), ana)
    assert done["status"] == "finished"
    copied = wait(client, client.put(f"/api/v2/resources/{pk}/copy", headers=ana), ana)
    assert copied["status"] == "finished", copied
    copy_pk = copied["output_params"]["resources"][0]["id"]
    assert client.get(f"/api/v2/geoapps/{copy_pk}", headers=ana).json()["geoapp"]["data"] == STORY


def test_delete(client, db, ana):
    first = create(client, ana, name="a", resource_type="geostory").json()["geoapp"]["pk"]
    second = create(client, ana, name="b", resource_type="dashboard").json()["geoapp"]["pk"]
    assert client.delete(f"/api/v2/geoapps/{first}", headers=ana).status_code == 204
    assert client.request("DELETE", "/api/v2/geoapps", headers=ana,
                          json=[{"id": second}]).status_code == 204
    assert client.get("/api/v2/geoapps").json()["total"] == 0


def test_other_types_are_not_geoapps(client, db, settings, ana):
    owner = db.scalar(select(User).where(User.username == "ana"))
    dataset = make_resource(db, settings, owner, "A dataset")
    assert client.get(f"/api/v2/geoapps/{dataset.id}").status_code == 404
    assert client.patch(f"/api/v2/geoapps/{dataset.id}", headers=ana,
                        json={"title": "x"}).status_code == 404


def test_list_statements(client, ana, count_statements):
    for index in range(6):
        create(client, ana, name=f"story {index}", resource_type="geostory", data=STORY)
    with count_statements() as small:
        client.get("/api/v2/geoapps?page_size=2")
    with count_statements() as large:
        client.get("/api/v2/geoapps?page_size=6")
    assert small.value == large.value
