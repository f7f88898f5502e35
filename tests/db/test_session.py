"""The catalogue connection budget of one process: the requests' pool and the background engines."""

from __future__ import annotations

import subprocess
import sys

from cartotheca.db.session import (
    SQLITE_MAX_OVERFLOW,
    SQLITE_PAGE_CACHES_BYTES,
    SQLITE_POOL_SIZE,
    background_pool,
    make_engine,
    request_pool,
)
from cartotheca.settings import Settings


def test_background_engines_come_out_of_the_request_overflow(make_settings, backend):
    settings = make_settings(DATABASE_POOL_SIZE=10, DATABASE_MAX_OVERFLOW=20)
    requests = request_pool(settings, background=2)
    background = background_pool(settings)
    assert (requests.size, requests.overflow) == (10, 18)
    assert (background.size, background.overflow) == (1, 0)
    assert requests.size + requests.overflow + 2 * background.size == 30


def test_a_small_budget_takes_from_the_pool_once_the_overflow_is_gone(make_settings):
    settings = make_settings(DATABASE_POOL_SIZE=3, DATABASE_MAX_OVERFLOW=1)
    requests = request_pool(settings, background=2)
    assert (requests.size, requests.overflow) == (2, 0)
    # The requests keep one connection, whatever the background takes.
    assert request_pool(make_settings(DATABASE_POOL_SIZE=1, DATABASE_MAX_OVERFLOW=0),
                        background=2).size == 1


def test_an_unbounded_overflow_has_nothing_to_give(make_settings, backend):
    settings = make_settings(DATABASE_MAX_OVERFLOW=-1)
    assert request_pool(settings, background=2).overflow == -1


def test_engines_are_built_with_their_pools(make_settings):
    settings = make_settings(DATABASE_POOL_SIZE=4, DATABASE_MAX_OVERFLOW=3, DATABASE_POOL_TIMEOUT=2)
    requests = make_engine(settings, request_pool(settings, background=2))
    background = make_engine(settings, background_pool(settings))
    try:
        assert (requests.pool.size(), requests.pool._max_overflow) == (4, 1)
        assert requests.pool._timeout == 2
        assert (background.pool.size(), background.pool._max_overflow) == (1, 0)
        assert background.pool._timeout >= 30
    finally:
        requests.dispose()
        background.dispose()


def test_sqlite_connections_are_bounded_by_default(tmp_path):
    settings = Settings(DATA_DIR=tmp_path, SECRET_KEY="test")
    requests = request_pool(settings, background=2)
    # each connection keeps a page cache: a burst must not open one per waiting request
    assert requests.overflow >= 0
    assert requests.size + requests.overflow + 2 == SQLITE_POOL_SIZE + SQLITE_MAX_OVERFLOW
    assert SQLITE_POOL_SIZE + SQLITE_MAX_OVERFLOW >= settings.THREAD_POOL_SIZE + settings.EXECUTION_WORKERS


SQLITE_CACHES_PROBE = """
import sys
import psutil
from sqlalchemy import text
from cartotheca.db.session import make_engine
from cartotheca.settings import Settings

engine = make_engine(Settings(DATA_DIR=sys.argv[1], SECRET_KEY="test"))
with engine.begin() as conn:
    conn.execute(text("CREATE TABLE filler (id INTEGER PRIMARY KEY, v BLOB)"))
    conn.execute(text("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000) "
                      "INSERT INTO filler (v) SELECT randomblob(800) FROM n"))
before = psutil.Process().memory_info().rss
held = [engine.connect() for _ in range(24)]
for conn in held:  # each connection reads the whole 24 MB table into its own page cache
    conn.execute(text("SELECT sum(length(v)) FROM filler")).scalar()
print((psutil.Process().memory_info().rss - before) // 2**20)
"""


def test_sqlite_page_caches_are_bounded_per_process(tmp_path):
    # 24 connections that each read 24 MB would keep 16 MiB of cache apiece (384 MiB)
    # without the process-wide limit; with it they share about SQLITE_PAGE_CACHES_BYTES.
    grown = subprocess.run([sys.executable, "-c", SQLITE_CACHES_PROBE, str(tmp_path)],
                           capture_output=True, text=True, check=True)
    assert int(grown.stdout) < SQLITE_PAGE_CACHES_BYTES // 2**20 + 64, grown.stdout
