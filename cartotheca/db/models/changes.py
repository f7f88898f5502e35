"""cartotheca.db.models.changes: the resource change feed read by the in-process catalogue index.

Triggers (migration 0013) append one row per changed resource in the writer's own transaction;
the tables are kept out of ``Base.metadata`` because no code writes them through the ORM and
deleting their rows (as a test's clean-up deletes every table's) would lose changes a running
index has not read yet.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, DateTime, Integer, LargeBinary, MetaData, Table, func

CHANGES_METADATA = MetaData()

# ``seq`` only grows (PostgreSQL: an identity; SQLite: AUTOINCREMENT, never reused after a
# trim). ``xid`` is the writer's transaction id (PostgreSQL ``txid_current()``), NULL on SQLite,
# which has one writer at a time.
resource_changes = Table(
    "resource_changes",
    CHANGES_METADATA,
    Column("seq", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True),
    Column("resource_id", Integer, nullable=False),
    Column("xid", BigInteger),
    Column("created", DateTime, nullable=False, server_default=func.current_timestamp()),
    sqlite_autoincrement=True,
)

# One row: the highest ``seq`` a trim has deleted. An index whose watermark is below it may
# have missed changes and must be built again.
resource_change_trims = Table(
    "resource_change_trims",
    CHANGES_METADATA,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("upto", BigInteger, nullable=False),
)

# One row: the last snapshot of an index (serialized bitmaps) and the watermark it is exact at;
# ``written`` doubles as the lease that lets one process write it per interval.
catalogue_index_snapshots = Table(
    "catalogue_index_snapshots",
    CHANGES_METADATA,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("watermark", BigInteger, nullable=False),
    Column("written", DateTime, nullable=False),
    Column("data", LargeBinary),
)
