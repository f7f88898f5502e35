"""The watermark rule of the change feed, step by step, and the trim that bounds the feed."""

from __future__ import annotations

from sqlalchemy import func, select

from cartotheca.catalogue.index import CatalogueIndex, IndexedCounts
from cartotheca.catalogue.index.feed import Feed, Poll
from cartotheca.catalogue.index.trim import trim
from cartotheca.catalogue.query.resource_list import RESOURCE_FIELDS
from cartotheca.db.models import resource_changes
from tests.factories import make_resource, make_user
from tests.support.index_compare import context, superuser_of


def test_watermark_waits_for_a_later_snapshot_past_the_remembered_xmax():
    feed = Feed()
    # Poll 1 sees seq 11 (T2 committed) while T1 (xid 101, seq 10) still runs: xmin 101, xmax 102.
    feed.advance(Poll([(11, 2)], xmin=101, xmax=102, trimmed_past=False))
    assert feed.watermark == 0 and feed.remembered == [(11, 102)]
    # Poll 2: T1 still running (xmin 101 < 102): the watermark stays, 10 and 11 are re-applied.
    feed.advance(Poll([(11, 2)], xmin=101, xmax=103, trimmed_past=False))
    assert feed.watermark == 0
    # Poll 3: every transaction older than xmax 102 has ended: up to 11 is settled; this poll's
    # own entries (10 committed now) are remembered with its xmax.
    feed.advance(Poll([(10, 1), (11, 2)], xmin=102, xmax=104, trimmed_past=False))
    assert feed.watermark == 11 and feed.remembered == []


def test_a_trim_past_the_watermark_makes_the_index_rebuild(app, db, settings):
    owner = make_user(db, "ana")
    make_resource(db, settings, owner, "one")
    index = CatalogueIndex(app.state.cartotheca.engine, settings)
    assert index.rebuild()
    counts = IndexedCounts(index)
    admin = superuser_of(db, app)
    assert counts.list_total(context(db, admin, settings, ()), RESOURCE_FIELDS, ()) is not None
    db.rollback()
    make_resource(db, settings, owner, "two")  # above the watermark, then trimmed away
    deleted = trim(app.state.cartotheca.engine, retention_seconds=-60)
    assert deleted > 0
    assert db.scalar(select(func.count()).select_from(resource_changes)) == 0
    db.rollback()
    assert counts.list_total(context(db, admin, settings, ()), RESOURCE_FIELDS, ()) is None
    assert not index.ready  # changes may be lost: SQL answers until it is built again
    assert index.rebuild()
    expected = counts.list_total(context(db, admin, settings, ()), RESOURCE_FIELDS, ())
    assert expected is not None and expected >= 2
