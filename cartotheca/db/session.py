"""cartotheca.db.session: engine and session factory from the settings; no model knowledge.

Pool sizes, the pool timeout and the number of request threads are chosen together (see the
README's "Database connections" section): a request thread holds at most one catalogue
connection, and only while it talks to the database, so with no more request threads than
pooled connections a request never waits for a slot. When the pool is exhausted all the same
(background threads, a stuck database) a request waits ``DATABASE_POOL_TIMEOUT`` seconds and
then answers 503, instead of queueing behind everyone else.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy.exc
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from cartotheca.db import text_guard
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.db")

# The database is unreachable, restarting, refused a connection, dropped one, or no pooled
# connection became free in time: the request may succeed when retried (503, not 500).
UNAVAILABLE = (
    sqlalchemy.exc.OperationalError,
    sqlalchemy.exc.InterfaceError,
    sqlalchemy.exc.DisconnectionError,
    sqlalchemy.exc.TimeoutError,
)
# Seconds clients are told to wait before retrying a request the database could not serve.
RETRY_AFTER_SECONDS = 5

# PostgreSQL: each server process keeps at most pool + overflow connections.
PG_POOL_SIZE = 10
PG_MAX_OVERFLOW = 20
# SQLite: connections are a file handle and a page cache (up to 16 MiB, see the pragmas) each.
# The pooled few keep their cache between requests; the overflow ones are closed when returned.
# The overflow is bounded all the same: one per request thread (THREAD_POOL_SIZE's default)
# beyond the pool, so readers do not wait for one, but a burst cannot open a connection, and a
# page cache, per waiting request (the soaks saw ~50 per process, and memory that kept growing).
SQLITE_POOL_SIZE = 8
# All the page caches of one process, together (a process-wide SQLite limit).
SQLITE_PAGE_CACHES_BYTES = 64 * 2**20
SQLITE_MAX_OVERFLOW = 24


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` means the database could not serve the request for now."""
    return isinstance(exc, UNAVAILABLE)


@dataclass(frozen=True)
class PoolSize:
    """One engine's pool: connections kept, opened beyond them (-1: no limit), seconds to wait."""

    size: int
    overflow: int
    timeout: float


# A background thread (monitoring flush, notification delivery) does one thing at a time: one
# connection is all it uses, and it may wait for it longer than a request would.
BACKGROUND_POOL_TIMEOUT = 30.0


def request_pool(settings: Settings, *, background: int = 0) -> PoolSize:
    """The requests' pool, leaving room for ``background`` one-connection engines, so that a
    process never holds more than ``DATABASE_POOL_SIZE + DATABASE_MAX_OVERFLOW`` catalogue
    connections in all. The overflow gives way first; the pool keeps at least one."""
    sqlite = settings.database_url.startswith("sqlite")
    size = _choose(settings.DATABASE_POOL_SIZE, SQLITE_POOL_SIZE if sqlite else PG_POOL_SIZE)
    overflow = _choose(settings.DATABASE_MAX_OVERFLOW, SQLITE_MAX_OVERFLOW if sqlite else PG_MAX_OVERFLOW)
    if overflow >= 0:  # -1 (no limit, if set so) has nothing to give
        taken = min(overflow, background)
        overflow -= taken
        size = max(1, size - (background - taken))
    return PoolSize(size, overflow, settings.DATABASE_POOL_TIMEOUT)


def background_pool(settings: Settings) -> PoolSize:
    """The pool of a background thread's own engine: one connection, never more."""
    return PoolSize(1, 0, max(BACKGROUND_POOL_TIMEOUT, settings.DATABASE_POOL_TIMEOUT))


def make_engine(settings: Settings, pool: PoolSize | None = None) -> Engine:
    """An engine for the catalogue database; ``pool`` defaults to the full request pool (for
    commands and scripts that run alone)."""
    url = settings.database_url
    pool = pool or request_pool(settings)
    if url.startswith("sqlite"):
        settings.ensure_data_dir()
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            pool_size=pool.size,
            max_overflow=pool.overflow,
            pool_timeout=pool.timeout,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    # JIT compilation costs 0.1-1 s per query whose estimated cost passes the threshold (the
    # permission-filtered counts do) and never pays back for catalogue queries of milliseconds.
    # pre_ping: a connection the server dropped (restart, pg_terminate_backend) is replaced on
    # checkout instead of failing the request that draws it. connect_timeout: an unreachable
    # server fails a request within about the pool timeout too (503), not after the OS gives up.
    return create_engine(url, pool_size=pool.size, max_overflow=pool.overflow,
                         pool_timeout=pool.timeout, pool_pre_ping=True,
                         connect_args={"options": "-c jit=off",
                                       "connect_timeout": max(1, round(settings.DATABASE_POOL_TIMEOUT))})


def _choose(value: int | None, default: int) -> int:
    return default if value is None else value


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    # WAL lets readers run beside one writer; several server processes share the file.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    # Writers queue for the write lock (across processes too) instead of failing with
    # "database is locked". The driver begins a transaction only before the first write, so
    # reads hold no snapshot that a later write would have to upgrade (which SQLite refuses
    # at once, without waiting, when another writer committed in between).
    cur.execute("PRAGMA busy_timeout=30000")
    # The query language's contains/startswith/endswith are case sensitive (GeoNode on
    # PostgreSQL); SQLite's LIKE is not unless told so.
    cur.execute("PRAGMA case_sensitive_like=ON")
    cur.execute("PRAGMA cache_size=-16384")
    # The caches of all connections together stay near this (a process-wide bound): past it a
    # connection reuses its own least recent pages instead of growing. Without it each pooled
    # connection's cache grew towards its 16 MiB as the soaks went on.
    cur.execute(f"PRAGMA soft_heap_limit={SQLITE_PAGE_CACHES_BYTES}")
    # No mmap: mapped pages count as the server's resident memory; plain reads go through
    # the kernel's page cache, which all connections and processes share anyway.
    cur.execute("PRAGMA mmap_size=0")
    cur.close()


def reads_outside_transactions(session: Session) -> None:
    """Let each of ``session``'s statements commit on its own (PostgreSQL: autocommit), for a
    request that only reads and then renders, serialises or streams: no transaction stays open
    ("idle in transaction") while it does, however long it waits for the CPU. Call it before the
    session's first statement, or after a commit; its connection is back to normal once returned."""
    session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})


def make_read_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Sessions whose statements each commit on their own, for routes that only read and then
    serialise: nothing stays "idle in transaction" while they do (``reads_outside_transactions``
    chosen when the session is made, so no connection is taken before the first statement).
    The same pool and the same event listeners as ``engine``."""
    return make_sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT"))


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    factory = sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)
    text_guard.install(factory)
    return factory


# -- actions bound to the end of a transaction ---------------------------------------------------
# Files written beside the database (documents, stored data, thumbnails) follow the transaction
# that names them: made files go when it rolls back, replaced ones once it commits.


def on_commit(session: Session, action: Callable[[], None], *,
              errors: tuple[type[Exception], ...] = (Exception,),
              failure: str = "post-commit cleanup failed") -> None:
    """Run ``action`` once the session's transaction commits; forget it if it rolls back.
    ``errors`` raised by the action are logged as ``failure``; the commit stands either way."""
    _bind(session, "after_commit", "after_rollback", action, errors, failure)


def on_rollback(session: Session, action: Callable[[], None], *,
                errors: tuple[type[Exception], ...] = (Exception,),
                failure: str = "undoing after a rollback failed") -> None:
    """Run ``action`` if the session's transaction rolls back; forget it once it commits.
    ``errors`` raised by the action are logged as ``failure``."""
    _bind(session, "after_rollback", "after_commit", action, errors, failure)


def _bind(session: Session, when: str, unless: str, action: Callable[[], None],
          errors: tuple[type[Exception], ...], failure: str) -> None:
    def run(_session: Session) -> None:
        if event.contains(session, unless, forget):
            event.remove(session, unless, forget)
        try:
            action()
        except errors:
            log.exception(failure)

    def forget(_session: Session) -> None:
        if event.contains(session, when, run):
            event.remove(session, when, run)

    event.listen(session, when, run, once=True)
    event.listen(session, unless, forget, once=True)
