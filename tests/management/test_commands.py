"""Every exposed management command run as a job, through the in-process worker and through Celery.

In-process: the worker threads of the app under test. Celery: a real ``cartotheca worker``
process on a real Redis broker, sharing the test database and data directory.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
import warnings

import numpy as np
import pytest
import rasterio
from fastapi.testclient import TestClient
from sqlalchemy import select, text
from sqlalchemy.orm import selectinload

from cartotheca.catalogue.thumbnails import thumbnail_path
from cartotheca.db.base import utcnow
from cartotheca.db.models import Dataset, ExecutionRequest, ManagementCommandJob, Resource
from cartotheca.geodata.storage.stores import raster_store
from tests.factories import make_resource, make_user
from tests.geodata import fixtures as fx
from tests.management.conftest import redis_database
from tests.support.services import empty_redis_database

BASE = "/api/v2/management"


@pytest.fixture(params=["inprocess", "celery"])
def worker_client(request, make_app):
    """A client whose jobs run on the in-process worker or on a Celery worker process."""
    if request.param == "inprocess":
        app = make_app(TASK_BACKEND="inprocess")
    else:
        app = make_app(TASK_BACKEND="celery", CELERY_BROKER_URL=request.getfixturevalue("celery_broker"))
    with TestClient(app) as client:
        yield client


def run_job(client, auth, command: str, timeout: float = 90.0, **body) -> dict:
    response = client.post(f"{BASE}/commands/{command}", headers=auth, json=body)
    assert response.status_code == 201, response.text
    job_id = response.json()["data"]["id"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"{BASE}/jobs/{job_id}/status", headers=auth).json()
        if job["status"] == "FINISHED":
            return job
        time.sleep(0.1)
    raise AssertionError(f"{command} job still {job['status']}")


def test_purge_executions(worker_client, db, admin_auth):
    def execution(days: float, status: str) -> str:
        when = utcnow() - dt.timedelta(days=days)
        row = ExecutionRequest(func_name="copy", action="copy", status=status, input_params={},
                               output_params={}, created=when, finished=when, last_updated=when)
        db.add(row)
        db.commit()
        return row.exec_id

    old_finished, old_failed = execution(10, "finished"), execution(10, "failed")
    recent, old_ready = execution(1, "finished"), execution(10, "ready")
    job = run_job(worker_client, admin_auth, "purge_executions", kwargs={"days": 5})
    assert job["output_message"] == "Purged 2 finished or failed execution(s) older than 5 day(s)."
    assert job["celery_task_meta"]["status"] == "SUCCESS"
    db.expire_all()
    left = set(db.scalars(select(ExecutionRequest.exec_id)))
    assert {recent, old_ready, job["celery_result_id"]} <= left
    assert not {old_finished, old_failed} & left


def _extent_search(client, box: str) -> list[int]:
    return [int(r["pk"]) for r in client.get(f"/api/v2/resources?extent={box}").json()["resources"]]


def test_rebuild_index(worker_client, db, settings, admin_auth, backend):
    owner = make_user(db, f"owner_{uuid.uuid4().hex[:6]}")
    resource = make_resource(db, settings, owner, "Alps", extent=(5.0, 45.0, 15.0, 50.0))
    assert _extent_search(worker_client, "6,46,7,47") == [resource.id]
    if backend == "sqlite":
        db.execute(text("DELETE FROM resources_extent"))  # the index lost its rows
        db.commit()
        assert _extent_search(worker_client, "6,46,7,47") == []
    else:
        before = db.scalar(text("SELECT relfilenode FROM pg_class WHERE relname = 'ix_resources_ll_box'"))
        db.commit()
    job = run_job(worker_client, admin_auth, "rebuild_index")
    assert job["celery_task_meta"]["status"] == "SUCCESS", job
    if backend == "sqlite":
        assert job["output_message"] == "Extent index rebuilt: 1 resource extent(s)."
    else:
        lines = job["output_message"].splitlines()
        assert {"Reindexed ix_resources_ll_box.", "Reindexed ix_resources_title_trgm.",
                "Reindexed ix_resources_abstract_trgm."} <= set(lines)
        # REINDEX writes the index anew: it gets a new file
        after = db.scalar(text("SELECT relfilenode FROM pg_class WHERE relname = 'ix_resources_ll_box'"))
        assert after != before
    assert _extent_search(worker_client, "6,46,7,47") == [resource.id]
    assert _extent_search(worker_client, "20,20,21,21") == []


def test_send_notifications_without_an_outbox(worker_client, admin_auth):
    job = run_job(worker_client, admin_auth, "send_notifications")
    assert job["output_message"] == "0 notification(s) sent."
    assert job["celery_task_meta"]["status"] == "SUCCESS"


def _dataset(db, resource_id: int) -> tuple[Resource, Dataset]:
    db.expire_all()
    resource = db.get(Resource, resource_id)
    dataset = db.scalar(select(Dataset).where(Dataset.resource_id == resource_id)
                        .options(selectinload(Dataset.attributes)))
    return resource, dataset


def test_sync_datasets(worker_client, db, settings, admin_auth, tmp_path):
    owner = make_user(db, f"owner_{uuid.uuid4().hex[:6]}")
    suffix = uuid.uuid4().hex[:6]
    points = fx.publish_file(db, settings, owner, fx.write_points(tmp_path, f"points_{suffix}"))
    raster = fx.publish_file(db, settings, owner, fx.write_raster(tmp_path, f"raster_{suffix}"))
    # The records drift from the data: wrong counts, extents and statistics, no thumbnails.
    for resource_id in (points.id, raster.id):
        resource, dataset = _dataset(db, resource_id)
        resource.ll_minx, resource.ll_miny, resource.ll_maxx, resource.ll_maxy = 100.0, 0.0, 101.0, 1.0
        resource.bbox_x0, resource.bbox_y0, resource.bbox_x1, resource.bbox_y1 = 100.0, 0.0, 101.0, 1.0
        resource.thumbnail_url = None
        thumbnail_path(settings, resource.uuid).unlink(missing_ok=True)
        dataset.feature_count = 0
        for attribute in dataset.attributes:
            attribute.count, attribute.min, attribute.max, attribute.unique_values = 0, "NA", "NA", "NA"
    db.commit()

    job = run_job(worker_client, admin_auth, "sync_datasets", args=["--filter", points.alternate,
                                                                    "-f", raster.alternate])
    assert job["celery_task_meta"]["status"] == "SUCCESS", job
    lines = job["output_message"].splitlines()
    assert lines[-1] == "Synchronised 2 dataset(s); 0 failed."
    assert f"{points.alternate}: 10 feature(s), extent -10,40,8,49, thumbnail redrawn" in lines

    resource, dataset = _dataset(db, points.id)
    assert dataset.feature_count == fx.POINT_COUNT
    assert (resource.ll_minx, resource.ll_miny, resource.ll_maxx, resource.ll_maxy) == pytest.approx(
        (-10.0, 40.0, 8.0, 49.0))
    assert (resource.bbox_x0, resource.bbox_y0, resource.bbox_x1, resource.bbox_y1) == pytest.approx(
        (-10.0, 40.0, 8.0, 49.0))
    value = next(a for a in dataset.attributes if a.attribute == "value")
    assert value.count == 10 and float(value.min) == 0.0 and float(value.max) == 13.5
    assert float(value.sum) == pytest.approx(sum(p["value"] for p in fx.POINTS))
    category = next(a for a in dataset.attributes if a.attribute == "category")
    assert category.unique_values == '["a", "b", "c"]'
    _check_thumbnail(settings, resource)

    resource, dataset = _dataset(db, raster.id)
    assert (resource.ll_minx, resource.ll_miny, resource.ll_maxx, resource.ll_maxy) == pytest.approx(
        (0.0, 40.0, 16.0, 52.0))
    _check_thumbnail(settings, resource)


def _check_thumbnail(settings, resource: Resource) -> None:
    path = thumbnail_path(settings, resource.uuid)
    assert resource.thumbnail_url == f"{settings.SITEURL}thumbnails/{resource.uuid}.png"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rasterio.errors.NotGeoreferencedWarning)  # a PNG has no CRS
        with rasterio.open(path) as png:
            assert (png.width, png.height) == tuple(settings.THUMBNAIL_SIZE[:2])
            pixels = png.read()
    drawn = pixels[3] > 0 if pixels.shape[0] == 4 else np.any(pixels != 255, axis=0)
    assert 0 < drawn.sum() < drawn.size  # the data is drawn, not an empty or solid image


def test_sync_datasets_reports_a_dataset_whose_data_is_gone(worker_client, db, settings, admin_auth,
                                                            tmp_path):
    owner = make_user(db, f"owner_{uuid.uuid4().hex[:6]}")
    suffix = uuid.uuid4().hex[:6]
    kept = fx.publish_file(db, settings, owner, fx.write_points(tmp_path, f"kept_{suffix}"))
    lost = fx.publish_file(db, settings, owner, fx.write_raster(tmp_path, f"lost_{suffix}"))
    _, dataset = _dataset(db, lost.id)
    raster_store(settings).drop(dataset.location)
    job = run_job(worker_client, admin_auth, "sync_datasets",
                  kwargs={"filter": [kept.alternate, lost.alternate], "skip_thumbnails": True})
    lines = job["output_message"].splitlines()
    assert lines[-1] == "Synchronised 1 dataset(s); 1 failed."
    assert any(line.startswith(f"{lost.alternate}: failed: ") for line in lines)
    assert f"{kept.alternate}: 10 feature(s), extent -10,40,8,49" in lines


@pytest.fixture
def slow_worker_client(request, make_app):
    """Like ``worker_client`` with every job step stretched to 1 s, so a stop lands mid-run.
    The slow Celery worker has a Redis database of its own (the shared worker's is another)."""
    if request.param == "inprocess":
        app = make_app(TASK_BACKEND="inprocess", EXECUTION_STEP_DELAY=1.0)
        with TestClient(app) as client:
            yield client
        return
    with empty_redis_database(redis_database(request, "own")) as (broker, _client):
        request.getfixturevalue("spawn")(
            ["worker", "--concurrency", "2", "--loglevel", "warning"],
            CARTOTHECA_TASK_BACKEND="celery", CARTOTHECA_CELERY_BROKER_URL=broker,
            CARTOTHECA_EXECUTION_STEP_DELAY="1.0").start()
        with TestClient(make_app(TASK_BACKEND="celery", CELERY_BROKER_URL=broker)) as client:
            yield client


@pytest.mark.parametrize("slow_worker_client", ["inprocess", "celery"], indirect=True)
def test_stop_a_running_job(slow_worker_client, db, admin_auth):
    client = slow_worker_client
    when = utcnow() - dt.timedelta(days=90)
    old = ExecutionRequest(func_name="copy", action="copy", status="finished", input_params={},
                           output_params={}, created=when, finished=when, last_updated=when)
    db.add(old)
    db.commit()
    job = client.post(f"{BASE}/commands/purge_executions", headers=admin_auth, json={}).json()["data"]
    deadline = time.monotonic() + 60
    while client.get(f"{BASE}/jobs/{job['id']}", headers=admin_auth).json()["status"] != "STARTED":
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)
    assert client.patch(f"{BASE}/jobs/{job['id']}/stop", headers=admin_auth).status_code == 200
    while (status := client.get(f"{BASE}/jobs/{job['id']}/status", headers=admin_auth).json())["status"] \
            != "FINISHED":
        assert time.monotonic() < deadline, "the job did not stop"
        time.sleep(0.05)
    assert status["output_message"] == "Stopped." and status["celery_task_meta"]["status"] == "REVOKED"
    db.expire_all()
    assert db.get(ExecutionRequest, old.id) is not None  # stopped before it purged anything
    execution = db.scalar(select(ExecutionRequest).where(ExecutionRequest.exec_id == job["celery_result_id"]))
    assert execution.status == "finished" and execution.output_params["output"]["outcome"] == "REVOKED"


@pytest.mark.parametrize("slow_worker_client", ["inprocess"], indirect=True)
def test_stop_a_queued_job(slow_worker_client, db, admin_auth):
    """A job stopped before a worker took it ends at once; the worker then skips it."""
    client = slow_worker_client
    jobs = [client.post(f"{BASE}/commands/send_notifications", headers=admin_auth, json={}).json()["data"]
            for _ in range(4)]  # two workers, each step 1 s: the last ones wait in the queue
    last = jobs[-1]
    stopped = client.patch(f"{BASE}/jobs/{last['id']}/stop", headers=admin_auth).json()["data"]
    if stopped["status"] == "FINISHED":  # it was still queued
        assert stopped["output_message"] == "Stopped before it started."
    deadline = time.monotonic() + 60
    while True:
        states = [client.get(f"{BASE}/jobs/{j['id']}", headers=admin_auth).json() for j in jobs]
        executions = [db.scalar(select(ExecutionRequest.status).where(
            ExecutionRequest.exec_id == j["celery_result_id"])) for j in jobs]
        db.expire_all()
        if all(s["status"] == "FINISHED" for s in states) and set(executions) == {"finished"}:
            break
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert states[-1]["output_message"] in ("Stopped before it started.", "Stopped.")
    assert all(s["output_message"] == "0 notification(s) sent." for s in states[:2])


def test_a_failing_job_ends_finished_with_its_error(worker_client, db, admin_auth):
    """A command that raises: the job is FINISHED with the error, its execution failed."""
    job = worker_client.post(f"{BASE}/commands/purge_executions", headers=admin_auth,
                             json={"autostart": False}).json()["data"]
    row = db.get(ManagementCommandJob, job["id"])
    row.kwargs = {"days": -5}  # options are checked again when the job runs
    db.commit()
    assert worker_client.patch(f"{BASE}/jobs/{job['id']}/start", headers=admin_auth).status_code == 200
    deadline = time.monotonic() + 60
    while (status := worker_client.get(f"{BASE}/jobs/{job['id']}/status",
                                       headers=admin_auth).json())["status"] != "FINISHED":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert status["output_message"] == "Error: --days: must be 0 or more"
    meta = status["celery_task_meta"]
    assert meta["status"] == "FAILURE" and "--days: must be 0 or more" in meta["traceback"]
    assert meta["date_done"] == status["end_time"]
