"""A process killed (SIGKILL) in the middle of an execution: after a restart the execution ends,
and the resource is whole — never stuck in ``running``."""

from __future__ import annotations

import time

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from cartotheca.db.models import ExecutionRequest, ResourcePermission
from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user
from tests.support.ports import free_port
from tests.support.processes import wait_http

SLOW = {"CARTOTHECA_EXECUTION_STEP_DELAY": "6", "CARTOTHECA_EXECUTION_HEARTBEAT_SECONDS": "0.5"}
FAST = {"CARTOTHECA_EXECUTION_STEP_DELAY": "0", "CARTOTHECA_EXECUTION_HEARTBEAT_SECONDS": "0.5"}


def status_of(db, exec_id: str) -> str:
    db.expire_all()
    return db.scalar(select(ExecutionRequest.status).where(ExecutionRequest.exec_id == exec_id))


def wait_status(db, exec_id: str, wanted: set[str], timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    status = None
    while time.monotonic() < deadline:
        status = status_of(db, exec_id)
        if status in wanted:
            return status
        time.sleep(0.1)
    raise AssertionError(f"execution {exec_id} is {status}, wanted {wanted}")


def grants(db, resource_id: int) -> set[tuple]:
    db.expire_all()
    return set(db.execute(select(ResourcePermission.user_id, ResourcePermission.group_id,
                                 ResourcePermission.codename)
                          .where(ResourcePermission.resource_id == resource_id)).all())


def check_whole(db, resource, reader, before: set[tuple], status: str) -> None:
    after = grants(db, resource.id)
    wanted_reader = {(reader.id, None, "view_resourcebase")}
    if status == "finished":
        assert after == wanted_reader  # the whole new spec, nothing of the old
    else:
        assert after == before  # untouched


def test_inprocess_server_killed_mid_execution(db, settings, spawn, base_app):
    owner = make_user(db, "ana")
    reader = make_user(db, "rita")
    resource = make_resource(db, settings, owner, "Rivers")
    before = grants(db, resource.id)
    port = free_port()
    server = spawn(["serve", "--port", str(port)], CARTOTHECA_SITEURL=f"http://127.0.0.1:{port}/")
    server.start(**SLOW)
    base = f"http://127.0.0.1:{port}"
    wait_http(f"{base}/api/v2/")
    start = httpx.put(f"{base}/api/v2/resources/{resource.id}/permissions",
                      headers=basic("ana", PASSWORD), timeout=30,
                      json={"users": [{"id": reader.id, "permissions": "view"}], "groups": []})
    assert start.status_code == 200, start.text
    exec_id = start.json()["execution_id"]
    wait_status(db, exec_id, {"running"})
    server.kill()
    assert status_of(db, exec_id) == "running"

    server.start(**FAST)
    wait_http(f"{base}/api/v2/")
    final = wait_status(db, exec_id, {"finished", "failed"})
    check_whole(db, resource, reader, before, final)
    body = httpx.get(start.json()["status_url"], headers=basic("ana", PASSWORD), timeout=30).json()
    assert body["status"] == final


def test_celery_worker_killed_mid_execution(db, settings, spawn, make_app, broker_url):
    owner = make_user(db, "ana")
    reader = make_user(db, "rita")
    resource = make_resource(db, settings, owner, "Rivers")
    before = grants(db, resource.id)
    env = {"CARTOTHECA_TASK_BACKEND": "celery", "CARTOTHECA_CELERY_BROKER_URL": broker_url}
    worker = spawn(["worker", "--loglevel", "warning"], **env)
    worker.start(**SLOW)
    app = make_app(TASK_BACKEND="celery", CELERY_BROKER_URL=broker_url)
    with TestClient(app) as client:
        start = client.put(f"/api/v2/resources/{resource.id}/permissions",
                           headers=basic("ana", PASSWORD),
                           json={"users": [{"id": reader.id, "permissions": "view"}], "groups": []})
        assert start.status_code == 200
        exec_id = start.json()["execution_id"]
        try:
            wait_status(db, exec_id, {"running"})
        except AssertionError:
            pytest.fail("worker never started the execution:\n" + worker.log())
        worker.kill()
        assert status_of(db, exec_id) == "running"

        worker.start(**FAST)
        final = wait_status(db, exec_id, {"finished", "failed"})
        check_whole(db, resource, reader, before, final)
