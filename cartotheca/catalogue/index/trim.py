"""cartotheca.catalogue.index.trim: keeping the change table bounded.

Entries older than the retention are deleted by one process at a time (PostgreSQL: a
transaction-scoped advisory lock; SQLite: its single write lock), and the highest deleted
``seq`` is recorded: an index whose watermark is below it may have missed changes and is built
again instead of trusting the feed.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Engine, func, select, text, update

from cartotheca.db.base import utcnow
from cartotheca.db.models import resource_change_trims, resource_changes

LOCK_KEY = 0x63617274  # advisory lock id of the trim ("cart")


def trim(engine: Engine, retention_seconds: float) -> int:
    """Delete entries older than the retention; the number deleted."""
    cutoff = utcnow() - dt.timedelta(seconds=retention_seconds)
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql" and not conn.scalar(
                text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": LOCK_KEY}):
            return 0
        upto = conn.scalar(select(func.max(resource_changes.c.seq))
                           .where(resource_changes.c.created < cutoff))
        if upto is None:
            return 0
        conn.execute(update(resource_change_trims).where(resource_change_trims.c.id == 1)
                     .values(upto=func.max(resource_change_trims.c.upto, upto)
                             if conn.dialect.name == "sqlite"
                             else func.greatest(resource_change_trims.c.upto, upto)))
        return conn.execute(resource_changes.delete().where(resource_changes.c.seq <= upto)).rowcount
