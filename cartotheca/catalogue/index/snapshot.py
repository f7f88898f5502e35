"""cartotheca.catalogue.index.snapshot: the index serialized into the database, for fast starts.

One process per interval writes its bitmaps with its watermark (the row's ``written`` time is
the lease: a conditional UPDATE that only one writer wins); a starting process loads them and
the polls replay the change table above that watermark. The bitmaps may already hold some
changes above it (applied, not yet passed by the watermark); replaying them is idempotent.

Format: a JSON header (``[[family, key, length], ...]`` in order) and then the roaring
serializations back to back; no pickle, so a database row never runs code.
"""

from __future__ import annotations

import datetime as dt
import json

from pyroaring import BitMap
from sqlalchemy import Engine, select, update

from cartotheca.catalogue.index.bitmaps import Bitmaps
from cartotheca.db.base import utcnow
from cartotheca.db.models import catalogue_index_snapshots as snapshots

FORMAT = 1


def dumps(b: Bitmaps) -> bytes:
    parts: list[tuple[str, object, bytes]] = [("", "all", b.all.serialize())]
    parts += [("state", name, bitmap.serialize()) for name, bitmap in b.state.items()]
    for family, members in b.by.items():
        parts += [(family, key, bitmap.serialize()) for key, bitmap in members.items()]
    header = json.dumps({"format": FORMAT, "parts": [[f, k, len(data)] for f, k, data in parts]})
    encoded = header.encode()
    return len(encoded).to_bytes(8, "big") + encoded + b"".join(data for _, _, data in parts)


def loads(blob: bytes) -> Bitmaps:
    size = int.from_bytes(blob[:8], "big")
    header = json.loads(blob[8:8 + size])
    if header.get("format") != FORMAT:
        raise ValueError("unknown catalogue index snapshot format")
    b = Bitmaps()
    offset = 8 + size
    for family, key, length in header["parts"]:
        bitmap = BitMap.deserialize(blob[offset:offset + length])
        offset += length
        if family == "":
            b.all = bitmap
        elif family == "state":
            b.state[key] = bitmap
        else:
            b.by[family][key] = bitmap
    return b


def write(engine: Engine, data: bytes, watermark: int, interval_seconds: float) -> bool:
    """Store a snapshot unless another process wrote one within the interval; whether stored."""
    now = utcnow()
    with engine.begin() as conn:
        won = conn.execute(
            update(snapshots).where(snapshots.c.id == 1,
                                    snapshots.c.written < now - dt.timedelta(seconds=interval_seconds))
            .values(watermark=watermark, written=now, data=data))
        return won.rowcount == 1


def load(engine: Engine) -> tuple[Bitmaps, int] | None:
    """The stored snapshot and its watermark, or None when there is none."""
    with engine.connect() as conn:
        row = conn.execute(select(snapshots.c.watermark, snapshots.c.data)
                           .where(snapshots.c.id == 1)).one_or_none()
    if row is None or row.data is None:
        return None
    return loads(row.data), int(row.watermark)
