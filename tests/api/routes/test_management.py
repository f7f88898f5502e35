"""Management commands over HTTP: GeoNode's routes and shapes, staff only, jobs through the worker."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from cartotheca.db.base import utcnow
from cartotheca.db.models import ExecutionRequest, ManagementCommandJob, User
from tests.conftest import basic
from tests.factories import PASSWORD, make_user

BASE = "/api/v2/management"
COMMANDS = ["sync_datasets", "rebuild_index", "purge_executions", "send_notifications"]


@pytest.fixture
def rita(db):
    return make_user(db, "rita")


def wait_job(client, auth, job_id: int, timeout: float = 60.0, status: str = "FINISHED") -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"{BASE}/jobs/{job_id}", headers=auth).json()
        if job["status"] == status:
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} still {job['status']}")


def old_execution(db, days: int, status: str = "finished") -> str:
    when = utcnow() - dt.timedelta(days=days)
    execution = ExecutionRequest(func_name="copy", action="copy", status=status, input_params={},
                                 output_params={}, created=when, finished=when, last_updated=when)
    db.add(execution)
    db.commit()
    return execution.exec_id


def executions(db) -> set[str]:
    db.expire_all()
    return set(db.scalars(select(ExecutionRequest.exec_id)))


# -- commands ------------------------------------------------------------------------------------


def test_commands_are_listed(client, admin_auth):
    for url in (f"{BASE}/commands", f"{BASE}/commands/"):
        response = client.get(url, headers=admin_auth)
        assert response.status_code == 200
        assert response.json() == {"success": True, "error": None, "data": COMMANDS}


def test_command_help(client, admin_auth):
    body = client.get(f"{BASE}/commands/purge_executions/", headers=admin_auth).json()
    assert body["success"] is True and body["error"] is None
    assert body["data"].startswith("usage: cartotheca purge_executions")
    assert "--days N" in body["data"] and "finished or failed" in body["data"]
    notifications = client.get(f"{BASE}/commands/send_notifications", headers=admin_auth).json()["data"]
    assert notifications.startswith("usage: cartotheca send_notifications")
    assert "PINAX_NOTIFICATIONS_QUEUE_ALL" in notifications


def test_unknown_command_help_is_404(client, admin_auth):
    response = client.get(f"{BASE}/commands/nosuch", headers=admin_auth)
    assert response.status_code == 404
    body = response.json()
    assert body["success"] is False and body["error"] == "Command not found"
    assert body["errors"] == ["Command not found"] and body["code"] == "not_found"


ROUTES = [
    ("GET", f"{BASE}/commands"), ("GET", f"{BASE}/commands/rebuild_index"),
    ("POST", f"{BASE}/commands"), ("POST", f"{BASE}/commands/rebuild_index"),
    ("GET", f"{BASE}/jobs"), ("POST", f"{BASE}/jobs"), ("GET", f"{BASE}/jobs/{{id}}"),
    ("GET", f"{BASE}/jobs/{{id}}/status"), ("PATCH", f"{BASE}/jobs/{{id}}/start"),
    ("PATCH", f"{BASE}/jobs/{{id}}/stop"),
    ("GET", f"{BASE}/commands/rebuild_index/jobs"), ("POST", f"{BASE}/commands/rebuild_index/jobs"),
    ("GET", f"{BASE}/commands/rebuild_index/jobs/{{id}}"),
    ("GET", f"{BASE}/commands/rebuild_index/jobs/{{id}}/status"),
    ("PATCH", f"{BASE}/commands/rebuild_index/jobs/{{id}}/start"),
    ("PATCH", f"{BASE}/commands/rebuild_index/jobs/{{id}}/stop"),
]


def test_only_staff(client, db, admin_auth, rita):
    job = client.post(f"{BASE}/commands/rebuild_index", headers=admin_auth,
                      json={"autostart": False}).json()["data"]
    for method, url in ROUTES:
        url = url.format(id=job["id"])
        body = {"command": "rebuild_index", "autostart": False}
        anonymous = client.request(method, url, json=body)
        assert anonymous.status_code == 401, (method, url)
        assert anonymous.json()["code"] == "not_authenticated"
        refused = client.request(method, url, headers=basic("rita", PASSWORD), json=body)
        assert refused.status_code == 403, (method, url)
        assert refused.json()["code"] == "permission_denied"
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(ManagementCommandJob)) == 1
    assert client.get(f"{BASE}/jobs/{job['id']}", headers=admin_auth).json()["status"] == "CREATED"


def test_staff_who_are_not_superusers_may(client, db):
    make_user(db, "sam", is_staff=True)
    assert client.get(f"{BASE}/commands", headers=basic("sam", PASSWORD)).status_code == 200


# -- jobs ----------------------------------------------------------------------------------------


def test_create_runs_the_command_through_the_worker(client, db, admin_auth):
    old, recent = old_execution(db, 40), old_execution(db, 2)
    response = client.post(f"{BASE}/commands/purge_executions/", headers=admin_auth,
                           json={"args": ["--days", "30"]})
    assert response.status_code == 201
    body = response.json()
    assert body["success"] is True and body["error"] is None
    job = body["data"]
    assert set(job) == {"id", "command", "app_name", "user", "status", "created_at", "start_time", "end_time",
                        "args", "kwargs", "celery_result_id", "output_message"}
    assert job["command"] == "purge_executions" and job["app_name"] == "cartotheca.tasks"
    assert job["user"] == db.scalar(select(User.id).where(User.username == "admin"))
    assert job["status"] in ("QUEUED", "STARTED", "FINISHED") and job["args"] == ["--days", "30"]
    assert job["kwargs"] == {} and job["created_at"].endswith("Z")
    done = wait_job(client, admin_auth, job["id"])
    assert done["output_message"] == "Purged 1 finished or failed execution(s) older than 30 day(s)."
    assert done["start_time"] and done["end_time"] and done["end_time"] >= done["start_time"]
    remaining = executions(db)
    assert old not in remaining and recent in remaining and done["celery_result_id"] in remaining

    status = client.get(f"{BASE}/jobs/{job['id']}/status/", headers=admin_auth).json()
    meta = status.pop("celery_task_meta")
    assert status == done
    assert meta["status"] == "SUCCESS" and meta["date_done"].endswith("Z") and meta["traceback"] is None
    assert meta["worker"]


def test_create_without_autostart_then_start(client, db, admin_auth):
    created = client.post(f"{BASE}/jobs", headers=admin_auth,
                          json={"command": "send_notifications", "autostart": False})
    assert created.status_code == 201
    job = created.json()["data"]
    assert job["status"] == "CREATED" and job["celery_result_id"] is None
    time.sleep(0.2)
    assert client.get(f"{BASE}/jobs/{job['id']}", headers=admin_auth).json()["status"] == "CREATED"

    started = client.patch(f"{BASE}/commands/send_notifications/jobs/{job['id']}/start/", headers=admin_auth)
    assert started.status_code == 200
    assert started.json()["success"] is True and started.json()["data"]["status"] != "CREATED"
    done = wait_job(client, admin_auth, job["id"])
    assert done["output_message"] == "0 notification(s) sent."

    again = client.patch(f"{BASE}/jobs/{job['id']}/start", headers=admin_auth)
    assert again.status_code == 400
    body = again.json()
    assert body["success"] is False and body["data"]["id"] == job["id"]
    assert body["error"] == f'You can not start the job {job["id"]} because its status is "FINISHED".'
    assert body["errors"] == [body["error"]]


def test_form_encoded_create(client, admin_auth):
    response = client.post(f"{BASE}/commands/purge_executions", headers=admin_auth,
                           data={"kwargs": '{"days": 10}', "autostart": "false"})
    assert response.status_code == 201
    assert response.json()["data"]["kwargs"] == {"days": 10}


@pytest.mark.parametrize("url, body, message", [
    (f"{BASE}/commands", {}, "This field may not be null."),
    (f"{BASE}/commands/nosuch", {}, "Command not found"),
    (f"{BASE}/jobs", {"command": "nosuch"}, "Command not found"),
    (f"{BASE}/commands/purge_executions", {"args": "--days 3"}, "args must be a list"),
    (f"{BASE}/commands/purge_executions", {"kwargs": [1]}, "kwargs must be a dict"),
    (f"{BASE}/commands/purge_executions", {"args": ["--help"]}, 'Forbidden argument: "--help"'),
    (f"{BASE}/commands/purge_executions", {"args": ["--days", "x"]}, "argument --days: invalid int value"),
    (f"{BASE}/commands/purge_executions", {"args": ["--weeks", "3"]}, "unrecognized arguments"),
    (f"{BASE}/commands/purge_executions", {"kwargs": {"weeks": 3}}, "Unknown option for purge_executions"),
    (f"{BASE}/commands/purge_executions", {"kwargs": {"days": -1}}, "--days: must be 0 or more"),
    (f"{BASE}/commands/purge_executions", {"kwargs": {"days": True}}, "--days: expected an integer"),
    (f"{BASE}/commands/sync_datasets", {"kwargs": {"skip_thumbnails": "yes"}}, "--skip-thumbnails"),
    (f"{BASE}/commands/sync_datasets", {"autostart": "maybe"}, "autostart: Must be a valid boolean."),
])
def test_invalid_jobs_are_400_and_not_created(client, db, admin_auth, url, body, message):
    response = client.post(url, headers=admin_auth, json=body)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "invalid" and message in response.json()["errors"][0]
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(ManagementCommandJob)) == 0


def test_unknown_job_is_404(client, admin_auth):
    for url in (f"{BASE}/jobs/999999", f"{BASE}/jobs/abc", f"{BASE}/jobs/999999/status"):
        response = client.get(url, headers=admin_auth)
        assert response.status_code == 404 and response.json()["detail"] == "Not found."
    assert client.patch(f"{BASE}/jobs/999999/start", headers=admin_auth).status_code == 404


def test_list_filters_and_pages(client, db, admin_auth):
    staff = make_user(db, "sam", is_staff=True)
    sam = basic("sam", PASSWORD)
    ids = {}
    for name, auth in (("rebuild_index", admin_auth), ("purge_executions", admin_auth),
                       ("rebuild_index", sam)):
        job = client.post(f"{BASE}/commands/{name}", headers=auth, json={"autostart": False}).json()["data"]
        ids.setdefault(name, []).append(job["id"])
    started = client.post(f"{BASE}/commands/send_notifications", headers=admin_auth, json={}).json()["data"]
    wait_job(client, admin_auth, started["id"])

    listing = client.get(f"{BASE}/jobs/", headers=admin_auth).json()
    assert set(listing) == {"links", "total", "page", "page_size", "data"}
    assert listing["total"] == 4
    assert [j["id"] for j in listing["data"]] == sorted(
        [started["id"], *ids["rebuild_index"], *ids["purge_executions"]], reverse=True)  # newest first
    assert set(listing["data"][0]) == {"id", "command", "app_name", "user", "status", "created_at"}

    def found(query: str, url: str = f"{BASE}/jobs") -> list[int]:
        response = client.get(f"{url}?{query}", headers=admin_auth)
        assert response.status_code == 200, response.text
        return sorted(j["id"] for j in response.json()["data"])

    assert found("command=rebuild_index") == sorted(ids["rebuild_index"])
    assert found("status=CREATED") == sorted([*ids["rebuild_index"], *ids["purge_executions"]])
    assert found("status=FINISHED") == [started["id"]]
    assert found("app_name=cartotheca.search") == sorted(ids["rebuild_index"])
    assert found(f"user={staff.id}") == [ids["rebuild_index"][1]]
    assert found("user__username=sam") == [ids["rebuild_index"][1]]
    assert found(f"async_result_id={started['celery_result_id']}") == [started["id"]]
    assert found(f"celery_result_id={started['celery_result_id']}") == [started["id"]]
    assert found("filter{command}=purge_executions") == ids["purge_executions"]
    assert found("status=CREATED", f"{BASE}/commands/rebuild_index/jobs") == sorted(ids["rebuild_index"])

    page = client.get(f"{BASE}/jobs?page_size=1&page=2", headers=admin_auth).json()
    assert page["total"] == 4 and page["page"] == 2 and page["page_size"] == 1 and len(page["data"]) == 1
    assert page["links"]["next"].endswith("page=3&page_size=1")
    assert page["links"]["previous"].endswith("/api/v2/management/jobs?page_size=1")

    for query, code in (("status=DONE", 400), ("user=abc", 400), ("page=9", 404)):
        assert client.get(f"{BASE}/jobs?{query}", headers=admin_auth).status_code == code, query

    # a job is seen under its own command only
    other = ids["purge_executions"][0]
    assert client.get(f"{BASE}/commands/rebuild_index/jobs/{other}", headers=admin_auth).status_code == 404
    assert client.get(f"{BASE}/commands/purge_executions/jobs/{other}", headers=admin_auth).status_code == 200


def test_list_costs_the_same_whatever_the_page_size(client, db, admin_auth, count_statements):
    for _ in range(6):
        client.post(f"{BASE}/commands/rebuild_index", headers=admin_auth, json={"autostart": False})
    client.get(f"{BASE}/jobs?page_size=2", headers=admin_auth)  # warm the principal's caches
    with count_statements() as small:
        client.get(f"{BASE}/jobs?page_size=2", headers=admin_auth)
    with count_statements() as large:
        client.get(f"{BASE}/jobs?page_size=6", headers=admin_auth)
    assert small.value == large.value <= 6


def test_stop_a_created_job(client, admin_auth):
    job = client.post(f"{BASE}/commands/rebuild_index", headers=admin_auth,
                      json={"autostart": False}).json()["data"]
    stopped = client.patch(f"{BASE}/jobs/{job['id']}/stop", headers=admin_auth)
    assert stopped.status_code == 200 and stopped.json()["success"] is True
    data = stopped.json()["data"]
    assert data["status"] == "FINISHED" and data["output_message"] == "Stopped before it started."
    assert client.patch(f"{BASE}/jobs/{job['id']}/start", headers=admin_auth).status_code == 400
    # stopping a finished job changes nothing
    again = client.patch(f"{BASE}/jobs/{job['id']}/stop", headers=admin_auth).json()["data"]
    assert again == data


def test_stop_a_running_job(make_app, db, admin_auth):
    """Each step waits 1 s (EXECUTION_STEP_DELAY); the stop lands during the first one."""
    old = old_execution(db, 40)
    with TestClient(make_app(EXECUTION_STEP_DELAY=1.0)) as client:
        job = client.post(f"{BASE}/commands/purge_executions", headers=admin_auth,
                          json={"kwargs": {"days": 1}}).json()["data"]
        wait_job(client, admin_auth, job["id"], status="STARTED")
        stopping = client.patch(f"{BASE}/jobs/{job['id']}/stop", headers=admin_auth).json()["data"]
        assert stopping["status"] == "STARTED"  # asked; it stops at its next step
        done = wait_job(client, admin_auth, job["id"])
        assert done["output_message"] == "Stopped."
        meta = client.get(f"{BASE}/jobs/{job['id']}/status", headers=admin_auth).json()["celery_task_meta"]
        assert meta["status"] == "REVOKED"
    assert old in executions(db)  # nothing was purged


def _job_with_execution(client, db, admin_auth, execution_status: str) -> tuple[dict, ManagementCommandJob]:
    """A job that was STARTED by an execution now in ``execution_status`` (its worker died)."""
    job = client.post(f"{BASE}/commands/send_notifications", headers=admin_auth,
                      json={"autostart": False}).json()["data"]
    execution = ExecutionRequest(func_name="management_command", action="unknown", status=execution_status,
                                 input_params={"job_id": job["id"]}, output_params={}, attempts=1)
    db.add(execution)
    db.flush()
    row = db.get(ManagementCommandJob, job["id"])
    row.status, row.celery_result_id, row.start_time = "STARTED", execution.exec_id, utcnow()
    db.commit()
    return job, row


def test_a_job_whose_worker_died_is_run_again(app, client, db, admin_auth):
    """The engine retries an execution whose worker was lost: the STARTED job runs to its end."""
    job, row = _job_with_execution(client, db, admin_auth, "ready")
    # the app's worker threads may pick the ready execution up first; either way it runs once
    app.state.cartotheca.tasks.run(row.celery_result_id)
    wait_job(client, admin_auth, job["id"])
    done = client.get(f"{BASE}/jobs/{job['id']}/status", headers=admin_auth).json()
    assert done["status"] == "FINISHED" and done["celery_task_meta"]["status"] == "SUCCESS"
    assert done["output_message"] == "0 notification(s) sent."


def test_stopping_a_job_whose_worker_was_lost_for_good(client, db, admin_auth):
    job, _ = _job_with_execution(client, db, admin_auth, "failed")
    stopped = client.patch(f"{BASE}/jobs/{job['id']}/stop", headers=admin_auth).json()["data"]
    assert stopped["status"] == "FINISHED" and stopped["output_message"] == "Stopped: its worker was lost."
    meta = client.get(f"{BASE}/jobs/{job['id']}/status", headers=admin_auth).json()["celery_task_meta"]
    assert meta["status"] == "REVOKED"
