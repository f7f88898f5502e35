"""Perm specs (compact and mapping forms), their validation, and the execution endpoints."""

from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import func, select

from cartotheca.db.models import ExecutionRequest
from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import PASSWORD, make_group, make_resource, make_user


def wait(client, start, headers, timeout: float = 30.0) -> dict:
    assert start.status_code == 200, start.text
    url = start.json()["status_url"].split("testserver", 1)[1]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(url, headers=headers).json()
        if body["status"] in ("finished", "failed"):
            return body
        time.sleep(0.05)
    raise AssertionError("execution did not end")


@pytest.fixture
def scene(db, settings):
    owner = make_user(db, "olga")
    reader = make_user(db, "rita")
    team = make_group(db, "Hydro Team", members=[reader])
    resource = make_resource(db, settings, owner, "Rivers", public=False)
    return owner, reader, team, resource


def levels(body: dict) -> dict[str, str]:
    out = {f"user:{u['username']}": u["permissions"] for u in body["users"]}
    out |= {f"org:{o['name']}": o["permissions"] for o in body["organizations"]}
    out |= {f"group:{g['name']}": g["permissions"] for g in body["groups"]}
    return out


def test_put_patch_delete_permissions(client, scene):
    owner, reader, team, resource = scene
    headers = basic("olga", PASSWORD)
    url = f"/api/v2/resources/{resource.id}/permissions"
    before = client.get(url, headers=headers).json()
    assert levels(before)["user:olga"] == "owner"
    assert levels(before)["user:admin"] == "manage"
    assert levels(before)["group:anonymous"] == "none"
    assert {g["name"] for g in before["groups"]} == {"anonymous", "registered-members"}

    done = wait(client, client.put(url, headers=headers, json={
        "users": [{"id": reader.id, "permissions": "edit"}],
        "organizations": [{"id": team.id, "permissions": "view"}],
        "groups": []}), headers)
    assert done["status"] == "finished" and done["func_name"] == "set_permissions"
    now = levels(client.get(url, headers=headers).json())
    assert now["user:rita"] == "edit" and now["org:hydro-team"] == "view"
    perms = client.get(f"/api/v2/resources/{resource.id}",
                       headers=basic("rita", PASSWORD)).json()["resource"]["perms"]
    assert "change_resourcebase" in perms and "change_dataset_data" in perms
    assert "delete_resourcebase" not in perms

    # PATCH merges: the reader's level stays, the public gets view
    anonymous_id = next(g["id"] for g in before["groups"] if g["name"] == "anonymous")
    wait(client, client.patch(url, headers=headers, json={
        "groups": [{"id": anonymous_id, "permissions": "view"}]}), headers)
    now = levels(client.get(url, headers=headers).json())
    assert now["user:rita"] == "edit" and now["group:anonymous"] == "view"
    assert client.get(f"/api/v2/resources/{resource.id}").status_code == 200

    # DELETE removes every grant; the owner keeps ownership
    done = wait(client, client.delete(url, headers=headers), headers)
    assert done["func_name"] == "remove_permissions"
    now = levels(client.get(url, headers=headers).json())
    assert "user:rita" not in now and now["group:anonymous"] == "none"
    assert now["user:olga"] == "owner"


@pytest.mark.parametrize("body, message", [
    ({"users": [{"id": 1, "permissions": "superpower"}]}, "unknown permission level"),
    ({"users": [{"id": 999999, "permissions": "view"}]}, "unknown user id"),
    ({"groups": [{"id": 999999, "permissions": "view"}]}, "unknown group id"),
    ({"users": [{"permissions": "view"}]}, "needs"),
    ({"users": "everyone"}, "expected a list"),
    (["not", "an", "object"], "Expected a JSON object"),
    ({"colleagues": []}, "Unknown key"),
])
def test_bad_perm_specs_start_nothing(client, db, scene, body, message):
    _owner, _reader, _team, resource = scene
    response = client.put(f"/api/v2/resources/{resource.id}/permissions",
                          headers=basic("olga", PASSWORD), json=body)
    assert response.status_code == 400
    assert message in " ".join(response.json()["errors"])
    assert db.scalar(select(func.count()).select_from(ExecutionRequest)) == 0


def test_get_perms_and_set_perms_mapping(client, scene):
    _owner, reader, _team, resource = scene
    headers = basic("olga", PASSWORD)
    body = {"users": {"rita": ["view_resourcebase", "download_resourcebase"],
                      "AnonymousUser": ["view_resourcebase"]},
            "groups": {}}
    response = client.put(f"/api/v2/resources/{resource.id}/set_perms", headers=headers, json=body)
    assert response.status_code == 200 and response.json() == body
    mapping = client.get(f"/api/v2/resources/{resource.id}/get_perms", headers=headers).json()
    assert sorted(mapping["users"]["rita"]) == ["download_resourcebase", "view_resourcebase"]
    assert mapping["users"]["AnonymousUser"] == ["view_resourcebase"]
    assert "delete_resourcebase" in mapping["users"]["olga"]
    assert client.get(f"/api/v2/resources/{resource.id}").status_code == 200
    bad = client.put(f"/api/v2/resources/{resource.id}/set_perms", headers=headers,
                     json={"users": {"nobody-here": ["view_resourcebase"]}})
    assert bad.status_code == 400


def test_create_and_ingest(client, db):
    make_user(db, "olga")
    headers = basic("olga", PASSWORD)
    for action in ("create", "ingest"):
        start = client.post(f"/api/v2/resources/{action}/document", headers=headers,
                            data={"defaults": json.dumps({"title": f"Made by {action}"})})
        done = wait(client, start, headers)
        assert done["status"] == "finished"
        new_id = done["output_params"]["resources"][0]["id"]
        record = client.get(f"/api/v2/resources/{new_id}", headers=headers).json()["resource"]
        assert record["title"] == f"Made by {action}" and record["resource_type"] == "document"
        assert record["owner"]["username"] == "olga"
    assert client.post("/api/v2/resources/create/planet", headers=headers,
                       json={"defaults": {"title": "x"}}).status_code == 404
    assert client.post("/api/v2/resources/create/map", headers=headers,
                       json={"defaults": {"no_such_field": 1}}).status_code == 400
    assert client.post("/api/v2/resources/create/map",
                       json={"defaults": {"title": "x"}}).status_code == 401


def test_execution_endpoints(client, db, scene):
    _owner, reader, _team, resource = scene
    headers = basic("olga", PASSWORD)
    start = client.put(f"/api/v2/resources/{resource.id}/update", headers=headers,
                       json={"vals": {"abstract": "new"}})
    wait(client, start, headers)
    exec_id = start.json()["execution_id"]
    status_path = f"/api/v2/resource-service/execution-status/{exec_id}"

    assert client.get(status_path).status_code == 401
    assert client.get(status_path, headers=basic("rita", PASSWORD)).status_code == 403
    assert client.get(status_path + "/", headers=headers).status_code == 200
    missing = client.get("/api/v2/resource-service/execution-status/"
                         "00000000-0000-0000-0000-000000000000", headers=headers)
    assert missing.status_code == 404
    assert client.get("/api/v2/resource-service/execution-status/not-a-uuid",
                      headers=headers).status_code == 404

    detail = client.get(f"/api/v2/executionrequest/{exec_id}", headers=headers).json()["request"]
    assert detail["exec_id"] == exec_id and detail["action"] == "update"
    assert detail["user"] == resource.owner_id and detail["status"] == "finished"
    assert detail["link"].endswith(f"/api/v2/executionrequest/{exec_id}")

    def listed(query: str, who=headers) -> list[str]:
        body = client.get(f"/api/v2/executionrequest?{query}", headers=who).json()
        return [r["exec_id"] for r in body["requests"]]

    assert listed("filter{action}=update") == [exec_id]
    assert listed("filter{action}=copy") == []
    assert listed("filter{status}=finished") == [exec_id]
    assert listed("filter{source}=resource_service") == [exec_id]
    assert listed("", who=basic("rita", PASSWORD)) == []
    assert exec_id in listed("", who=basic("admin", ADMIN_PASSWORD))
    assert client.get("/api/v2/executionrequest?filter{nosuch}=1",
                      headers=headers).status_code == 400

    assert client.delete(f"/api/v2/executionrequest/{exec_id}", headers=headers).status_code == 204
    assert client.get(f"/api/v2/executionrequest/{exec_id}", headers=headers).status_code == 404
