"""The management commands as ``cartotheca <command>`` subcommands, run as real processes."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import uuid

import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import selectinload

from cartotheca.db.base import utcnow
from cartotheca.db.models import Dataset, ExecutionRequest, Resource
from tests.factories import make_resource, make_user
from tests.geodata import fixtures as fx


@pytest.fixture
def cartotheca(settings):
    """Run ``cartotheca <args>`` over the test database and data directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARTOTHECA_")}
    env.update(CARTOTHECA_DATABASE_URL=settings.DATABASE_URL, CARTOTHECA_DATA_DIR=str(settings.DATA_DIR),
               CARTOTHECA_STORAGE_BACKEND=settings.STORAGE_BACKEND, CARTOTHECA_SITEURL=settings.SITEURL,
               CARTOTHECA_SECRET_KEY="test-secret", CARTOTHECA_MONITORING_ENABLED="false")
    if settings.DATASTORE_URL:
        env["CARTOTHECA_DATASTORE_URL"] = settings.DATASTORE_URL

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cartotheca.cli", *args], env=env, capture_output=True,
                              text=True, timeout=300)

    return run


def test_subcommands_share_the_commands_options():
    from click.testing import CliRunner

    from cartotheca.cli import main

    runner = CliRunner()
    result = runner.invoke(main, ["sync_datasets", "--help"])
    assert result.exit_code == 0
    assert "-f, --filter NAME" in result.output and "--skip-thumbnails" in result.output
    listed = runner.invoke(main, ["--help"]).output
    for name in ("sync_datasets", "rebuild_index", "purge_executions", "send_notifications"):
        assert name in listed
    # the command's own checks, before any database is opened
    refused = runner.invoke(main, ["purge_executions", "--days", "-1"])
    assert refused.exit_code == 1 and "--days: must be 0 or more" in refused.output


def test_purge_executions_and_send_notifications(cartotheca, db):
    when = utcnow() - dt.timedelta(days=10)
    old = ExecutionRequest(func_name="copy", action="copy", status="failed", input_params={},
                           output_params={}, created=when, finished=when, last_updated=when)
    db.add(old)
    db.commit()
    old_id = old.id
    db.expunge_all()
    result = cartotheca("purge_executions", "--days", "5")
    assert result.returncode == 0, result.stderr
    assert "Purged 1 finished or failed execution(s) older than 5 day(s)." in result.stdout
    assert db.get(ExecutionRequest, old_id) is None

    sent = cartotheca("send_notifications")
    assert sent.returncode == 0 and "0 notification(s) sent" in sent.stdout


def test_rebuild_index(cartotheca, client, db, settings, backend):
    owner = make_user(db, f"owner_{uuid.uuid4().hex[:6]}")
    resource = make_resource(db, settings, owner, "Alps", extent=(5.0, 45.0, 15.0, 50.0))
    if backend == "sqlite":
        db.execute(text("DELETE FROM resources_extent"))
        db.commit()
    result = cartotheca("rebuild_index")
    assert result.returncode == 0, result.stderr
    expected = "Extent index rebuilt: 1 resource extent(s)." if backend == "sqlite" else \
        "Reindexed ix_resources_ll_box."
    assert expected in result.stdout
    found = client.get("/api/v2/resources?extent=6,46,7,47").json()["resources"]
    assert [int(r["pk"]) for r in found] == [resource.id]


def test_sync_datasets(cartotheca, db, settings, tmp_path):
    owner = make_user(db, f"owner_{uuid.uuid4().hex[:6]}")
    resource = fx.publish_file(db, settings, owner, fx.write_points(tmp_path, f"cli_{uuid.uuid4().hex[:6]}"))
    dataset = db.scalar(select(Dataset).where(Dataset.resource_id == resource.id))
    dataset.feature_count = 0
    db.commit()
    result = cartotheca("sync_datasets", "--filter", resource.alternate, "--skip-thumbnails")
    assert result.returncode == 0, result.stderr
    assert f"{resource.alternate}: 10 feature(s), extent -10,40,8,49" in result.stdout
    assert "Synchronised 1 dataset(s); 0 failed." in result.stdout
    db.expire_all()
    dataset = db.scalar(select(Dataset).where(Dataset.resource_id == resource.id)
                        .options(selectinload(Dataset.attributes)))
    assert dataset.feature_count == fx.POINT_COUNT
    assert db.get(Resource, resource.id).ll_minx == pytest.approx(-10.0)
