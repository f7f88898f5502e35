"""The real geonodectl 0.3.5: document, geoapp and linked-resource commands against a live server.

Each command runs as a subprocess against ``cartotheca serve``; what it printed is compared with
what the server then holds (database rows, stored files, downloads), so a command that exits 0
without the work being done fails. Contract: shared/compat/geonodectl.md sections 5, 6.3, 6.5, 6.12.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from cartotheca.catalogue import geoapps
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, principal_for
from cartotheca.db.models import Document, LinkedResource, Resource
from tests.api.routes.document_samples import samples
from tests.clients import test_geonodectl as base
from tests.clients.test_geonodectl import fresh, listed
from tests.factories import make_resource

pytestmark = pytest.mark.clients
# The geonodectl runner and helpers of the main geonodectl tests (fixtures shared by name).
ctl, api, admin = base.ctl, base.api, base.admin
SAMPLES = samples()


def wait_gone(db, pk: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while fresh(db).get(Resource, pk) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert fresh(db).get(Resource, pk) is None


def make_geoapp(db, settings, user, name: str, kind: str = "geostory", data=None) -> Resource:
    anonymous_id, registered_id = internal_group_ids(db, settings)
    principal = principal_for(db, user, InternalGroups(anonymous_id, registered_id), "test")
    resource = geoapps.create_geoapp(db, principal, settings, {"name": name, "data": data or {}},
                                     resource_type=kind)
    db.commit()
    return resource


# -- documents ------------------------------------------------------------------------------------

@pytest.mark.parametrize("extension,as_json", [("txt", False), ("pdf", True), ("png", True),
                                               ("xlsx", False)])
def test_documents_upload(ctl, db, api, tmp_path, extension, as_json):
    path = tmp_path / f"station_report.{extension}"
    path.write_bytes(SAMPLES[extension])

    run = ctl("documents", "upload", "-f", path, as_json=as_json)

    if as_json:
        record = run.json()
        values = {k: str(record[k]) for k in ("title", "state", "subtype", "mime_type", "href")}
        pk = int(record["pk"])
    else:
        values = {row["key"]: row["value"] for row in run.table()}
        values = {"title": values["name"], "state": values["state"], "subtype": values["subtype"],
                  "mime_type": values["mimetype"], "href": values["download-url"]}
        pk = int(values["href"].rstrip("/").split("/")[-2])
    assert values["title"] == "station_report" and values["state"] == "PROCESSED"
    document = fresh(db).get(Document, pk)
    assert document is not None and document.extension == extension
    assert values["mime_type"] == document.mime_type
    assert Path(document.file_path).read_bytes() == SAMPLES[extension]
    site = api.base_url.scheme + "://" + api.base_url.netloc.decode()
    assert api.get(f"{site}/documents/{pk}/download").content == SAMPLES[extension]
    assert values["href"] == f"{site}/documents/{pk}/link"


def test_documents_upload_refusals(ctl, db, tmp_path):
    before = fresh(db).scalar(select(Resource.id).order_by(Resource.id.desc()).limit(1))
    fake = tmp_path / "report.pdf"
    fake.write_bytes(SAMPLES["png"])
    run = ctl("documents", "upload", "-f", fake, expect=1)
    assert "not a valid .pdf" in run.stdout + run.stderr
    program = tmp_path / "tool.exe"
    program.write_bytes(b"MZ" + b"\0" * 100)
    ctl("documents", "upload", "-f", program, expect=1)
    after = fresh(db).scalar(select(Resource.id).order_by(Resource.id.desc()).limit(1))
    assert after == before


def test_documents_list_describe_patch_delete(ctl, db, api, tmp_path):
    for name in ("alpha notes", "beta notes"):
        path = tmp_path / f"{name}.txt"
        path.write_text(f"{name}\n")
        ctl("documents", "upload", "-f", path, as_json=True)
    for as_json in (False, True):
        rows = listed(ctl("documents", "list", as_json=as_json), as_json)
        assert set(rows) == {"alpha notes", "beta notes"}
        pk = int(rows["alpha notes"]["pk"])
        if as_json:
            assert rows["alpha notes"]["_raw"]["owner"]["username"] == "admin"
        else:
            assert rows["alpha notes"]["owner.username"] == "admin"
            assert rows["alpha notes"]["resource_type"] == "document"
    searched = listed(ctl("documents", "list", "--search", "beta"), False)
    assert list(searched) == ["beta notes"]

    described = ctl("documents", "describe", pk).json()
    assert described["title"] == "alpha notes" and described["extension"] == "txt"
    by_uuid = ctl("documents", "describe", described["uuid"]).json()
    assert str(by_uuid["pk"]) == str(pk)

    patched = ctl("documents", "patch", pk, "--set", json.dumps({"title": "Alpha report"})).json()
    assert patched["document"]["title"] == "Alpha report"
    assert fresh(db).get(Resource, pk).title == "Alpha report"

    file_path = Path(fresh(db).get(Document, pk).file_path)
    assert f"{pk} deleted" in ctl("documents", "delete", pk).stdout
    wait_gone(db, pk)
    deadline = time.monotonic() + 5
    while file_path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not file_path.exists()
    assert api.get(f"documents/{pk}").status_code == 404
    assert set(listed(ctl("documents", "list", as_json=True), True)) == {"beta notes"}


def test_documents_describe_missing_fails(ctl, db, settings, admin):
    dataset = make_resource(db, settings, admin, "Roads")
    run = ctl("documents", "describe", dataset.id, expect=1)
    assert run.stdout.strip() == ""


# -- geoapps --------------------------------------------------------------------------------------

def test_geoapps_commands(ctl, db, settings, admin, api):
    story = make_geoapp(db, settings, admin, "rivers-story", data={"sections": [1]})
    dash = make_geoapp(db, settings, admin, "dash", kind="dashboard")
    make_resource(db, settings, admin, "Not an app")

    for as_json in (False, True):
        rows = listed(ctl("geoapps", "list", as_json=as_json), as_json)
        assert set(rows) == {"rivers-story", "dash"}
        assert rows["rivers-story"]["resource_type"] == "geostory"
        assert rows["dash"]["pk"] == str(dash.id)
        if not as_json:
            assert rows["dash"]["owner.username"] == "admin"

    described = ctl("geoapps", "describe", story.id).json()
    assert described["name"] == "rivers-story" and described["data"] == {"sections": [1]}
    assert str(ctl("geoapps", "describe", dash.uuid).json()["pk"]) == str(dash.id)

    patched = ctl("geoapps", "patch", story.id, "--set",
                  json.dumps({"title": "Rivers", "data": {"sections": [2]}})).json()
    assert patched["geoapp"]["title"] == "Rivers" and patched["geoapp"]["data"] == {"sections": [2]}
    assert api.get(f"geoapps/{story.id}").json()["geoapp"]["data"] == {"sections": [2]}

    assert f"{dash.id} deleted" in ctl("geoapps", "delete", dash.id).stdout
    wait_gone(db, dash.id)
    assert set(listed(ctl("geoapps", "list", as_json=True), True)) == {"Rivers"}


# -- linked resources -----------------------------------------------------------------------------

def test_linked_resources_commands(ctl, db, settings, admin):
    document = make_resource(db, settings, admin, "Field report", resource_type="document")
    dataset = make_resource(db, settings, admin, "Roads")
    story = make_geoapp(db, settings, admin, "story")

    added = ctl("linked-resources", "add", document.id, "--linked-to", dataset.id, story.uuid).json()
    assert sorted(added["success"]) == sorted([dataset.id, story.id]) and added["error"] == []
    links = fresh(db).scalars(select(LinkedResource.target_id).where(
        LinkedResource.source_id == document.id)).all()
    assert sorted(links) == sorted([dataset.id, story.id])

    table = ctl("linked-resources", "describe", document.id).table()
    assert {(r["link_type"], r["pk"], r["resource_type"]) for r in table} == {
        ("linked_to", str(dataset.id), "dataset"), ("linked_to", str(story.id), "geostory")}
    back = ctl("linked-resources", "describe", dataset.id, as_json=True).json()
    assert [i["pk"] for i in back["linked_by"]] == [document.id]

    removed = ctl("linked-resources", "delete", document.id, "--linked-to", dataset.id).json()
    assert removed["success"] == [dataset.id]
    assert fresh(db).scalars(select(LinkedResource.target_id).where(
        LinkedResource.source_id == document.id)).all() == [story.id]
