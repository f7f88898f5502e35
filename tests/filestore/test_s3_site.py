"""A site whose files live in an S3-compatible bucket (moto's server as a process; vectors in
PostGIS): documents and thumbnails are written to and served from the bucket with the local
backend's wire behaviour, deleting a resource removes its objects, the data directory keeps no
copy, an outage of the store answers 503 with Retry-After and passes by itself, and the
commands refuse settings a cluster cannot run with."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from cartotheca.api.app import create_app
from cartotheca.db.models import Document
from tests.api.routes.document_samples import pdf_bytes
from tests.conftest import _clean, basic
from tests.factories import PASSWORD, make_user
from tests.geodata.fixtures import polygons_sld, publish_file, write_polygons
from tests.support.processes import outside_environment, process_env
from tests.support.s3 import S3Server, s3_server, store_settings
from tests.support.services import postgres_database

PDF = pdf_bytes()
KEPT_FILES = ("documents", "thumbnails", "uploads")


@pytest.fixture(scope="module")
def postgis_url() -> Iterator[str]:
    with postgres_database("cartotheca_s3_datastore", postgis=True) as url:
        yield url


@pytest.fixture
def site(make_settings, base_app, postgis_url, tmp_path):
    """``site(server, bucket)``: an app over the test database whose files go to ``bucket``."""
    built = []

    def build(server: S3Server, bucket: str):
        settings = make_settings(DATA_DIR=tmp_path / "data", STORAGE_BACKEND="postgis",
                                 DATASTORE_URL=postgis_url, **store_settings(server, bucket))
        app = create_app(settings, migrate=False)
        built.append(app)
        return app

    yield build
    for app in built:
        app.state.cartotheca.engine.dispose()
    _clean(base_app.state.cartotheca.engine)


def kept_on_disk(app) -> list[str]:
    """Files of documents, thumbnails or uploads (or any PDF or PNG) under the data directory."""
    root = app.state.cartotheca.settings.DATA_DIR
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and (p.relative_to(root).parts[0] in KEPT_FILES
                                      or p.suffix.lower() in (".pdf", ".png")))


def upload(client: TestClient, headers: dict[str, str], name: str, data: bytes) -> dict:
    answer = client.post("/api/v2/documents", headers=headers,
                         files={"doc_file": (name, data, "application/octet-stream")})
    assert answer.status_code == 200, answer.text
    return answer.json()["document"]


def test_documents_and_thumbnails_are_served_from_the_bucket(s3, site, db):
    bucket = s3.new_bucket()
    app = site(s3, bucket)
    make_user(db, "ana")
    ana = basic("ana", PASSWORD)
    with TestClient(app) as client:
        record = upload(client, ana, "field report.pdf", PDF)
        pk, uuid = record["pk"], record["uuid"]
        assert s3.keys(bucket) == [f"site/documents/{uuid}/field report.pdf",
                                   f"site/thumbnails/{uuid}.png"]
        db.rollback()
        assert db.get(Document, pk).file_path == f"s3://{bucket}/site/documents/{uuid}/field report.pdf"

        whole = client.get(f"/documents/{pk}/download")
        assert whole.status_code == 200 and whole.content == PDF
        assert whole.headers["accept-ranges"] == "bytes"
        assert whole.headers["content-length"] == str(len(PDF))
        assert whole.headers["content-type"] == "application/pdf"
        assert whole.headers["cache-control"] == "private, max-age=0"
        assert "field%20report.pdf" in whole.headers["content-disposition"]
        assert whole.headers["content-disposition"].startswith("attachment;")
        assert whole.headers["last-modified"].endswith(" GMT")
        etag = whole.headers["etag"]

        part = client.get(f"/documents/{pk}/download", headers={"Range": "bytes=5-14"})
        assert part.status_code == 206 and part.content == PDF[5:15]
        assert part.headers["content-range"] == f"bytes 5-14/{len(PDF)}"
        tail = client.get(f"/documents/{pk}/download", headers={"Range": "bytes=-7"})
        assert tail.status_code == 206 and tail.content == PDF[-7:]
        outside = client.get(f"/documents/{pk}/download", headers={"Range": f"bytes={len(PDF) + 5}-"})
        assert outside.status_code == 416
        assert outside.headers["content-range"] == f"bytes */{len(PDF)}"
        head = client.head(f"/documents/{pk}/download")
        assert head.status_code == 200 and int(head.headers["content-length"]) == len(PDF)
        assert head.content == b""
        cached = client.get(f"/documents/{pk}/download", headers={"If-None-Match": etag})
        assert cached.status_code == 304 and cached.content == b""
        inline = client.get(f"/documents/{pk}/link")
        assert inline.status_code == 200 and inline.content == PDF
        assert inline.headers["content-disposition"].startswith("inline;")

        thumbnail = client.get(f"/thumbnails/{uuid}.png")
        assert thumbnail.status_code == 200 and thumbnail.content.startswith(b"\x89PNG")
        assert thumbnail.content == s3.client().get_object(
            Bucket=bucket, Key=f"site/thumbnails/{uuid}.png")["Body"].read()
        again = client.get(f"/thumbnails/{uuid}.png", headers={"If-None-Match": thumbnail.headers["etag"]})
        assert again.status_code == 304

        assert kept_on_disk(app) == []
        assert client.delete(f"/api/v2/documents/{pk}", headers=ana).status_code == 204
        assert s3.keys(bucket) == []
        assert client.get(f"/documents/{pk}/download").status_code == 404


def test_a_published_dataset_keeps_its_thumbnail_in_the_bucket(s3, site, db, tmp_path):
    bucket = s3.new_bucket()
    app = site(s3, bucket)
    owner = make_user(db, "dora")
    with TestClient(app) as client:
        resource = publish_file(db, app.state.cartotheca.settings, owner, write_polygons(tmp_path),
                                title="Polygons", sld=polygons_sld())
        key = f"site/thumbnails/{resource.uuid}.png"
        assert key in s3.keys(bucket)
        thumbnail = client.get(f"/thumbnails/{resource.uuid}.png")
        assert thumbnail.status_code == 200
        assert thumbnail.content == s3.client().get_object(Bucket=bucket, Key=key)["Body"].read()
        assert kept_on_disk(app) == []
        deleted = client.delete(f"/api/v2/resources/{resource.id}", headers=basic("dora", PASSWORD))
        assert deleted.status_code == 204
        assert key not in s3.keys(bucket)
        assert client.get(f"/thumbnails/{resource.uuid}.png").status_code == 404


def test_a_copied_document_gets_objects_of_its_own(s3, site, db):
    bucket = s3.new_bucket()
    app = site(s3, bucket)
    make_user(db, "ana")
    ana = basic("ana", PASSWORD)
    with TestClient(app) as client:
        record = upload(client, ana, "a.pdf", PDF)
        copied = client.put(f"/api/v2/resources/{record['pk']}/copy", headers=ana)
        assert copied.status_code == 200, copied.text
        status_url = copied.json()["status_url"].split("testserver", 1)[1]
        for _ in range(200):
            state = client.get(status_url, headers=ana).json()
            if state["status"] in ("finished", "failed"):
                break
        assert state["status"] == "finished", state
        clone = state["output_params"]["resources"][0]
        download = client.get(f"/documents/{clone['id']}/download")
        assert download.status_code == 200 and download.content == PDF
        clone_uuid = client.get(f"/api/v2/documents/{clone['id']}").json()["document"]["uuid"]
        assert f"site/documents/{clone_uuid}/a.pdf" in s3.keys(bucket)
        assert kept_on_disk(app) == []


def test_an_outage_of_the_store_answers_503_and_passes(site, db, tmp_path):
    with s3_server(tmp_path / "moto.log") as server:
        bucket = server.new_bucket()
        app = site(server, bucket)
        make_user(db, "ana")
        ana = basic("ana", PASSWORD)
        with TestClient(app) as client:
            record = upload(client, ana, "a.pdf", PDF)
            pk, uuid = record["pk"], record["uuid"]
            saved = {key: server.client().get_object(Bucket=bucket, Key=key)["Body"].read()
                     for key in server.keys(bucket)}
            server.stop()
            for path in (f"/documents/{pk}/download", f"/thumbnails/{uuid}.png"):
                down = client.get(path)
                assert down.status_code == 503, (path, down.text)
                assert int(down.headers["retry-after"]) > 0
                assert down.json()["code"] == "service_unavailable"
            # the server comes back on the same port, with its objects
            server.start()
            server.client().create_bucket(Bucket=bucket)
            for key, data in saved.items():
                server.client().put_object(Bucket=bucket, Key=key, Body=data)
            back = client.get(f"/documents/{pk}/download", headers={"Range": "bytes=0-3"})
            assert back.status_code == 206 and back.content == PDF[:4]
            assert client.get(f"/thumbnails/{uuid}.png").status_code == 200


def test_commands_refuse_a_geopackage_store_or_a_missing_secret_key(tmp_path):
    """Once, whatever the catalogue database: the refusal comes before it is opened."""
    base = {**outside_environment(), **process_env(f"sqlite:///{tmp_path / 'x.sqlite3'}", tmp_path / "data"),
            "CARTOTHECA_OBJECT_STORE_URL": "s3://bucket/site",
            "CARTOTHECA_S3_ENDPOINT_URL": "http://127.0.0.1:9"}
    cases = {
        ("serve", "STORAGE_BACKEND"): {**base, "CARTOTHECA_STORAGE_BACKEND": "geopackage"},
        ("worker", "SECRET_KEY"): {**{k: v for k, v in base.items() if k != "CARTOTHECA_SECRET_KEY"},
                                   "CARTOTHECA_STORAGE_BACKEND": "postgis"},
    }
    for (command, named), env in cases.items():
        done = subprocess.run([sys.executable, "-m", "cartotheca.cli", command], env=env,
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode != 0, done.stdout
        assert f"OBJECT_STORE_URL is set but {named}" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "data").exists()  # refused before anything was written


def test_the_app_refuses_them_too(make_settings, tmp_path):
    with pytest.raises(ValueError, match="STORAGE_BACKEND is 'geopackage'"):
        create_app(make_settings(DATA_DIR=tmp_path, STORAGE_BACKEND="geopackage",
                                 OBJECT_STORE_URL="s3://bucket/site"), migrate=False)
    with pytest.raises(ValueError, match="SECRET_KEY is not"):
        create_app(make_settings(DATA_DIR=tmp_path, STORAGE_BACKEND="postgis", SECRET_KEY=None,
                                 DATASTORE_URL="postgresql://127.0.0.1/none",
                                 OBJECT_STORE_URL="s3://bucket/site"), migrate=False)
