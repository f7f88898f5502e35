"""A zipped shapefile import killed (SIGKILL) after its archive was unpacked, once or twice, with
the in-process and the Celery backends: the retry starts from a clean work folder (the killed
attempt's unpacked files are no obstacle) and the upload always ends PROCESSED with its dataset
published, or INVALID with the reason once no attempt is left; never RUNNING."""

from __future__ import annotations

import zipfile
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from cartotheca.db.models import Dataset, Upload
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata import fixtures as fx
from tests.support.ports import free_port
from tests.support.processes import wait_http
from tests.tasks.test_crash_recovery import status_of, wait_status
from tests.tasks.test_ingest_crash import FAST, SLOW, staging_of, storage_env, wait_for


def zipped_shapefile(tmp_path: Path, name: str) -> Path:
    shp = fx.write_points(tmp_path / "src", name, driver="ESRI Shapefile")
    archive = tmp_path / f"{name}.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for part in shp.parent.iterdir():
            out.write(part, f"{name}/{part.name}")
    return archive


def unpacked_shp(staging: Path, name: str) -> Path:
    return staging / "work" / "unpacked" / name / f"{name}.shp"


def wait_unpacked(staging: Path, name: str, after_ns: int = 0) -> int:
    """Wait until the running attempt has unpacked the archive (a file newer than ``after_ns``,
    so a leftover of an earlier attempt does not count); returns its modification time."""
    path = unpacked_shp(staging, name)

    def fresh() -> int:
        try:
            stamp = path.stat().st_mtime_ns
        except FileNotFoundError:
            return 0
        return stamp if stamp > after_ns else 0

    return wait_for(fresh, "the archive to be unpacked")


def kill_after_each_unpacking(process, staging: Path, name: str, kills: int, db, exec_id: str,
                              restarted=lambda: None) -> None:
    """Kill ``process`` (a server or a worker) ``kills`` times, each time once the running attempt
    has unpacked the archive, and start it again: slowly while more kills follow, at full speed
    after the last; ``restarted`` waits until it answers."""
    stamp = 0
    for kill in range(kills):
        stamp = wait_unpacked(staging, name, stamp)
        process.kill()
        assert status_of(db, exec_id) == "running"
        process.start(**(SLOW if kill + 1 < kills else FAST))
        restarted()


def check_ended(db, exec_id: str, final: str, staging: Path, name: str, log: str) -> None:
    db.expire_all()
    upload = db.scalar(select(Upload).where(Upload.exec_id == exec_id))
    published = db.scalar(select(func.count()).select_from(Dataset).where(Dataset.name == name))
    if final == "finished":
        assert upload.state == "PROCESSED" and upload.complete, (upload.state, upload.error, log)
        assert published == 1 and upload.resource_id is not None
    else:
        # failed for good: the same transaction made the upload INVALID with the reason
        assert upload.state == "INVALID" and upload.error, (upload.state, log)
        assert "worker lost" in upload.error and published == 0
    assert "File exists" not in (upload.error or "") and "File exists" not in log
    wait_for(lambda: not staging.exists(), "the staged files to be removed", timeout=10)


@pytest.mark.parametrize(("kills", "max_attempts", "wanted"),
                         [(1, 2, "finished"), (2, 3, "finished"), (2, 2, "failed")])
def test_inprocess_zip_import_killed_after_unpacking(db, settings, spawn, base_app, tmp_path,
                                                     kills, max_attempts, wanted):
    make_user(db, "ana")
    auth = basic("ana", PASSWORD)
    port = free_port()
    server = spawn(["serve", "--port", str(port)], CARTOTHECA_SITEURL=f"http://127.0.0.1:{port}/",
                   CARTOTHECA_EXECUTION_MAX_ATTEMPTS=str(max_attempts), **storage_env(settings))
    base = f"http://127.0.0.1:{port}"
    server.start(**SLOW)
    wait_http(f"{base}/api/v2/")
    archive = zipped_shapefile(tmp_path, "zipped_wells")
    with archive.open("rb") as handle:
        start = httpx.post(f"{base}/api/v2/uploads/upload", headers=auth, timeout=30,
                           files={"base_file": (archive.name, handle)})
    assert start.status_code == 200, start.text + server.log()
    exec_id = start.json()["execution_id"]
    staging = staging_of(db, settings, exec_id)

    kill_after_each_unpacking(server, staging, "zipped_wells", kills, db, exec_id,
                              restarted=lambda: wait_http(f"{base}/api/v2/"))

    final = wait_status(db, exec_id, {"finished", "failed"})
    assert final == wanted, server.log()
    check_ended(db, exec_id, final, staging, "zipped_wells", server.log())
    record = httpx.get(f"{base}/api/v2/uploads", headers=auth, timeout=30).json()["uploads"][0]
    assert record["state"] == ("PROCESSED" if wanted == "finished" else "INVALID")


@pytest.mark.parametrize(("kills", "wanted"), [(1, "finished"), (2, "failed")])
def test_celery_zip_import_killed_after_unpacking(db, settings, spawn, make_app, broker_url, tmp_path,
                                                  kills, wanted):
    make_user(db, "ana")
    auth = basic("ana", PASSWORD)
    env = {"CARTOTHECA_TASK_BACKEND": "celery", "CARTOTHECA_CELERY_BROKER_URL": broker_url,
           **storage_env(settings)}
    worker = spawn(["worker", "--loglevel", "warning"], **env)
    worker.start(**SLOW)
    app = make_app(TASK_BACKEND="celery", CELERY_BROKER_URL=broker_url)
    archive = zipped_shapefile(tmp_path, "zipped_springs")
    with TestClient(app) as client:
        start = fx.post_upload(client, auth, archive)
        assert start.status_code == 200, start.text
        exec_id = start.json()["execution_id"]
        staging = staging_of(db, settings, exec_id)
        kill_after_each_unpacking(worker, staging, "zipped_springs", kills, db, exec_id)

        final = wait_status(db, exec_id, {"finished", "failed"})
        assert final == wanted, worker.log()
        check_ended(db, exec_id, final, staging, "zipped_springs", worker.log())
        record = client.get("/api/v2/uploads", headers=auth).json()["uploads"][0]
        assert record["state"] == ("PROCESSED" if wanted == "finished" else "INVALID")
