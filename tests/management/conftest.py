"""A Celery worker process shared by the module's tests (starting one costs seconds)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from cartotheca.tasks.backends.celery import make_celery
from tests.support.processes import Process
from tests.support.services import empty_redis_database


def redis_database(request, use: str) -> int:
    """A Redis database the other Celery tests (``1 + worker number``) leave alone, so runs that
    share one Redis (another engineer's suite, CI) do not take each other's tasks: 15 down to
    12 for the shared worker, 11 down to 8 for a test's own."""
    index = request.getfixturevalue("worker_id_number") - 1
    return (15 if use == "shared" else 11) - index % 4


@pytest.fixture(scope="module")
def celery_broker(request, make_settings, database_url, data_dir, tmp_path_factory) -> Iterator[str]:
    """A real ``cartotheca worker`` on Redis over the test database and data directory; yields
    the broker URL for the app under test."""
    with empty_redis_database(redis_database(request, "shared")) as (url, _client):
        settings = make_settings()
        env = {"CARTOTHECA_DATABASE_URL": database_url, "CARTOTHECA_DATA_DIR": str(data_dir),
               "CARTOTHECA_SECRET_KEY": "test-secret", "CARTOTHECA_LOG_LEVEL": "warning",
               "CARTOTHECA_TASK_BACKEND": "celery", "CARTOTHECA_CELERY_BROKER_URL": url,
               "CARTOTHECA_STORAGE_BACKEND": settings.STORAGE_BACKEND,
               "CARTOTHECA_SITEURL": settings.SITEURL,
               "CARTOTHECA_PASSWORD_HASH_TIME_COST": "1", "CARTOTHECA_PASSWORD_HASH_MEMORY_KIB": "1024",
               "CARTOTHECA_PASSWORD_HASH_PARALLELISM": "1"}
        if settings.DATASTORE_URL:
            env["CARTOTHECA_DATASTORE_URL"] = settings.DATASTORE_URL
        log = tmp_path_factory.mktemp("celery-worker") / "worker.log"
        worker = Process(["worker", "--concurrency", "2", "--loglevel", "warning"], env, log).start()
        try:
            wait_until_ready(url, worker)
            yield url
        finally:
            worker.stop()


def wait_until_ready(url: str, worker: Process, timeout: float = 180.0) -> None:
    """Until the worker answers a ping: a loaded machine takes a while to start one."""
    control = make_celery(url).control
    deadline = time.monotonic() + timeout
    while not control.ping(timeout=1.0):
        if worker.proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the Celery worker did not start:\n{worker.log()[-2000:]}")
