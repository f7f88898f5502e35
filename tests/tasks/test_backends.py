"""Permission changes, copy, update and delete end to end on both worker backends.

In-process: worker threads of the app under test. Celery: a real ``cartotheca worker``
process on a real Redis broker.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user
from tests.support.executions import wait_execution


@pytest.fixture(params=["inprocess", "celery-redis", "celery-rabbitmq"])
def backend_client(request, make_app, spawn):
    if request.param == "inprocess":
        app = make_app(TASK_BACKEND="inprocess")
    else:
        fixture = "broker_url" if request.param == "celery-redis" else "rabbitmq_url"
        broker = request.getfixturevalue(fixture)
        worker = spawn(["worker", "--concurrency", "2", "--loglevel", "warning"],
                       CARTOTHECA_TASK_BACKEND="celery", CARTOTHECA_CELERY_BROKER_URL=broker)
        worker.start()
        app = make_app(TASK_BACKEND="celery", CELERY_BROKER_URL=broker)
    with TestClient(app) as client:
        yield client


def test_operations_end_to_end(backend_client, db, settings):
    client = backend_client
    owner = make_user(db, "ana")
    reader = make_user(db, "rita")
    resource = make_resource(db, settings, owner, "Rivers", public=False, keywords=["hydro"])
    headers = basic("ana", PASSWORD)
    reader_headers = basic("rita", PASSWORD)
    assert client.get(f"/api/v2/resources/{resource.id}", headers=reader_headers).status_code == 403

    start = client.put(f"/api/v2/resources/{resource.id}/permissions", headers=headers,
                       json={"users": [{"id": reader.id, "permissions": "view"}], "groups": []})
    assert start.status_code == 200 and start.json()["status"] == "ready"
    done = wait_execution(client.get, start.json()["status_url"], headers)
    assert done["status"] == "finished" and done["func_name"] == "set_permissions"
    seen = client.get(f"/api/v2/resources/{resource.id}", headers=reader_headers)
    assert seen.status_code == 200 and seen.json()["resource"]["perms"] == ["view_resourcebase"]

    start = client.put(f"/api/v2/resources/{resource.id}/update", headers=headers,
                       data={"vals": '{"title": "Streams"}'})
    assert wait_execution(client.get, start.json()["status_url"], headers)["status"] == "finished"
    assert client.get(f"/api/v2/resources/{resource.id}",
                      headers=headers).json()["resource"]["title"] == "Streams"

    start = client.put(f"/api/v2/resources/{resource.id}/copy", headers=headers,
                       json={"defaults": {"title": "Streams copy"}})
    done = wait_execution(client.get, start.json()["status_url"], headers)
    assert done["status"] == "finished"
    copy_id = done["output_params"]["resources"][0]["id"]
    copied = client.get(f"/api/v2/resources/{copy_id}", headers=headers).json()["resource"]
    assert copied["title"] == "Streams copy" and copied["keywords"][0]["name"] == "hydro"
    assert copied["owner"]["username"] == "ana"

    start = client.delete(f"/api/v2/resources/{resource.id}/delete", headers=headers)
    assert start.status_code == 200
    assert wait_execution(client.get, start.json()["status_url"], headers)["status"] == "finished"
    assert client.get(f"/api/v2/resources/{resource.id}", headers=headers).status_code == 404

    listed = client.get("/api/v2/executionrequest", headers=headers).json()
    assert listed["total"] == 4
    assert {r["func_name"] for r in listed["requests"]} == {"set_permissions", "update", "copy",
                                                            "delete"}
    assert client.get("/api/v2/executionrequest", headers=reader_headers).json()["total"] == 0
