"""cartotheca.catalogue.index.feed: polling the change table, and when the watermark may advance.

With concurrent writers a lower ``seq`` can commit after a higher one (T2 takes xid 100, T1 xid
101, T1 appends seq 10, T2 seq 11, T2 commits first: a poll sees 11 and not 10). Advancing past
every entry whose xid is below the poll's xmin would skip seq 10 for ever. The rule used here:
each poll remembers its max(seq) with its snapshot's xmax; the watermark moves to that max only
once a later poll's snapshot has xmin >= that xmax (every transaction that could still append
a lower seq has then ended). Until then every entry above the watermark is returned, and so
re-applied, at each poll; re-applying is idempotent.

On SQLite there is one writer at a time and commits follow ``seq``; the snapshot numbers are
0 there, so the same rule advances at the next poll.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection, func, literal, select

from cartotheca.db.models import resource_change_trims, resource_changes

changes = resource_changes.c


@dataclass(frozen=True)
class Poll:
    """One poll's answer: the entries above the watermark (at most ``limit`` + 1 of them), the
    snapshot they were read in, and whether the feed was trimmed past the watermark (changes
    may be lost: build again)."""

    entries: list[tuple[int, int]]  # (seq, resource_id)
    xmin: int
    xmax: int
    trimmed_past: bool

    @property
    def resource_ids(self) -> list[int]:
        return sorted({rid for _, rid in self.entries})

    @property
    def max_seq(self) -> int | None:
        return max((seq for seq, _ in self.entries), default=None)


@dataclass
class Feed:
    watermark: int = 0
    # (max seq seen by an applied poll, that poll's snapshot xmax), oldest first
    remembered: list[tuple[int, int]] = field(default_factory=list)

    def poll(self, conn: Connection, limit: int) -> Poll:
        """One statement: the snapshot, the trim mark and the entries above the watermark.

        The caller applies every entry (all of them are re-applied until the watermark passes
        them), then calls ``advance`` with this poll; a poll it does not apply (too many
        entries) must not move the watermark.
        """
        xmin, xmax = snapshot_bounds(conn)
        head = select(xmin.label("xmin"), xmax.label("xmax"),
                      select(resource_change_trims.c.upto).where(resource_change_trims.c.id == 1)
                      .scalar_subquery().label("trimmed")).subquery("head")
        stmt = select(head.c.xmin, head.c.xmax, head.c.trimmed, changes.seq, changes.resource_id) \
            .select_from(head.outerjoin(resource_changes, changes.seq > self.watermark)) \
            .order_by(changes.seq).limit(limit + 1)
        rows = conn.execute(stmt).all()
        first = rows[0]
        entries = [(int(r.seq), int(r.resource_id)) for r in rows if r.seq is not None]
        return Poll(entries, int(first.xmin), int(first.xmax), (first.trimmed or 0) > self.watermark)

    def advance(self, poll: Poll) -> None:
        """After ``poll`` was applied: move the watermark by the rule, then remember this
        poll's max(seq) with its xmax.

        Only polls before this one count: this poll's own entries may include seqs above
        uncommitted lower ones, which a later snapshot must first show finished.
        """
        xmin, xmax, seen = poll.xmin, poll.xmax, poll.max_seq
        ready = [seq for seq, at in self.remembered if at <= xmin]
        if ready:
            self.watermark = max(self.watermark, *ready)
            self.remembered = [(seq, at) for seq, at in self.remembered
                               if at > xmin and seq > self.watermark]
        if seen is not None and seen > self.watermark:
            self.remembered.append((seen, xmax))

    def start_at(self, watermark: int) -> None:
        self.watermark, self.remembered = watermark, []


def snapshot_bounds(conn: Connection):
    """(xmin, xmax) of the statement's snapshot as SQL expressions; constant 0 on SQLite."""
    if conn.dialect.name == "postgresql":
        snap = func.txid_current_snapshot()
        return func.txid_snapshot_xmin(snap), func.txid_snapshot_xmax(snap)
    return literal(0), literal(0)


def settled_head(conn: Connection) -> tuple[int, int, int]:
    """(head, xmin, xmax) now: a build starts from the head once no older writer is running.

    The head is the highest seq, or the trim mark when a trim emptied the table (seqs are never
    reused, so nothing at or below it can appear any more).
    """
    xmin, xmax = snapshot_bounds(conn)
    trimmed = select(resource_change_trims.c.upto).where(resource_change_trims.c.id == 1) \
        .scalar_subquery()
    row = conn.execute(select(func.coalesce(func.max(changes.seq), 0), trimmed, xmin, xmax)).one()
    return max(int(row[0]), int(row[1] or 0)), int(row[2]), int(row[3])
