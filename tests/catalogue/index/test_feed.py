"""The change feed's watermark rule with concurrent writers, and the SQL fallbacks."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text, update

from cartotheca.catalogue.index import CatalogueIndex, IndexedCounts
from cartotheca.catalogue.query.resource_list import RESOURCE_FIELDS, list_resources
from cartotheca.db.models import Resource, resource_changes
from tests.factories import make_resource, make_user
from tests.support.catalogue_changes import make_cast
from tests.support.index_compare import context, requesters, superuser_of

FEATURED = (("filter{featured}", "true"),)


def featured_total(db, counts, principal, settings) -> tuple[int | None, int | None]:
    """(index, SQL) totals of the featured resources."""
    got = counts.list_total(context(db, principal, settings, FEATURED, counts), RESOURCE_FIELDS, ())
    expected = list_resources(context(db, principal, settings, FEATURED)).total
    db.rollback()
    return got, expected


def test_out_of_order_commit_is_not_skipped(app, db, settings, backend):
    """T2 takes its xid first, T1 appends seq first, T2 commits first: a poll between the two
    commits sees only T2's entry; T1's lower seq must still be applied once it commits."""
    if backend != "postgresql":
        pytest.skip("SQLite has one writer at a time: commits follow seq")
    owner = make_user(db, "ana")
    first, second = (make_resource(db, settings, owner, title) for title in ("first", "second"))
    index = CatalogueIndex(app.state.cartotheca.engine, settings)
    assert index.rebuild()
    counts = IndexedCounts(index)
    superuser = superuser_of(db, app)
    assert featured_total(db, counts, superuser, settings) == (0, 0)
    engine = app.state.cartotheca.engine
    with engine.connect() as t1, engine.connect() as t2:
        xid2 = t2.scalar(text("SELECT txid_current()"))
        xid1 = t1.scalar(text("SELECT txid_current()"))
        assert xid2 < xid1
        t1.execute(update(Resource).where(Resource.id == first.id).values(featured=True))
        t2.execute(update(Resource).where(Resource.id == second.id).values(featured=True))
        t2.commit()
        # Between the commits: T2's change (seq above T1's) is counted, T1's is not visible.
        assert featured_total(db, counts, superuser, settings) == (1, 1)
        seqs = dict(db.execute(select(resource_changes.c.resource_id, resource_changes.c.seq)
                               .where(resource_changes.c.xid.in_([xid1, xid2]))).all())
        db.rollback()
        assert seqs == {second.id: seqs[second.id]}  # T1's entry is not visible yet
        # The dangerous case: T2's xid is below the snapshot's xmin (T1 is the oldest running),
        # so advancing past entries with xid < xmin would move beyond T1's lower seq for ever.
        xmin = db.scalar(text("SELECT txid_snapshot_xmin(txid_current_snapshot())"))
        db.rollback()
        assert xid2 < xmin <= xid1
        assert index.feed.watermark < seqs[second.id]
        t1.commit()
    assert featured_total(db, counts, superuser, settings) == (2, 2)
    assert set(index.bitmaps.state["featured"]) == {first.id, second.id}


def test_not_ready_and_far_behind_answer_from_sql(app, db, settings):
    cast = make_cast(db, settings)
    who = requesters(db, app, cast)
    behind = settings.model_copy(update={"CATALOGUE_INDEX_MAX_PENDING": 2})
    index = CatalogueIndex(app.state.cartotheca.engine, behind)
    counts = IndexedCounts(index)
    member = who["member"]
    # Not built yet: the index answers nothing, the list counts in SQL.
    got, expected = featured_total(db, counts, member, settings)
    assert got is None and expected is not None
    assert list_resources(context(db, member, settings, FEATURED, counts)).total == expected
    assert index.rebuild()
    assert featured_total(db, counts, member, settings) == (expected, expected)
    # Far behind: more changes wait than the setting allows.
    owner = cast.users[0]
    for n in range(3):
        make_resource(db, settings, owner, f"bulk {n}", featured=True, shared_with_user=cast.member)
    got, expected_now = featured_total(db, counts, member, settings)
    assert got is None and expected_now == expected + 3
    assert list_resources(context(db, member, settings, FEATURED, counts)).total == expected_now
    assert index._wanted.is_set()  # a rebuild was asked for
    assert index.rebuild()
    assert featured_total(db, counts, member, settings) == (expected_now, expected_now)
