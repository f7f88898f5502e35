"""An unexpected error answers 500 and tells the client the connection ends with it.

uvicorn closes the connection after an exception, even once the 500 has been sent; without
``Connection: close`` a keep-alive client sent its next request into the closed connection and
got a connection reset. Served by a real uvicorn, read by a real keep-alive client.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from fastapi import FastAPI

from cartotheca.api.errors import add_exception_handlers
from tests.support.ports import free_port


def _app() -> FastAPI:
    app = FastAPI()
    add_exception_handlers(app)

    @app.get("/fail")
    def fail() -> dict:
        raise RuntimeError("it broke")

    @app.get("/fine")
    def fine() -> dict:
        return {"ok": True}

    return app


@pytest.fixture
def served() -> Iterator[int]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(_app(), host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield port
    server.should_exit = True
    thread.join(10)


def test_a_500_closes_the_connection_and_says_so(served):
    conn = http.client.HTTPConnection("127.0.0.1", served, timeout=10)
    conn.request("GET", "/fail")
    failed = conn.getresponse()
    failed.read()
    conn.request("GET", "/fine")  # http.client opens a new connection only if told to
    fine = conn.getresponse()
    assert failed.status == 500
    assert failed.getheader("connection") == "close"
    assert (fine.status, fine.read()) == (200, b'{"ok":true}')
    conn.close()
