"""cartotheca.catalogue.index.build: a full build of the index from the database, streamed.

The build starts from the change feed's head once every transaction that could still append
an entry at or below it has ended (the watermark rule of ``feed``), then reads all facts in one
consistent snapshot: every entry up to that head is in the build, every later one is re-applied
by the polls, which is harmless (idempotent).
"""

from __future__ import annotations

import time

from sqlalchemy import Connection, Engine

from cartotheca.catalogue.index.bitmaps import Bitmaps
from cartotheca.catalogue.index.facts import stream_facts
from cartotheca.catalogue.index.feed import settled_head

SETTLE_SECONDS = 60.0


class NotSettled(RuntimeError):
    """A transaction older than the feed's head stayed open too long; try again later."""


def build(engine: Engine) -> tuple[Bitmaps, int]:
    """The bitmaps of the whole catalogue and the watermark they are exact at."""
    with engine.connect() as conn:
        head = _settled(conn)
    bitmaps = Bitmaps()
    with engine.connect() as conn:
        # One read snapshot for every table (PostgreSQL: REPEATABLE READ; SQLite: a read
        # transaction, which WAL pins at its first read).
        if conn.dialect.name == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        else:
            conn.exec_driver_sql("BEGIN")
        try:
            stream_facts(conn, bitmaps)
        finally:
            conn.rollback()
    bitmaps.drop_empty()
    return bitmaps, head


def _settled(conn: Connection) -> int:
    head, _xmin, xmax = settled_head(conn)
    conn.rollback()
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        _, xmin, _ = settled_head(conn)
        conn.rollback()
        if xmin >= xmax:
            return head
        if time.monotonic() > deadline:
            raise NotSettled("a transaction older than the change feed's head is still open")
        time.sleep(0.01)
