"""Fixtures for the execution engine: a real Redis broker and real worker/server processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379


def redis_available() -> bool:
    try:
        with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def empty_redis_database(number: int) -> Iterator[tuple[str, Any]]:
    """Redis database ``number`` as ``(url, client)``, emptied before and after use. Without
    Redis the test is skipped, or fails in CI."""
    if not redis_available():
        if os.environ.get("CI"):
            pytest.fail("Redis is not reachable at 127.0.0.1:6379 but CI requires it")
        pytest.skip("Redis not reachable")
    import redis

    url = f"redis://{REDIS_HOST}:{REDIS_PORT}/{number}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url, client
    finally:
        client.flushdb()
        client.close()


@pytest.fixture
def broker_url(worker_id_number) -> Iterator[str]:
    with empty_redis_database(worker_id_number) as (url, _client):
        yield url


@pytest.fixture
def rabbitmq_url(worker_id_number) -> Iterator[str]:
    """RabbitMQ at 127.0.0.1:5672 (guest/guest)."""
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=1).close()
    except OSError:
        if os.environ.get("CI"):
            pytest.fail("RabbitMQ is not reachable at 127.0.0.1:5672 but CI requires it")
        pytest.skip("RabbitMQ not reachable")
    # Messages left by an earlier run name executions of another database: the engine's claim
    # finds no such row and drops them, so the shared "celery" queue needs no purge.
    yield "amqp://guest:guest@127.0.0.1:5672//"


@pytest.fixture(scope="session")
def worker_id_number() -> int:
    # One Redis database per pytest-xdist worker (1..15), so parallel runs do not share queues.
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return 1 + int("".join(c for c in name if c.isdigit()) or 0) % 15


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Process:
    """A cartotheca subprocess (server or worker) that can be killed and restarted."""

    def __init__(self, args: list[str], env: dict[str, str], log_path):
        self.args, self.env, self.log_path = args, env, log_path
        self.proc: subprocess.Popen | None = None

    def start(self, **extra_env: str) -> Process:
        env = {**os.environ, **self.env, **extra_env}
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "cartotheca.cli", *self.args],
                                     env=env, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
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


@pytest.fixture
def spawn(tmp_path, database_url, data_dir) -> Iterator[Callable[..., Process]]:
    started: list[Process] = []

    def make(args: list[str], **env: str) -> Process:
        base = {"CARTOTHECA_DATABASE_URL": database_url, "CARTOTHECA_DATA_DIR": str(data_dir),
                "CARTOTHECA_SECRET_KEY": "test-secret", "CARTOTHECA_LOG_LEVEL": "warning",
                "CARTOTHECA_PASSWORD_HASH_TIME_COST": "1", "CARTOTHECA_PASSWORD_HASH_MEMORY_KIB": "1024",
                "CARTOTHECA_PASSWORD_HASH_PARALLELISM": "1"}
        process = Process(args, {**base, **env}, tmp_path / f"{args[0]}-{len(started)}.log")
        started.append(process)
        return process

    yield make
    for process in started:
        process.stop()


def wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout}s")
