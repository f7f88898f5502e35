"""Cartotheca as real processes: ``cartotheca serve`` and ``cartotheca worker`` (Celery) started
with the tests' settings, waited for until they answer, stopped, their output kept in a log file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from cartotheca.settings import Settings
from tests.support.ports import free_port

CLI = [sys.executable, "-m", "cartotheca.cli"]
# A safety limit: two worker processes each importing the map server take most of a minute
# on a busy two-core machine.
STARTUP_TIMEOUT = 150.0


@dataclass(frozen=True)
class LiveServer:
    url: str  # site root, ending in "/"
    log: Path
    process: subprocess.Popen | None = field(default=None, compare=False, repr=False)

    @property
    def api(self) -> str:
        return f"{self.url}api/v2/"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"


def outside_environment() -> dict[str, str]:
    """This process's environment without any ``CARTOTHECA_`` setting: a child process gets
    only the settings a test gives it."""
    return {k: v for k, v in os.environ.items() if not k.startswith("CARTOTHECA_")}


def settings_env(settings: Settings) -> dict[str, str]:
    """The explicitly chosen settings as ``CARTOTHECA_<NAME>`` variables (lists as JSON)."""
    env = {}
    for name in settings.model_fields_set:
        value = getattr(settings, name)
        if value is None:
            continue
        text = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
        env[f"CARTOTHECA_{name}"] = text
    return env


def start_server(port: int, env: dict[str, str], log: Path) -> subprocess.Popen:
    """``cartotheca serve`` on 127.0.0.1:``port``, its output appended to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen([*CLI, "serve", "--host", "127.0.0.1", "--port", str(port)],
                                env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)


def wait_until_up(proc: subprocess.Popen, server: LiveServer) -> None:
    """Until the server's API root answers 200; an exit or the time limit fails with its log."""
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


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, so the server shuts down as under an operator; SIGKILL if it does not."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def serving(make_settings: Callable[..., Settings], log: Path, *, own_site_url: bool = False,
            **overrides) -> Iterator[LiveServer]:
    """``cartotheca serve`` on a free port with the test settings plus ``overrides``.

    The same settings as the in-process app (database, data directory, datastore, admin,
    hashing cost ...), so datasets published by fixtures in this process are served by the live
    server too; but no SITEURL unless ``overrides`` has one or ``own_site_url`` asks for the
    server's own address, as an operator runs ``cartotheca serve --port P``: every URL the
    clients follow is then built from their requests.
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    if own_site_url:
        overrides["SITEURL"] = url
    env = outside_environment()
    env.update(settings_env(make_settings(**overrides)), CARTOTHECA_LOG_LEVEL="warning")
    if "SITEURL" not in overrides:
        del env["CARTOTHECA_SITEURL"]
    log.write_bytes(b"")
    proc = start_server(port, env, log)
    server = LiveServer(url=url, log=log, process=proc)
    try:
        wait_until_up(proc, server)
        yield server
    finally:
        stop(proc)


class Process:
    """A cartotheca subprocess (server or worker) that can be killed and restarted; every start
    appends to the same log."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path):
        self.args, self.env, self.log_path = args, env, log_path
        self.proc: subprocess.Popen | None = None

    def start(self, **extra_env: str) -> Process:
        env = {**os.environ, **self.env, **extra_env}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([*CLI, *self.args], env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def kill(self) -> None:
        """SIGKILL the whole process group: no cleanup code of ours runs."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def process_env(database_url: str, data_dir: Path) -> dict[str, str]:
    """The settings every spawned process shares: the test database and data directory, and a
    cheap password hash."""
    return {"CARTOTHECA_DATABASE_URL": database_url, "CARTOTHECA_DATA_DIR": str(data_dir),
            "CARTOTHECA_SECRET_KEY": "test-secret", "CARTOTHECA_LOG_LEVEL": "warning",
            "CARTOTHECA_PASSWORD_HASH_TIME_COST": "1", "CARTOTHECA_PASSWORD_HASH_MEMORY_KIB": "1024",
            "CARTOTHECA_PASSWORD_HASH_PARALLELISM": "1"}


def wait_http(url: str, timeout: float = 30.0) -> None:
    """Until ``url`` answers below 500."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout}s")
