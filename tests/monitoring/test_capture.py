"""The capture middleware: what one request leaves in the buffer, and what it must not disturb."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route

from cartotheca.monitoring.capture import CaptureMiddleware, RequestBuffer


@dataclass
class FakeUser:  # the shape of the principal the API's dependency leaves in the request state
    id: int
    username: str


@dataclass
class Who:
    user: FakeUser | None


async def hello(request: Request):
    request.state.principal = Who(FakeUser(7, "alice"))
    return PlainTextResponse("hello", headers={"X-Extra": "1"})


async def stream(request: Request):
    async def chunks():
        for _ in range(4):
            yield b"x" * 1000
    return StreamingResponse(chunks(), media_type="application/octet-stream")


async def fail(request: Request):
    raise RuntimeError("it broke")


async def ows(request: Request):
    body = await request.body()
    return PlainTextResponse(f"{len(body)}")


def client_for(buffer: RequestBuffer, skip=("/monitoring/",)) -> TestClient:
    app = Starlette(routes=[Route("/hello", hello), Route("/stream", stream), Route("/fail", fail),
                            Route("/ows", ows, methods=["POST"])])
    app.add_middleware(CaptureMiddleware, buffer=buffer, skip_paths=list(skip))
    return TestClient(app, raise_server_exceptions=False)


def test_one_record_per_request_with_response_details():
    buffer = RequestBuffer(100)
    client = client_for(buffer)
    assert client.get("/hello?a=1", headers={"User-Agent": "probe/1"}).text == "hello"
    assert client.get("/stream").content == b"x" * 4000
    (first, second) = buffer.drain()
    assert (first.method, first.path, first.query) == ("GET", "/hello", b"a=1")
    assert (first.status, first.size) == (200, 5)
    assert first.user == (7, "alice") and first.error is None
    assert (b"user-agent", b"probe/1") in first.headers
    assert (b"x-extra", b"1") in first.response_headers
    assert 0 <= first.duration < 10 and first.started > 1.7e9
    assert (second.size, second.user) == (4000, None)
    assert len(buffer) == 0


def test_server_errors_are_recorded_and_still_raised():
    buffer = RequestBuffer(100)
    response = client_for(buffer).get("/fail")
    assert response.status_code == 500
    (record,) = buffer.drain()
    assert record.status == 500
    name, message, trace = record.error
    assert (name, message) == ("RuntimeError", "it broke")
    assert trace.startswith("Traceback") and "in fail" in trace


def test_ows_post_bodies_are_sniffed_without_being_consumed():
    buffer = RequestBuffer(100)
    body = b'<GetFeature service="WFS">' + b" " * 10000 + b"</GetFeature>"
    assert client_for(buffer).post("/ows", content=body).text == str(len(body))
    (record,) = buffer.drain()
    assert record.body_prefix.startswith(b'<GetFeature service="WFS">') and len(record.body_prefix) <= 4096


def test_skipped_paths_and_the_bounded_buffer():
    buffer = RequestBuffer(2)
    client = client_for(buffer, skip=("/monitoring/", "^/hel+o$"))
    client.get("/monitoring/api/hosts/")
    client.get("/hello")
    assert len(buffer) == 0
    for _ in range(3):
        client.get("/stream")
    assert len(buffer.drain()) == 2  # the oldest went


def test_the_real_app_does_not_capture_its_monitoring_api(monitored, admin_auth):  # noqa: F811
    app, client = monitored
    client.get("/monitoring/api/hosts/", headers=admin_auth)
    assert len(app.state.monitoring.buffer) == 0
    client.get("/api/v2/resources", headers=admin_auth)
    (record,) = app.state.monitoring.buffer.drain()
    assert record.user is not None and record.user[1] == "admin"


def test_monitoring_can_be_switched_off(make_app):
    app = make_app(MONITORING_ENABLED=False)
    assert app.state.monitoring is None
    assert not any(m.cls is CaptureMiddleware for m in app.user_middleware)
