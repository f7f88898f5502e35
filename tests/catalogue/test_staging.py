"""Uploads staged in the object store (moto's S3 server as a process): a node streams an upload
into the bucket, and a Celery worker with a data directory of its own, as on another machine,
imports it; nothing stays in the bucket's staging prefix or in either data directory. An import
killed on one machine is retried on another from the staged objects and its journal; the killed
attempt's work copy is swept from the first machine. Each attempt works on a clean copy of its
own, and a journal kept in the store is read back in the order it was written."""

from __future__ import annotations

import json
import os
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from cartotheca.catalogue import staging
from cartotheca.catalogue.staging import StoreStaging
from cartotheca.db.models import Dataset, ExecutionRequest, Upload
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.filestore.test_stores import s3_store
from tests.geodata import fixtures as fx
from tests.support.s3 import S3Server, store_settings
from tests.support.services import postgres_database
from tests.tasks.test_import_retry import zipped_shapefile
from tests.tasks.test_ingest_crash import FAST, SLOW, stored_layer_count, stored_somewhere, wait_for


@pytest.fixture(scope="module")
def postgis_url() -> Iterator[str]:
    # With an object store the vector data goes to PostGIS, whichever catalogue database runs.
    with postgres_database("cartotheca_staging", postgis=True) as url:
        yield url


@pytest.fixture
def cluster_settings(s3, postgis_url, broker_url) -> tuple[dict[str, str], str]:
    """What every process of a small cluster shares (a new bucket each test), and the bucket."""
    bucket = s3.new_bucket()
    shared = {"STORAGE_BACKEND": "postgis", "DATASTORE_URL": postgis_url, "TASK_BACKEND": "celery",
              "CELERY_BROKER_URL": broker_url, **store_settings(s3, bucket)}
    return shared, bucket


def as_env(settings: dict[str, str]) -> dict[str, str]:
    return {f"CARTOTHECA_{name}": value for name, value in settings.items()}


def staged_keys(s3: S3Server, bucket: str) -> list[str]:
    return [key for key in s3.keys(bucket) if key.startswith("site/uploads/")]


def files_in(folder: Path) -> list[str]:
    if not folder.exists():
        return []
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def token_of(db, exec_id: str) -> str:
    db.expire_all()
    params = db.scalar(select(ExecutionRequest.input_params).where(ExecutionRequest.exec_id == exec_id))
    return params["staging"]


def test_an_upload_received_by_a_node_is_imported_by_a_worker_with_another_data_dir(
        s3, cluster_settings, make_app, spawn, db, tmp_path):
    shared, bucket = cluster_settings
    make_user(db, "ana")
    auth = basic("ana", PASSWORD)
    archive = zipped_shapefile(tmp_path, "staged_wells")
    sld = tmp_path / "colours.sld"
    sld.write_text(fx.polygons_sld())
    node_dir, worker_dir = tmp_path / "node", tmp_path / "worker"
    node = make_app(DATA_DIR=node_dir, **shared)
    with TestClient(node) as client:
        start = fx.post_upload(client, auth, archive, extra_files={"sld_file": sld})
        assert start.status_code == 200, start.text
        exec_id = start.json()["execution_id"]
        token = token_of(db, exec_id)
        # No worker yet: the upload waits in the bucket, not on the node's disk.
        assert staged_keys(s3, bucket) == [f"site/uploads/{token}/base_file/staged_wells.zip",
                                           f"site/uploads/{token}/sld_file/colours.sld"]
        assert files_in(node_dir / "uploads") == []

        worker = spawn(["worker", "--loglevel", "warning"], CARTOTHECA_DATA_DIR=str(worker_dir),
                       **as_env(shared))
        worker.start()
        record = fx.wait_execution(client, auth, exec_id, timeout=120)
        assert record["status"] == "finished", worker.log()
        [upload] = client.get("/api/v2/uploads", headers=auth).json()["uploads"]
        assert upload["state"] == "PROCESSED" and upload["complete"], upload
        pk = record["output_params"]["resources"][0]["id"]
        alternate = client.get(f"/api/v2/datasets/{pk}", headers=auth).json()["dataset"]["alternate"]
        features = client.get("/ows", headers=auth, params={
            "SERVICE": "WFS", "VERSION": "2.0.0", "REQUEST": "GetFeature", "TYPENAMES": alternate,
            "OUTPUTFORMAT": "application/json"})
        assert features.status_code == 200, features.text
        assert len(features.json()["features"]) == fx.POINT_COUNT
    db.expire_all()
    dataset = db.scalar(select(Dataset).where(Dataset.name == "staged_wells")
                        .options(selectinload(Dataset.styles)))
    assert "#ff00ff" in dataset.styles[0].sld_body  # the staged SLD was read from the bucket
    assert staged_keys(s3, bucket) == []
    assert files_in(node_dir / "uploads") == [] and files_in(worker_dir / "uploads") == []


def test_an_upload_refused_by_its_checks_leaves_nothing_in_the_bucket(s3, cluster_settings, make_app, db,
                                                                      tmp_path):
    shared, bucket = cluster_settings
    make_user(db, "ana")
    unsafe = tmp_path / "unsafe.zip"
    with zipfile.ZipFile(unsafe, "w") as out:
        out.writestr("../outside.geojson", "{}")
    big = zipped_shapefile(tmp_path, "too_many")  # a readable archive over the member limit
    app = make_app(DATA_DIR=tmp_path / "node", MAX_ARCHIVE_MEMBERS=2, **shared)
    with TestClient(app) as client:
        for path, reason in ((unsafe, "points outside the archive"), (big, "at most 2 are accepted")):
            response = fx.post_upload(client, basic("ana", PASSWORD), path)
            assert response.status_code == 400 and reason in response.text, response.text
    assert staged_keys(s3, bucket) == [] and s3.keys(bucket) == []
    db.expire_all()
    assert db.scalars(select(Upload)).all() == []


def journal_names(s3: S3Server, bucket: str, token: str) -> list[str]:
    names = []
    for key in s3.keys(bucket):
        if key.startswith(f"site/uploads/{token}/journal/"):
            entry = json.loads(s3.client().get_object(Bucket=bucket, Key=key)["Body"].read())
            if entry.get("what") == "store":
                names.append(entry["name"])
    return names


def test_an_import_killed_on_one_machine_is_retried_on_another(
        s3, cluster_settings, make_app, make_settings, spawn, db, tmp_path):
    shared, bucket = cluster_settings
    datastore = make_settings(STORAGE_BACKEND="postgis", DATASTORE_URL=shared["DATASTORE_URL"])
    make_user(db, "ana")
    first_dir, second_dir = tmp_path / "first-worker", tmp_path / "second-worker"
    env = as_env(shared)
    first = spawn(["worker", "--loglevel", "warning"], CARTOTHECA_DATA_DIR=str(first_dir), **env)
    second = spawn(["worker", "--loglevel", "warning"], CARTOTHECA_DATA_DIR=str(second_dir), **env)
    first.start(**SLOW)
    stem = f"retried_{uuid.uuid4().hex[:8]}"  # the datastore is shared by the catalogue backends' runs
    path = fx.write_points(tmp_path, stem, driver="GeoJSON")
    with TestClient(make_app(DATA_DIR=tmp_path / "node", **shared)) as client:
        start = fx.post_upload(client, basic("ana", PASSWORD), path)
        assert start.status_code == 200, start.text
        exec_id = start.json()["execution_id"]
        token = token_of(db, exec_id)

        # Killed once its data is stored: the journal in the bucket is all that says so.
        [name] = wait_for(lambda: journal_names(s3, bucket, token), "the import to start storing",
                          timeout=120)
        wait_for(lambda: stored_somewhere(datastore, name), "the killed attempt's data to be stored")
        first.kill()
        second.start(**FAST)
        record = fx.wait_execution(client, basic("ana", PASSWORD), exec_id, timeout=120)
        assert record["status"] == "finished", second.log()

    db.expire_all()
    upload = db.scalar(select(Upload).where(Upload.exec_id == exec_id))
    assert upload.state == "PROCESSED" and upload.complete, (upload.state, upload.error, second.log())
    assert stored_layer_count(datastore, stem) == 1  # the killed attempt's layer was undone
    assert "File exists" not in second.log()
    assert staged_keys(s3, bucket) == [] and files_in(second_dir / "uploads") == []
    # The killed attempt's copy stays on its machine until that machine's next import sweeps it.
    left = first_dir / "uploads"
    assert any(p.endswith(f"/base_file/{stem}.geojson") for p in files_in(left))
    for lock in left.glob("*.lock"):
        os.utime(lock, (time.time() - 3600, time.time() - 3600))
    assert staging.sweep_work_copies(left) == 1
    assert list(left.iterdir()) == []


# -- the staging itself -----------------------------------------------------------------------


@pytest.fixture
def store_staging(s3, tmp_path) -> StoreStaging:
    files = s3_store(s3, s3.new_bucket())
    files.put_bytes("uploads/t0k3n/base_file/points.geojson", b'{"type": "FeatureCollection"}')
    return StoreStaging(files, "uploads/t0k3n/", tmp_path / "uploads", "t0k3n")


def test_each_attempt_gets_a_clean_copy_and_the_end_removes_everything(store_staging, tmp_path):
    first = store_staging.fetch(["base_file/points.geojson"])
    (first / "work" / "unpacked").mkdir(parents=True)
    (first / "work" / "unpacked" / "points.shp").write_bytes(b"left by the first attempt")
    second = store_staging.fetch(["base_file/points.geojson"])  # a retry in the same process
    assert second != first and not first.exists()
    assert files_in(second) == ["base_file/points.geojson"]
    assert (second / "base_file/points.geojson").read_bytes() == b'{"type": "FeatureCollection"}'
    store_staging.journal().note(what="store", kind="vector", name="points_0123")
    store_staging.remove()
    assert store_staging.files.list_prefix("uploads/") == []
    assert list((tmp_path / "uploads").iterdir()) == []


def test_the_sweep_removes_only_the_copies_no_running_attempt_holds(store_staging, tmp_path):
    root = tmp_path / "uploads"
    running = store_staging.fetch(["base_file/points.geojson"])
    dead, young = root / "import-dead-000000000000", root / "import-young-000000000000"
    for folder in (dead, young):
        (folder / "work").mkdir(parents=True)
        (folder / "work" / "part.dbf").write_bytes(b"x")
        Path(f"{folder}.lock").touch()
    an_hour_ago = time.time() - 3600
    for lock in (Path(f"{dead}.lock"), Path(f"{running}.lock")):
        os.utime(lock, (an_hour_ago, an_hour_ago))
    assert staging.sweep_work_copies(root) == 1
    assert not dead.exists() and not Path(f"{dead}.lock").exists()
    assert running.exists() and young.exists()  # held by its attempt; perhaps just being locked
    store_staging.remove()
    assert not running.exists() and not Path(f"{running}.lock").exists()


def test_a_journal_in_the_store_reads_back_in_order_and_is_forgotten_by_undo(store_staging, settings):
    journal = store_staging.journal()
    for number in range(3):
        journal.note(what="nothing to undo", number=number)
    assert [entry["number"] for entry in store_staging.journal().entries()] == [0, 1, 2]
    store_staging.journal().undo(settings)
    assert store_staging.journal().entries() == []
    assert store_staging.files.list_prefix("uploads/") == ["uploads/t0k3n/base_file/points.geojson"]
