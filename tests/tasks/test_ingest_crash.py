"""A server killed (SIGKILL) in the middle of an ingest, after the data was stored but before the
catalogue rows were committed: after a restart the retried import publishes the dataset once,
and nothing of the killed attempt remains (no second layer, no stray file, no staged upload)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
from sqlalchemy import create_engine, func, select, text

from cartotheca.db.models import Dataset, ExecutionRequest, Resource, Upload
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata import fixtures as fx
from tests.support.ports import free_port
from tests.support.processes import wait_http
from tests.tasks.test_crash_recovery import status_of, wait_status

SLOW = {"CARTOTHECA_EXECUTION_STEP_DELAY": "2", "CARTOTHECA_EXECUTION_HEARTBEAT_SECONDS": "0.5"}
FAST = {"CARTOTHECA_EXECUTION_STEP_DELAY": "0", "CARTOTHECA_EXECUTION_HEARTBEAT_SECONDS": "0.5"}


def files_under(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()}


def storage_env(settings) -> dict[str, str]:
    env = {"CARTOTHECA_STORAGE_BACKEND": settings.STORAGE_BACKEND}
    if settings.DATASTORE_URL:
        env["CARTOTHECA_DATASTORE_URL"] = settings.DATASTORE_URL
    return env


def table_exists(settings, name: str) -> bool:
    engine = create_engine(settings.DATASTORE_URL)
    try:
        with engine.connect() as conn:
            return bool(conn.scalar(text(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = :n"), {"n": name}))
    finally:
        engine.dispose()


def stored_somewhere(settings, name: str) -> bool:
    """Whether the store holds anything written under the store name ``name``."""
    if settings.STORAGE_BACKEND == "postgis":
        return table_exists(settings, name)
    return (settings.DATA_DIR / "vector" / f"{name}.gpkg").exists()


def stored_layer_count(settings, stem: str) -> int:
    if settings.STORAGE_BACKEND == "postgis":
        engine = create_engine(settings.DATASTORE_URL)
        try:
            with engine.connect() as conn:
                return conn.scalar(text("SELECT count(*) FROM information_schema.tables "
                                        "WHERE table_name LIKE :n"), {"n": f"{stem}%"})
        finally:
            engine.dispose()
    # temporaries of an interrupted write count too
    return sum(1 for p in files_under(settings.DATA_DIR) if stem in p and ".gpkg" in p)


def journal_names(staging: Path) -> list[str]:
    journal = staging / "journal.jsonl"
    if not journal.exists():
        return []
    names = []
    for line in journal.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("what") == "store":
            names.append(entry["name"])
    return names


def staging_of(db, settings, exec_id: str) -> Path:
    db.expire_all()
    params = db.scalar(select(ExecutionRequest.input_params).where(ExecutionRequest.exec_id == exec_id))
    return settings.DATA_DIR / "uploads" / params["staging"]


def wait_for(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_server_killed_mid_ingest_publishes_once_after_restart(db, settings, spawn, base_app, tmp_path):
    make_user(db, "ana")
    auth = basic("ana", PASSWORD)
    port = free_port()
    server = spawn(["serve", "--port", str(port)], CARTOTHECA_SITEURL=f"http://127.0.0.1:{port}/",
                   **storage_env(settings))
    before = files_under(settings.DATA_DIR)
    server.start(**SLOW)
    base = f"http://127.0.0.1:{port}"
    wait_http(f"{base}/api/v2/")
    path = fx.write_points(tmp_path, "crashed_points", driver="GeoJSON")
    with path.open("rb") as handle:
        start = httpx.post(f"{base}/api/v2/uploads/upload", headers=auth, timeout=30,
                           data={"charset": "UTF-8"}, files={"base_file": (path.name, handle)})
    assert start.status_code == 200, start.text + server.log()
    exec_id = start.json()["execution_id"]
    staging = staging_of(db, settings, exec_id)

    # Killed while the step after "storing" waits: the layer exists, the rows do not.
    [name] = wait_for(lambda: journal_names(staging), "the import to start storing")
    wait_for(lambda: stored_somewhere(settings, name), "the killed attempt's data to be stored")
    server.kill()
    assert status_of(db, exec_id) == "running"
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Resource)) == 0

    server.start(**FAST)
    wait_http(f"{base}/api/v2/")
    final = wait_status(db, exec_id, {"finished", "failed"})
    assert final == "finished", server.log()
    db.expire_all()
    [dataset] = db.scalars(select(Dataset)).all()
    assert db.scalar(select(func.count()).select_from(Resource)) == 1
    assert dataset.name == "crashed_points" and dataset.feature_count == fx.POINT_COUNT
    upload = db.scalar(select(Upload).where(Upload.exec_id == exec_id))
    assert upload.state == "PROCESSED" and upload.complete and upload.resource_id == dataset.resource_id
    # the retry removed what the killed attempt had written, then wrote again under the same name
    assert name in dataset.location and stored_somewhere(settings, name)
    assert stored_layer_count(settings, "crashed_points") == 1
    # no staged upload, and nothing new but the dataset's own files (its data and thumbnail)
    wait_for(lambda: not staging.exists(), "the staged files to be removed", timeout=10)
    new = files_under(settings.DATA_DIR) - before
    resource = db.get(Resource, dataset.resource_id)
    assert all(dataset.layer in p or resource.uuid in p for p in new), new
    body = httpx.get(start.json()["status_url"], headers=auth, timeout=30).json()
    assert body["status"] == "finished"


def test_import_killed_for_good_is_ended_by_the_recovery(db, settings, spawn, base_app, tmp_path):
    """With no retry left the recovery fails the import and, in the same transaction, makes its
    upload INVALID with the reason; the stored data and the staged files go at once."""
    make_user(db, "ana")
    auth = basic("ana", PASSWORD)
    port = free_port()
    server = spawn(["serve", "--port", str(port)], CARTOTHECA_SITEURL=f"http://127.0.0.1:{port}/",
                   CARTOTHECA_EXECUTION_MAX_ATTEMPTS="1", **storage_env(settings))
    server.start(**SLOW)
    base = f"http://127.0.0.1:{port}"
    wait_http(f"{base}/api/v2/")
    path = fx.write_points(tmp_path, "doomed", driver="GeoJSON")
    with path.open("rb") as handle:
        start = httpx.post(f"{base}/api/v2/uploads/upload", headers=auth, timeout=30,
                           files={"base_file": (path.name, handle)})
    exec_id = start.json()["execution_id"]
    staging = staging_of(db, settings, exec_id)
    [name] = wait_for(lambda: journal_names(staging), "the import to start storing")
    wait_for(lambda: stored_somewhere(settings, name), "the data to be stored")
    server.kill()

    server.start(**FAST)
    wait_http(f"{base}/api/v2/")
    assert wait_status(db, exec_id, {"finished", "failed"}) == "failed"
    db.expire_all()
    upload = db.scalar(select(Upload).where(Upload.exec_id == exec_id))
    assert upload.state == "INVALID" and "worker lost" in upload.error
    record = httpx.get(f"{base}/api/v2/uploads", headers=auth, timeout=30).json()["uploads"][0]
    assert record["state"] == "INVALID" and "worker lost" in record["error"]
    assert not stored_somewhere(settings, name) and not staging.exists()
    assert db.scalar(select(func.count()).select_from(Dataset).where(Dataset.name == "doomed")) == 0
