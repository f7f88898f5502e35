"""Upload size and parallelism limits: the GeoNode collections, and their enforcement on real sockets.

The enforcement tests run the app under uvicorn on a free port and talk raw HTTP over sockets,
so they can count how many body bytes were actually sent before the answer came back.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy import func
from sqlalchemy import select as sql_select

from cartotheca.catalogue.upload_limits import size_label
from cartotheca.db.models import Dataset, ExecutionRequest, Resource, Upload, UploadSlot
from tests.conftest import basic
from tests.factories import PASSWORD, make_user
from tests.geodata import fixtures as fx

SIZE_URL = "/api/v2/upload-size-limits"
PARALLEL_URL = "/api/v2/upload-parallelism-limits"


@pytest.fixture
def ana(db):
    return make_user(db, "ana")


# -- the collections ---------------------------------------------------------------------------


def test_size_limits_list_the_defaults_to_everyone(client, settings):
    response = client.get(SIZE_URL)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"links", "total", "page", "page_size", "upload-size-limits"}
    limits = {item["slug"]: item for item in body["upload-size-limits"]}
    assert list(limits) == ["dataset_upload_size", "document_upload_size"]  # ordered by slug
    dataset = limits["dataset_upload_size"]
    assert dataset == {
        "slug": "dataset_upload_size", "description": "The sum of sizes for the files of a dataset upload.",
        "max_size": settings.DEFAULT_MAX_UPLOAD_SIZE, "max_size_label": "100.0 MB",
        "link": "http://testserver/api/v2/upload-size-limits/dataset_upload_size",
    }
    assert limits["document_upload_size"]["max_size"] == settings.MAX_DOCUMENT_SIZE * 1024 * 1024
    detail = client.get(f"{SIZE_URL}/dataset_upload_size/")
    assert detail.status_code == 200 and detail.json() == {"upload-size-limit": dataset}


def test_parallelism_limits_list_the_default(client):
    body = client.get(PARALLEL_URL + "/").json()
    assert body["total"] == 1
    assert body["upload-parallelism-limits"] == [{
        "slug": "default_max_parallel_uploads",
        "description": "The default maximum parallel uploads per user.", "max_number": 5,
        "link": "http://testserver/api/v2/upload-parallelism-limits/default_max_parallel_uploads",
    }]
    assert client.get(f"{PARALLEL_URL}/default_max_parallel_uploads").json()[
        "upload-parallelism-limit"]["max_number"] == 5


def test_unknown_slug_is_404(client):
    for url in (f"{SIZE_URL}/nosuch", f"{PARALLEL_URL}/nosuch"):
        response = client.get(url)
        assert response.status_code == 404 and response.json()["detail"] == "Not found."


def test_default_follows_the_setting_until_staff_set_it(make_app, db):
    with TestClient(make_app(DEFAULT_MAX_UPLOAD_SIZE=2048)) as client:
        item = client.get(f"{SIZE_URL}/dataset_upload_size").json()["upload-size-limit"]
        assert item["max_size"] == 2048 and item["max_size_label"] == "2.0 KB"


def test_staff_create_and_change_limits(client, admin_auth):
    changed = client.post(SIZE_URL, headers=admin_auth,
                          json={"slug": "dataset_upload_size", "max_size": 5000})
    assert changed.status_code == 200
    item = changed.json()["upload-size-limit"]
    assert item["max_size"] == 5000 and item["max_size_label"] == "4.9 KB"
    # the description was kept
    assert item["description"] == "The sum of sizes for the files of a dataset upload."
    assert client.get(f"{SIZE_URL}/dataset_upload_size").json()["upload-size-limit"]["max_size"] == 5000

    created = client.post(f"{SIZE_URL}/", headers=admin_auth,
                          json={"upload-size-limit": {"slug": "map_upload", "description": "maps",
                                                      "max_size": 1}})
    assert created.status_code == 201
    assert created.json()["upload-size-limit"]["max_size_label"] == "1 byte"
    assert [i["slug"] for i in client.get(SIZE_URL).json()["upload-size-limits"]] == [
        "dataset_upload_size", "document_upload_size", "map_upload"]

    parallel = client.post(PARALLEL_URL, headers=admin_auth,
                           data={"slug": "default_max_parallel_uploads", "max_number": "2"})
    assert parallel.status_code == 200 and parallel.json()["upload-parallelism-limit"]["max_number"] == 2
    assert client.get(PARALLEL_URL).json()["upload-parallelism-limits"][0]["max_number"] == 2


@pytest.mark.parametrize("body, message", [
    ({"max_size": 10}, "slug: This field is required."),
    ({"slug": "x", "max_size": 10}, "slug: Enter a valid"),
    ({"slug": "new_limit"}, "max_size: This field is required."),
    ({"slug": "new_limit", "max_size": -1}, "max_size: Ensure this value is greater than or equal to 0."),
    ({"slug": "new_limit", "max_size": "big"}, "max_size: A valid integer is required."),
    ({"slug": "new_limit", "max_size": True}, "max_size: A valid integer is required."),
    ({"slug": "new_limit", "max_size": 1, "description": "x" * 256}, "description: Ensure"),
    ([1, 2], "Expected a JSON object"),
])
def test_invalid_size_limits_are_400(client, admin_auth, body, message):
    response = client.post(SIZE_URL, headers=admin_auth, json=body)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid" and response.json()["errors"][0].startswith(message)


def test_parallelism_number_is_bounded(client, admin_auth):
    response = client.post(PARALLEL_URL, headers=admin_auth,
                           json={"slug": "default_max_parallel_uploads", "max_number": 40000})
    assert response.status_code == 400 and "32767" in response.json()["errors"][0]


def test_only_staff_write(client, ana):
    anonymous = client.post(SIZE_URL, json={"slug": "dataset_upload_size", "max_size": 1})
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"].startswith("Basic")
    for url, body in ((SIZE_URL, {"slug": "dataset_upload_size", "max_size": 1}),
                      (PARALLEL_URL, {"slug": "default_max_parallel_uploads", "max_number": 1})):
        refused = client.post(url, headers=basic("ana", PASSWORD), json=body)
        assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    assert client.get(f"{SIZE_URL}/dataset_upload_size").json()["upload-size-limit"]["max_size"] != 1


@pytest.mark.parametrize("url", [SIZE_URL, f"{SIZE_URL}/dataset_upload_size", PARALLEL_URL,
                                 f"{PARALLEL_URL}/default_max_parallel_uploads"])
def test_put_patch_delete_are_not_offered(client, admin_auth, url):
    for method in ("PUT", "PATCH", "DELETE"):
        response = client.request(method, url, headers=admin_auth, json={"max_size": 1})
        assert response.status_code == 405, (method, url)
        assert response.json() == {"success": False, "errors": [f'Method "{method}" not allowed.'],
                                   "code": "method_not_allowed"}
    if url.count("/") > 3:  # an item: POST creates on the collection only
        assert client.post(url, headers=admin_auth, json={"max_size": 1}).status_code == 405


def set_parallelism(client, auth, number: int) -> None:
    response = client.post(PARALLEL_URL, headers=auth,
                           json={"slug": "default_max_parallel_uploads", "max_number": number})
    assert response.status_code == 200, response.text


def test_size_labels_are_django_filesizeformat():
    assert [size_label(n) for n in (0, 1, 1023, 1024, 1536, 104857600, 5 * 1024 ** 3)] == [
        "0 bytes", "1 byte", "1023 bytes", "1.0 KB", "1.5 KB", "100.0 MB", "5.0 GB"]


def test_api_root_lists_the_limits(client):
    root = client.get("/api/v2/").json()
    assert root["upload-size-limits"] == "http://testserver/api/v2/upload-size-limits"
    assert root["upload-parallelism-limits"] == "http://testserver/api/v2/upload-parallelism-limits"
    assert "management" not in root


# -- enforcement on a live server ------------------------------------------------------------


class Live:
    def __init__(self, app):
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="live-uvicorn", daemon=True)

    def __enter__(self) -> Live:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "server did not start"
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=30)


@pytest.fixture
def live(make_app) -> Iterator:
    started = []

    def start(**settings):
        server = Live(make_app(**settings)).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)


BOUNDARY = "cartotheca-test-boundary"


def multipart_head(filename: str) -> bytes:
    return (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"charset\"\r\n\r\nUTF-8\r\n"
            f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"base_file\"; filename=\"{filename}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()


def multipart_body(path: Path) -> bytes:
    return multipart_head(path.name) + path.read_bytes() + f"\r\n--{BOUNDARY}--\r\n".encode()


def request_head(headers: dict[str, str], **extra: str) -> bytes:
    lines = ["POST /api/v2/uploads/upload HTTP/1.1", "Host: 127.0.0.1",
             f"Content-Type: multipart/form-data; boundary={BOUNDARY}",
             *(f"{k}: {v}" for k, v in headers.items()),
             *(f"{k.replace('_', '-')}: {v}" for k, v in extra.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes, bool]:
    """Status, headers, body, and whether the server then closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", 0))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    try:
        closed = sock.recv(1) == b""
    except ConnectionResetError:
        closed = True
    except TimeoutError:
        closed = False
    return int(lines[0].split()[1]), headers, body[:length], closed


def entries(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


def nothing_recorded(db) -> None:
    db.expire_all()
    for model in (Upload, ExecutionRequest, Resource, Dataset, UploadSlot):
        assert db.scalar(sql_select(func.count()).select_from(model)) == 0, model


LIMIT = 256 * 1024


def test_declared_body_over_the_limit_is_refused_before_it_is_read(live, db, settings, ana):
    server = live(DEFAULT_MAX_UPLOAD_SIZE=LIMIT)
    staged_before = entries(settings.DATA_DIR / "uploads")
    vector_before = entries(settings.DATA_DIR / "vector")
    with server.connect() as sock:
        # Only the headers go out: the answer must come without a single byte of the body.
        sock.sendall(request_head(basic("ana", PASSWORD), Content_Length=str(LIMIT + 1)))
        status, headers, body, closed = read_response(sock)
    assert status == 400 and headers["connection"] == "close" and closed
    answer = json.loads(body)
    assert answer["code"] == "total_upload_size_exceeded"
    assert answer["errors"] == ["Total upload size exceeds 256.0 KB. Please try again with smaller files."]
    nothing_recorded(db)
    assert entries(settings.DATA_DIR / "uploads") == staged_before
    assert entries(settings.DATA_DIR / "vector") == vector_before


def test_body_exactly_at_the_limit_is_read(live, db, ana, tmp_path):
    path = fx.write_points(tmp_path, "at_limit", driver="GeoJSON")
    body = multipart_body(path)
    server = live(DEFAULT_MAX_UPLOAD_SIZE=len(body))
    with server.connect() as sock:
        sock.sendall(request_head(basic("ana", PASSWORD), Content_Length=str(len(body)), Connection="close"))
        sock.sendall(body)
        status, _, answer, _ = read_response(sock)
    assert status == 200, answer


def test_chunked_body_is_refused_as_soon_as_it_passes_the_limit(live, db, settings, ana):
    server = live(DEFAULT_MAX_UPLOAD_SIZE=LIMIT)
    staged_before = entries(settings.DATA_DIR / "uploads")
    total = 64 * 1024 * 1024  # what the client would send if nobody stopped it
    chunk = b"x" * 8192
    sent = 0
    with server.connect() as sock:
        sock.sendall(request_head(basic("ana", PASSWORD), Transfer_Encoding="chunked"))
        head = multipart_head("huge.geojson")
        sock.sendall(b"%x\r\n%s\r\n" % (len(head), head))
        sent += len(head)
        answered = False
        while sent < total:
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent += len(chunk)
            readable, _, _ = select.select([sock], [], [], 0.005)
            if readable:
                answered = True
                break
        assert answered, "the server read the whole body"
        status, headers, body, closed = read_response(sock)
    assert status == 400 and b"total_upload_size_exceeded" in body
    assert headers["connection"] == "close" and closed
    # The answer came right after the limit was passed: far from the end of the body.
    assert LIMIT < sent < LIMIT + 2 * 1024 * 1024
    nothing_recorded(db)
    assert entries(settings.DATA_DIR / "uploads") == staged_before


def _open_upload(server, path: Path) -> tuple[socket.socket, bytes]:
    """An upload whose headers and first half of the body are sent; the rest is returned."""
    body = multipart_body(path)
    sock = server.connect()
    sock.sendall(request_head(basic("ana", PASSWORD), Content_Length=str(len(body)), Connection="close"))
    half = len(body) // 2
    sock.sendall(body[:half])
    return sock, body[half:]


def _wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def _count(db, model) -> int:
    db.expire_all()
    return db.scalar(sql_select(func.count()).select_from(model))


def test_parallel_uploads_over_the_limit_get_exactly_one_refusal(live, db, settings, ana, admin_auth,
                                                                 client, tmp_path):
    allowed = 3
    set_parallelism(client, admin_auth, allowed)
    server = live()
    staged_before = entries(settings.DATA_DIR / "uploads")
    paths = [fx.write_points(tmp_path, f"parallel_{i}", driver="GeoJSON") for i in range(allowed + 1)]
    # Every request is in flight at once: headers and half of each body are sent, and the server
    # has taken a slot for each it admits (the refused one is waiting to read its body).
    opened = [_open_upload(server, p) for p in paths]
    _wait_for(lambda: _count(db, UploadSlot) == allowed)
    time.sleep(0.3)  # the last request had every chance to take a slot too
    assert _count(db, UploadSlot) == allowed
    answers = []
    for sock, rest in opened:
        sock.sendall(rest)
        status, _, body, _ = read_response(sock)
        sock.close()
        answers.append((status, json.loads(body)))
    refused = [b for s, b in answers if s == 400]
    accepted = [b for s, b in answers if s == 200]
    assert len(refused) == 1 and len(accepted) == allowed
    assert refused[0]["code"] == "upload_parallelism_limit_exceeded"
    assert refused[0]["errors"] == [f"The number of active parallel uploads exceeds {allowed}. "
                                    "Wait for the pending ones to finish."]
    # The accepted ones import; the refused one left nothing behind.
    auth = basic("ana", PASSWORD)
    for body in accepted:
        assert fx.wait_execution(client, auth, body["execution_id"])["status"] == "finished"
    assert _count(db, UploadSlot) == 0
    assert _count(db, Upload) == allowed and _count(db, Dataset) == allowed
    names = {d.name for d in db.scalars(sql_select(Dataset))}
    assert len(names) == allowed and names <= {p.stem for p in paths}
    _wait_for(lambda: entries(settings.DATA_DIR / "uploads") == staged_before)


def test_simultaneous_uploads_race_for_the_last_slot(live, db, ana, admin_auth, tmp_path):
    """N+1 uploads released together by a barrier, imports slowed so none ends meanwhile (each
    step waits 3 s: on a loaded 2-core machine the last request can take seconds to arrive)."""
    allowed = 2
    server = live(EXECUTION_STEP_DELAY=3.0)
    assert httpx.post(f"http://127.0.0.1:{server.port}{PARALLEL_URL}", headers=admin_auth,
                      json={"slug": "default_max_parallel_uploads", "max_number": allowed}).status_code == 200
    paths = [fx.write_points(tmp_path, f"race_{uuid.uuid4().hex[:6]}", driver="GeoJSON")
             for _ in range(allowed + 1)]
    barrier = threading.Barrier(len(paths))
    results: list[httpx.Response] = []

    def send(path: Path) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as http:
            files = {"base_file": (path.name, path.read_bytes(), "application/octet-stream")}
            barrier.wait()
            results.append(http.post("/api/v2/uploads/upload", auth=("ana", PASSWORD), files=files))

    threads = [threading.Thread(target=send, args=(p,)) for p in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    statuses = sorted(r.status_code for r in results)
    assert statuses == [200] * allowed + [400]
    [refused] = [r for r in results if r.status_code == 400]
    assert refused.json()["code"] == "upload_parallelism_limit_exceeded"
    assert _count(db, Upload) == allowed


def test_an_upload_slot_is_released_when_the_upload_fails(client, db, ana, admin_auth):
    set_parallelism(client, admin_auth, 1)
    auth = basic("ana", PASSWORD)
    for _ in range(3):  # a refused upload (400 before recording) frees its slot every time
        response = client.post(fx.UPLOAD_URL, headers=auth, files={"base_file": ("photo.png", b"\x89PNG")})
        assert response.status_code == 400 and response.json()["code"] == "importer_exception"
    assert _count(db, UploadSlot) == 0


def test_open_uploads_count_against_the_limit(client, db, ana, admin_auth, tmp_path):
    """A recorded upload whose import has not ended holds its place; a finished one does not."""
    set_parallelism(client, admin_auth, 1)
    auth = basic("ana", PASSWORD)
    record = fx.upload_and_wait(client, auth, fx.write_points(tmp_path, "first", driver="GeoJSON"))
    assert record["status"] == "finished"
    second = fx.post_upload(client, auth, fx.write_points(tmp_path, "second", driver="GeoJSON"))
    assert second.status_code == 200
    # pretend the second import is still running: its record is open, its execution not ended
    fx.wait_execution(client, auth, second.json()["execution_id"])
    db.expire_all()
    execution = db.scalar(sql_select(ExecutionRequest).where(
        ExecutionRequest.exec_id == second.json()["execution_id"]))
    upload = db.scalar(sql_select(Upload).where(Upload.exec_id == execution.exec_id))
    upload.state, execution.status = "RUNNING", "running"
    db.commit()
    third = fx.post_upload(client, auth, fx.write_points(tmp_path, "third", driver="GeoJSON"))
    assert third.status_code == 400 and third.json()["code"] == "upload_parallelism_limit_exceeded"
    # another user is not affected
    make_user(db, "rita")
    other = fx.post_upload(client, basic("rita", PASSWORD), fx.write_points(tmp_path, "fourth",
                                                                            driver="GeoJSON"))
    assert other.status_code == 200
    fx.wait_execution(client, basic("rita", PASSWORD), other.json()["execution_id"])
