"""cartotheca.db.session: engine and session factory from the settings; no model knowledge."""

from __future__ import annotations

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session, sessionmaker

from cartotheca.settings import Settings


def make_engine(settings: Settings) -> Engine:
    url = settings.database_url
    if url.startswith("sqlite"):
        settings.ensure_data_dir()
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            # Each SQLite connection keeps its own page cache: few connections keep memory small.
            pool_size=8,
            max_overflow=8,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    # JIT compilation costs 0.1-1 s per query whose estimated cost passes the threshold (the
    # permission-filtered counts do) and never pays back for catalogue queries of milliseconds.
    return create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True,
                         connect_args={"options": "-c jit=off"})


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    # WAL lets readers run beside one writer; several server processes share the file.
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    # The query language's contains/startswith/endswith are case sensitive (GeoNode on
    # PostgreSQL); SQLite's LIKE is not unless told so.
    cur.execute("PRAGMA case_sensitive_like=ON")
    cur.execute("PRAGMA cache_size=-16384")
    # No mmap: mapped pages count as the server's resident memory; plain reads go through
    # the kernel's page cache, which all connections and processes share anyway.
    cur.execute("PRAGMA mmap_size=0")
    cur.close()


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)
