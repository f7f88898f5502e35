"""``geonodectl dataset upload --wait`` (0.3.5) against a live server: a shapefile and a GeoJSON
are imported, and the datasets are then found by title through geonodectl's own list commands.
Contract: shared/compat/geonodectl.md §4."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from cartotheca.db.models import Dataset, Resource
from cartotheca.geodata.storage import FeatureQuery, stored_layer
from cartotheca.geodata.storage.stores import vector_store
from tests.geodata import fixtures as fx

pytestmark = pytest.mark.clients
# geonodectl polls every 5 s; an import of a few features is done by the first poll.
UPLOAD_TIMEOUT = 120


def _geonodectl() -> str:
    beside = Path(sys.executable).parent / "geonodectl"
    found = str(beside) if beside.exists() else shutil.which("geonodectl")
    if found is None:
        pytest.skip("geonodectl is not installed")
    return found


@pytest.fixture
def geonodectl(live_server, app, admin_basic_token):
    env = dict(os.environ, GEONODE_API_URL=live_server.api, GEONODE_API_BASIC_AUTH=admin_basic_token)

    def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        proc = subprocess.run([_geonodectl(), *args], env=env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, (f"geonodectl {' '.join(args)} -> {proc.returncode}\n{proc.stdout}\n"
                                      f"{proc.stderr}\n--- server log ---\n{live_server.log_tail()}")
        return proc

    return run


def printed_datasets(stdout: str) -> list[dict]:
    """The dataset objects ``upload --wait --json`` prints (one JSON document per dataset)."""
    decoder = json.JSONDecoder()
    found, position = [], 0
    text = stdout.strip()
    while position < len(text):
        start = text.find("{", position)
        if start < 0:
            break
        value, position = decoder.raw_decode(text, start)
        found.append(value)
    return found


def check_published(db, settings, title: str) -> Dataset:
    db.rollback()
    db.expire_all()
    resource = db.scalar(select(Resource).where(Resource.title == title))
    assert resource is not None, f"no resource titled {title}"
    dataset = db.scalar(select(Dataset).where(Dataset.resource_id == resource.id))
    batch = vector_store(settings, dataset.storage).query(stored_layer(dataset), FeatureQuery())
    assert sorted(batch.properties["name"]) == sorted(r["name"] for r in fx.POINTS)
    return dataset


@pytest.mark.parametrize(("stem", "driver"), [("roads_2024", "ESRI Shapefile"), ("lakes", "GeoJSON")])
def test_upload_wait_then_find_by_title(geonodectl, db, settings, tmp_path, stem, driver):
    path = fx.write_points(tmp_path, stem, driver=driver)

    upload = geonodectl("--json", "dataset", "upload", "-f", str(path), "--wait", timeout=UPLOAD_TIMEOUT)

    dataset = check_published(db, settings, stem)
    shown = printed_datasets(upload.stdout)
    assert any(d.get("pk") in (dataset.resource_id, str(dataset.resource_id)) or
               d.get("title") == stem for d in shown), upload.stdout
    listed = json.loads(geonodectl("--json", "dataset", "list", "--search", stem).stdout)
    assert [d["title"] for d in listed] == [stem]
    filtered = json.loads(geonodectl("--json", "dataset", "list", "--filter",
                                     f"title.icontains={stem}").stdout)
    assert [str(d["pk"]) for d in filtered] == [str(dataset.resource_id)]
    resources = json.loads(geonodectl("--json", "resources", "list", "--search", stem).stdout)
    assert [r["title"] for r in resources] == [stem]
    uploads = json.loads(geonodectl("--json", "uploads", "list").stdout)
    assert [(u["name"], u["state"]) for u in uploads] == [(stem, "PROCESSED")]
