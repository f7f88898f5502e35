"""A live Cartotheca server (a real ``cartotheca serve`` process) for third-party client tests.

The server runs over the same test database as the in-process ``base_app``; tests arrange data
with the factories through ``db`` and the server sees it, because both talk to one database.
One server per backend and session keeps startup cost to a couple of seconds per backend.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.conftest import ADMIN_PASSWORD

# A safety limit: two worker processes each importing the map server take most of a minute
# on a busy two-core machine.
STARTUP_TIMEOUT = 150.0


@dataclass(frozen=True)
class LiveServer:
    url: str  # site root, ending in "/"
    log: Path

    @property
    def api(self) -> str:
        return f"{self.url}api/v2/"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_up(proc: subprocess.Popen, server: LiveServer) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    last_error = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{server.log_tail()}")
        try:
            response = httpx.get(server.api, timeout=2.0)
            if response.status_code == 200:
                return
            last_error = f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            last_error = repr(exc)
        time.sleep(0.2)
    raise RuntimeError(f"server not up after {STARTUP_TIMEOUT}s ({last_error}):\n{server.log_tail()}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def _settings_env(settings) -> dict[str, str]:
    """The explicitly chosen settings as ``CARTOTHECA_<NAME>`` variables (lists as JSON)."""
    env = {}
    for name in settings.model_fields_set:
        value = getattr(settings, name)
        if value is None:
            continue
        text = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
        env[f"CARTOTHECA_{name}"] = text
    return env


@contextmanager
def serving(make_settings, log: Path, **overrides) -> Iterator[LiveServer]:
    """``cartotheca serve`` on a free port with the test settings plus ``overrides``."""
    port = _free_port()
    server = LiveServer(url=f"http://127.0.0.1:{port}/", log=log)
    # The same settings as the in-process app (database, data directory, datastore, admin,
    # hashing cost ...), so datasets published by fixtures in this process are served by the
    # live server too; but no SITEURL unless ``overrides`` has one, as an operator runs
    # ``cartotheca serve --port P``: every URL the clients follow is built from their requests.
    settings = make_settings(**overrides)
    assert settings.ADMIN_PASSWORD == ADMIN_PASSWORD
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARTOTHECA_")}
    env.update(_settings_env(settings), CARTOTHECA_LOG_LEVEL="warning")
    if "SITEURL" not in overrides:
        del env["CARTOTHECA_SITEURL"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cartotheca.cli", "serve", "--host", "127.0.0.1",
             "--port", str(port)],
            env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    try:
        _wait_until_up(proc, server)
        yield server
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def live_server(base_app, make_settings, database_url, tmp_path_factory) -> Iterator[LiveServer]:
    """``cartotheca serve`` on a free port; depends on ``base_app`` so the schema exists first."""
    with serving(make_settings, tmp_path_factory.mktemp("live-log") / "server.log") as server:
        yield server


@pytest.fixture(scope="session")
def admin_basic_token() -> str:
    return base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
