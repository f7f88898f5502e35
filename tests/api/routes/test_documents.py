"""Documents: upload of every allowed type and byte-identical download, refusals that leave
nothing behind, remote documents, Range requests, download permissions, thumbnails, deletion."""

from __future__ import annotations

import io
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import rasterio
from fastapi.testclient import TestClient
from rasterio.io import MemoryFile
from sqlalchemy import func, select

from cartotheca.db.models import Document, Resource, User
from tests.api.routes.document_samples import image_bytes, pdf_bytes, samples
from tests.api.routes.test_permissions_and_executions import wait
from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import PASSWORD, make_resource, make_user
from tests.support.pixels import bands

SAMPLES = samples()


@pytest.fixture
def ana(db):
    make_user(db, "ana")
    return basic("ana", PASSWORD)


def upload(client, headers, name: str, data: bytes, **fields):
    files = {"doc_file": (name, data, "application/octet-stream")}
    return client.post("/api/v2/documents", headers=headers, files=files, data=fields)


def stored_files(settings) -> set[Path]:
    """Every file under the document and upload staging folders."""
    roots = [settings.DATA_DIR / "documents", settings.DATA_DIR / "uploads"]
    return {p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()}


def counts(db) -> tuple[int, int]:
    db.rollback()
    return (db.scalar(select(func.count()).select_from(Resource)),
            db.scalar(select(func.count()).select_from(Document)))


def site_path(url: str) -> str:
    return url.split("testserver", 1)[1]


@pytest.mark.parametrize("extension", sorted(SAMPLES))
def test_every_allowed_type_round_trips(client, db, settings, ana, extension):
    data = SAMPLES[extension]
    created = upload(client, ana, f"field report.{extension}", data, title=f"Report {extension}")
    assert created.status_code == 200, created.text
    record = created.json()["document"]
    pk = record["pk"]
    assert record["title"] == f"Report {extension}" and record["resource_type"] == "document"
    assert record["extension"] == extension and record["doc_url"] is None
    assert record["download_url"] == f"http://testserver/documents/{pk}/download"
    assert record["href"] == f"http://testserver/documents/{pk}/link"
    assert record["state"] == "PROCESSED" and record["owner"]["username"] == "ana"
    assert record["detail_url"] == f"http://testserver/catalogue/#/document/{pk}"

    detail = client.get(f"/api/v2/documents/{pk}").json()["document"]
    assert detail["mime_type"] == record["mime_type"] and detail["subtype"] == record["subtype"]
    assert client.get(f"/api/v2/resources/{pk}").json()["resource"]["download_url"] == record["download_url"]
    download = client.get(f"/documents/{pk}/download")
    assert download.status_code == 200
    assert download.content == data
    assert download.headers["content-type"].split(";")[0] == record["mime_type"]
    assert f'filename="field%20report.{extension}"' in download.headers["content-disposition"] or \
        f"field%20report.{extension}" in download.headers["content-disposition"]
    assert download.headers["accept-ranges"] == "bytes"


def test_types_and_subtypes_follow_geonode(client, ana):
    expected = {"txt": ("text/plain", "text"), "pdf": ("application/pdf", "presentation"),
                "png": ("image/png", "image"), "tif": ("image/tiff", "archive"),
                "zip": ("application/zip", "archive"), "xls": ("application/vnd.ms-excel", "text")}
    for extension, (mime, subtype) in expected.items():
        record = upload(client, ana, f"a.{extension}", SAMPLES[extension]).json()["document"]
        assert (record["mime_type"], record["subtype"]) == (mime, subtype), extension


def test_title_comes_from_the_file_name(client, ana):
    # geonodectl sends doc_file alone
    files = {"doc_file": ("stations 2024.txt", b"a\nb\n", "text/plain")}
    response = client.post("/api/v2/documents", headers=ana, files=files)
    assert response.status_code == 200, response.text
    record = response.json()["document"]
    assert record["title"] == "stations 2024" and record["name"] == "stations 2024"
    for key in ("title", "state", "subtype", "mime_type", "detail_url", "href"):
        assert record[key], key


REFUSALS = [
    ("program.exe", b"MZ\x90\x00" + b"\x00" * 60, {}, "supported extensions"),
    ("photo.pdf", SAMPLES["png"], {}, "not a valid .pdf"),
    ("notes.docx", SAMPLES["zip"], {}, "not a valid .docx"),
    ("sheet.xlsx", SAMPLES["docx"], {}, "not a valid .xlsx"),
    ("letter.doc", SAMPLES["xls"], {}, "not a valid .doc"),
    ("picture.png", SAMPLES["jpg"], {}, "not a valid .png"),
    ("data.txt", SAMPLES["pdf"], {}, "not a valid .txt"),
    ("binary.txt", b"abc\x00\x01\x02def", {}, "not a valid .txt"),
    ("empty.txt", b"", {}, "empty"),
    ("archive.zip", b"PK\x03\x04 not really a zip", {}, "not a valid .zip"),
]


@pytest.mark.parametrize("name,data,fields,message", REFUSALS,
                         ids=[r[0] for r in REFUSALS])
def test_refused_files_leave_nothing(client, db, settings, ana, name, data, fields, message):
    before_counts, before_files = counts(db), stored_files(settings)
    response = upload(client, ana, name, data, **fields)
    assert response.status_code == 400, response.text
    assert message in " ".join(response.json()["errors"])
    assert response.json()["code"] == "document_exception"
    assert counts(db) == before_counts
    assert stored_files(settings) == before_files


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/report.pdf", "http://127.0.0.1:8000/documents/1/download",
    "http://localhost/report.pdf", "http://10.1.2.3/report.pdf", "https://192.168.0.10/x.pdf",
    "http://172.16.5.4/x.pdf", "http://169.254.169.254/latest/meta-data.txt",
    "http://[::1]/report.pdf", "http://[::ffff:127.0.0.1]/report.pdf", "http://0.0.0.0/x.pdf",
    "http://100.64.0.1/x.pdf", "ftp://93.184.215.14/x.pdf", "file:///etc/passwd.txt",
    "http://user:pw@93.184.215.14/x.pdf",
])
def test_inward_or_odd_urls_are_refused(client, db, settings, ana, url):
    before_counts, before_files = counts(db), stored_files(settings)
    for send in ({"data": {"doc_url": url, "title": "Remote"}},
                 {"json": {"doc_url": url, "title": "Remote"}}):
        response = client.post("/api/v2/documents", headers=ana, **send)
        assert response.status_code == 400, (url, response.text)
    assert counts(db) == before_counts and stored_files(settings) == before_files


def test_oversize_is_refused_while_streaming(make_app, db, settings):
    make_user(db, "ana")
    before_counts, before_files = counts(db), stored_files(settings)
    app = make_app(MAX_DOCUMENT_SIZE=1)
    big = b"line of text\n" * (1024 * 1024 // 13 + 2000)  # a little over 1 MB
    with TestClient(app) as client:
        response = upload(client, basic("ana", PASSWORD), "big.txt", big)
        assert response.status_code == 400, response.text
        assert "maximum document size (1.0 MB)" in response.json()["errors"][0]
        small = upload(client, basic("ana", PASSWORD), "small.txt", big[: 512 * 1024])
        assert small.status_code == 200
    assert counts(db)[0] == before_counts[0] + 1
    added = stored_files(settings) - before_files
    assert len(added) == 1 and added.pop().read_bytes() == big[: 512 * 1024]


def test_the_document_upload_size_limit_set_by_staff_is_enforced(client, db, settings, admin_auth):
    make_user(db, "ana")
    changed = client.post("/api/v2/upload-size-limits", headers=admin_auth,
                          json={"slug": "document_upload_size", "max_size": 4096})
    assert changed.status_code == 200, changed.text
    before_counts, before_files = counts(db), stored_files(settings)
    response = upload(client, basic("ana", PASSWORD), "big.txt", b"x\n" * 4096)
    assert response.status_code == 400, response.text
    assert "maximum document size (4.0 KB)" in response.json()["errors"][0]
    assert counts(db) == before_counts and stored_files(settings) == before_files
    # a file that parses as a multipart form under the limit goes through
    assert upload(client, basic("ana", PASSWORD), "small.txt", b"x\n" * 1024).status_code == 200


def test_allowed_types_setting_is_enforced(make_app, db):
    make_user(db, "ana")
    app = make_app(ALLOWED_DOCUMENT_TYPES=["pdf"])
    with TestClient(app) as client:
        refused = upload(client, basic("ana", PASSWORD), "a.txt", b"text")
        assert refused.status_code == 400
        assert "Allowed: pdf" in refused.json()["errors"]
        assert upload(client, basic("ana", PASSWORD), "a.pdf", SAMPLES["pdf"]).status_code == 200


def test_bad_requests(client, ana, db, settings):
    before = counts(db)
    neither = client.post("/api/v2/documents", headers=ana, data={"title": "x"})
    assert neither.status_code == 400 and "must be specified" in neither.json()["errors"][0]
    both = upload(client, ana, "a.txt", b"text", doc_url="http://93.184.215.14/a.pdf")
    assert both.status_code == 400 and "not both" in both.json()["errors"][0]
    path = client.post("/api/v2/documents", headers=ana, json={"file_path": "/etc/passwd"})
    assert path.status_code == 400
    anonymous = upload(client, {}, "a.txt", b"text")
    assert anonymous.status_code == 401
    assert counts(db) == before


def test_remote_document_is_linked_not_fetched(client, db, ana):
    url = "http://93.184.215.14/reports/annual%20report.pdf"
    created = client.post("/api/v2/documents", headers=ana, data={"doc_url": url})
    assert created.status_code == 200, created.text
    record = created.json()["document"]
    assert record["doc_url"] == url and record["href"] == url and record["extension"] == "pdf"
    assert record["title"] == "annual report" and record["sourcetype"] == "REMOTE"
    assert record["thumbnail_url"] is None  # no host is allowed: nothing was fetched
    assert record["download_urls"] == [{"url": record["download_url"], "ajax_safe": False}]
    redirect = client.get(f"/documents/{record['pk']}/download", follow_redirects=False)
    assert redirect.status_code == 302 and redirect.headers["location"] == url


def test_remote_document_without_extension_needs_one(client, ana):
    url = "http://93.184.215.14/api/report?id=7"
    missing = client.post("/api/v2/documents", headers=ana, json={"doc_url": url, "title": "R"})
    assert missing.status_code == 400 and "supported extensions" in missing.json()["errors"][0]
    given = client.post("/api/v2/documents", headers=ana,
                        json={"doc_url": url, "title": "R", "extension": "jpeg"})
    assert given.status_code == 200 and given.json()["document"]["extension"] == "jpeg"
    wrong = client.post("/api/v2/documents", headers=ana,
                        json={"doc_url": url, "title": "R", "extension": "exe"})
    assert wrong.status_code == 400


def test_range_requests(client, ana):
    data = SAMPLES["pdf"]
    pk = upload(client, ana, "a.pdf", data).json()["document"]["pk"]
    part = client.get(f"/documents/{pk}/download", headers={"Range": "bytes=5-14"})
    assert part.status_code == 206
    assert part.content == data[5:15]
    assert part.headers["content-range"] == f"bytes 5-14/{len(data)}"
    tail = client.get(f"/documents/{pk}/download", headers={"Range": "bytes=-7"})
    assert tail.status_code == 206 and tail.content == data[-7:]
    outside = client.get(f"/documents/{pk}/download", headers={"Range": f"bytes={len(data) + 5}-"})
    assert outside.status_code == 416
    head = client.head(f"/documents/{pk}/download")
    assert head.status_code == 200 and int(head.headers["content-length"]) == len(data)


def test_download_needs_the_download_permission(client, db, settings, ana):
    make_user(db, "bob")
    bob = basic("bob", PASSWORD)
    pk = upload(client, ana, "a.txt", b"secret text").json()["document"]["pk"]
    # make it private, then give bob view only
    assert client.put(f"/api/v2/resources/{pk}/set_perms", headers=ana,
                      json={"users": {"bob": ["view_resourcebase"]}, "groups": {}}).status_code == 200
    assert client.get(f"/documents/{pk}/download").status_code == 401
    assert client.get(f"/api/v2/documents/{pk}", headers=bob).status_code == 200
    denied = client.get(f"/documents/{pk}/download", headers=bob)
    assert denied.status_code == 403 and "secret" not in denied.text
    assert client.get(f"/documents/{pk}/link", headers=bob).status_code == 403
    assert client.get(f"/documents/{pk}/download", headers=ana).content == b"secret text"
    admin = basic("admin", ADMIN_PASSWORD)
    assert client.get(f"/documents/{pk}/download", headers=admin).status_code == 200
    assert client.get("/documents/999999/download", headers=admin).status_code == 404
    dataset = make_resource(db, settings, _user(db, "ana"), "A dataset")
    assert client.get(f"/documents/{dataset.id}/download", headers=admin).status_code == 404


def _user(db, name):
    return db.scalar(select(User).where(User.username == name))


def test_link_shows_safe_types_inline(client, ana):
    png = upload(client, ana, "a.png", SAMPLES["png"]).json()["document"]["pk"]
    view = client.get(f"/documents/{png}/link")
    assert view.status_code == 200 and view.headers["content-disposition"].startswith("inline")
    assert view.headers["x-content-type-options"] == "nosniff"
    docx = upload(client, ana, "a.docx", SAMPLES["docx"]).json()["document"]["pk"]
    assert client.get(f"/documents/{docx}/link").headers["content-disposition"].startswith("attachment")


@pytest.mark.parametrize("extension", ["png", "jpg", "gif", "tif", "pdf"])
def test_thumbnails_from_images_and_pdf_pages(client, settings, ana, extension):
    data = pdf_bytes() if extension == "pdf" else SAMPLES[extension]
    record = upload(client, ana, f"a.{extension}", data).json()["document"]
    assert record["thumbnail_url"] == f"http://testserver/thumbnails/{record['uuid']}.png"
    served = client.get(site_path(record["thumbnail_url"]))
    assert served.status_code == 200 and served.headers["content-type"] == "image/png"
    pixels = bands(served.content)
    _, height, width = pixels.shape
    tolerance = 3 if extension == "jpg" else 0
    left, right = pixels[:3, height // 2, width // 8], pixels[:3, height // 2, width - width // 8]
    assert np.abs(left.astype(int) - [255, 0, 0]).max() <= tolerance, left
    assert np.abs(right.astype(int) - [0, 0, 255]).max() <= tolerance, right
    if extension == "pdf":  # the page (2:1) drawn to fit THUMBNAIL_SIZE
        assert (width, height) == (400, 200)


def test_no_thumbnail_for_other_types(client, ana):
    for extension in ("txt", "zip", "docx"):
        record = upload(client, ana, f"a.{extension}", SAMPLES[extension]).json()["document"]
        assert record["thumbnail_url"] is None


def test_a_larger_image_is_shrunk_to_the_thumbnail_size(client, ana):
    pixels = np.zeros((3, 600, 1200), dtype=np.uint8)
    pixels[0] = 200
    with MemoryFile() as memory:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rasterio.errors.NotGeoreferencedWarning)
            with memory.open(driver="PNG", width=1200, height=600, count=3, dtype="uint8") as dst:
                dst.write(pixels)
        data = memory.read()
    record = upload(client, ana, "wide.png", data).json()["document"]
    thumb = bands(client.get(site_path(record["thumbnail_url"])).content)
    assert thumb.shape[1:] == (200, 400)
    assert client.get(f"/documents/{record['pk']}/download").content == data


def wait_deleted(db, pk: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        db.rollback()
        if db.get(Resource, pk) is None:
            return
        time.sleep(0.05)
    raise AssertionError(f"resource {pk} still exists")


def test_deleting_removes_the_file(client, db, settings, ana):
    paths = {}
    for how in ("item", "bulk", "async"):
        pk = int(upload(client, ana, f"{how}.txt", b"to be deleted").json()["document"]["pk"])
        paths[how] = Path(db.get(Document, pk).file_path)
        assert paths[how].is_file() and paths[how].is_relative_to(settings.DATA_DIR / "documents")
        if how == "item":
            assert client.delete(f"/api/v2/documents/{pk}", headers=ana).status_code == 204
        elif how == "bulk":
            assert client.request("DELETE", "/api/v2/documents", headers=ana,
                                  json=[{"id": pk}]).status_code == 204
        else:
            assert client.delete(f"/api/v2/resources/{pk}/delete", headers=ana).status_code == 200
            wait_deleted(db, pk)
            # the worker removes the file right after its commit, which the row's absence shows
            deadline = time.monotonic() + 5
            while paths[how].exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        assert not paths[how].exists() and not paths[how].parent.exists(), how
        assert client.get(f"/documents/{pk}/download", headers=ana).status_code == 404


def test_a_refused_delete_keeps_the_file(client, db, ana):
    make_user(db, "bob")
    pk = int(upload(client, ana, "a.txt", b"keep me").json()["document"]["pk"])
    path = Path(db.get(Document, pk).file_path)
    assert client.delete(f"/api/v2/documents/{pk}", headers=basic("bob", PASSWORD)).status_code == 403
    assert path.read_bytes() == b"keep me"


def test_copy_gets_its_own_file(client, db, settings, ana):
    pk = int(upload(client, ana, "original.pdf", SAMPLES["pdf"]).json()["document"]["pk"])
    before = stored_files(settings)
    done = wait(client, client.put(f"/api/v2/resources/{pk}/copy", headers=ana), ana)
    assert done["status"] == "finished", done
    copy_id = done["output_params"]["resources"][0]["id"]
    db.rollback()
    original, copy = db.get(Document, pk), db.get(Document, copy_id)
    assert copy.file_path != original.file_path and Path(copy.file_path).is_file()
    # the route's trial copy (checked, then rolled back) left no file: only the job's copy is new
    assert stored_files(settings) - before == {Path(copy.file_path)}
    assert client.get(f"/documents/{copy_id}/download", headers=ana).content == SAMPLES["pdf"]
    assert client.delete(f"/api/v2/documents/{copy_id}", headers=ana).status_code == 204
    assert Path(original.file_path).is_file()
    assert client.get(f"/documents/{pk}/download", headers=ana).content == SAMPLES["pdf"]


def test_patch_and_echo(client, ana):
    record = upload(client, ana, "a.txt", b"text").json()["document"]
    pk = record["pk"]
    patched = client.patch(f"/api/v2/documents/{pk}/", headers=ana, json={"title": "Renamed"})
    assert patched.status_code == 200 and patched.json()["document"]["title"] == "Renamed"
    current = patched.json()["document"]
    echoed = client.put(f"/api/v2/documents/{pk}", headers=ana, json=current | {"abstract": "A"})
    assert echoed.status_code == 200, echoed.text
    assert echoed.json()["document"]["abstract"] == "A"
    refused = client.patch(f"/api/v2/documents/{pk}", headers=ana, json={"extension": "pdf"})
    assert refused.status_code == 400 and "read-only" in refused.json()["errors"][0]
    doc_url = client.patch(f"/api/v2/documents/{pk}", headers=ana, json={"doc_url": "http://x/a.pdf"})
    assert doc_url.status_code == 400


def test_list_filters_and_statements(client, db, settings, ana, count_statements):
    for index in range(6):
        upload(client, ana, f"note {index}.txt", b"text")
    make_resource(db, settings, _user(db, "ana"), "Not a document")
    body = client.get("/api/v2/documents?page_size=3").json()
    assert body["total"] == 6 and len(body["documents"]) == 3
    assert all(d["resource_type"] == "document" and d["extension"] == "txt" for d in body["documents"])
    found = client.get("/api/v2/documents?filter{title.icontains}=note 4").json()["documents"]
    assert [d["title"] for d in found] == ["note 4"]
    with count_statements() as small:
        client.get("/api/v2/documents?page_size=2")
    with count_statements() as large:
        client.get("/api/v2/documents?page_size=6")
    assert small.value == large.value


def test_documents_from_other_paths_have_no_file(client, db, settings, ana):
    # a document record made without a file (the generic create): extras are empty, no 500
    owner = _user(db, "ana")
    bare = make_resource(db, settings, owner, "Bare document", resource_type="document")
    record = client.get(f"/api/v2/documents/{bare.id}").json()["document"]
    assert record["extension"] is None and record["download_url"] is None
    assert client.get(f"/documents/{bare.id}/download").status_code == 404


def test_text_is_utf8_or_a_single_byte_encoding(client, ana):
    for text in ("Größe: 12 m²\n".encode(), "Gr\xf6\xdfe\n".encode("latin-1"),
                 "\ufeffhello".encode("utf-16")):
        assert upload(client, ana, "a.txt", text).status_code == 200, text
    assert upload(client, ana, "a.txt", io.BytesIO(b"\x00" * 10).getvalue()).status_code == 400


def test_gif_and_jpeg_variants(client, ana):
    for extension, data in (("jpeg", image_bytes("JPEG")), ("gif", image_bytes("GIF", palette=True))):
        assert upload(client, ana, f"a.{extension}", data).status_code == 200
