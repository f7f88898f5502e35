"""Fixtures that tests of several folders use, registered by ``tests/conftest.py``: brokers,
an SMTP server, restartable cartotheca processes and a live ``cartotheca serve``."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import ADMIN_PASSWORD
from tests.support import services
from tests.support.processes import LiveServer, Process, process_env, serving
from tests.support.s3 import S3Server, s3_server
from tests.support.services import Mailbox, empty_redis_database, smtp_receiver


@pytest.fixture(scope="session")
def worker_id_number() -> int:
    # One Redis database per pytest-xdist worker (1..15), so parallel runs do not share queues.
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return 1 + int("".join(c for c in name if c.isdigit()) or 0) % 15


@pytest.fixture
def broker_url(worker_id_number) -> Iterator[str]:
    with empty_redis_database(worker_id_number) as (url, _client):
        yield url


@pytest.fixture
def rabbitmq_url() -> str:
    # Messages left by an earlier run name executions of another database: the engine's claim
    # finds no such row and drops them, so the shared "celery" queue needs no purge.
    return services.rabbitmq_url()


@pytest.fixture
def smtp_server() -> Iterator[tuple[Mailbox, int]]:
    with smtp_receiver() as (mailbox, port):
        yield mailbox, port


@pytest.fixture
def spawn(tmp_path, database_url, data_dir) -> Iterator[Callable[..., Process]]:
    """``spawn(args, **env)``: a cartotheca process over the test database, stopped after the test."""
    started: list[Process] = []

    def make(args: list[str], **env: str) -> Process:
        process = Process(args, {**process_env(database_url, data_dir), **env},
                          tmp_path / f"{args[0]}-{len(started)}.log")
        started.append(process)
        return process

    yield make
    for process in started:
        process.stop()


@pytest.fixture(scope="module")
def live_server(base_app, make_settings, tmp_path_factory) -> Iterator[LiveServer]:
    """``cartotheca serve`` on a free port; depends on ``base_app`` so the schema exists first."""
    with serving(make_settings, tmp_path_factory.mktemp("live-log") / "server.log") as server:
        yield server


@pytest.fixture(scope="session")
def admin_basic_token() -> str:
    return base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()


@pytest.fixture(scope="session")
def s3(tmp_path_factory) -> Iterator[S3Server]:
    """One S3-compatible server (moto's, as a process) for the session; tests make buckets."""
    with s3_server(tmp_path_factory.mktemp("s3-log") / "moto.log") as server:
        yield server
