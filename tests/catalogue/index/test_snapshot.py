"""A snapshot written by one process starts another, which replays the changes after it."""

from __future__ import annotations

import random

from cartotheca.catalogue.index import CatalogueIndex, IndexedCounts
from cartotheca.catalogue.index.snapshot import dumps, loads
from tests.support.catalogue_changes import LIST_QUERIES, make_cast, random_change
from tests.support.index_compare import check_facets, check_lists, requesters


def test_snapshot_round_trip_and_replay(app, db, settings):
    rnd = random.Random(11)
    cast = make_cast(db, settings)
    engine = app.state.cartotheca.engine
    writer = CatalogueIndex(engine, settings)
    assert writer.rebuild()
    who = requesters(db, app, cast)
    for _ in range(5):
        random_change(db, settings, cast, rnd)
    check_lists(db, IndexedCounts(writer), who, settings, LIST_QUERIES[:1])  # the writer catches up
    copy = loads(dumps(writer.bitmaps))
    assert copy.all == writer.bitmaps.all and copy.state == writer.bitmaps.state
    assert copy.by == writer.bitmaps.by

    assert writer.write_snapshot()
    assert not writer.write_snapshot()  # within the interval the lease is taken: one writer
    for _ in range(8):  # changes after the snapshot: the starting process replays them
        random_change(db, settings, cast, rnd)

    starting = CatalogueIndex(engine, settings)
    assert starting.load_snapshot() and starting.builds == 0
    counts = IndexedCounts(starting)
    check_lists(db, counts, who, settings)
    check_facets(db, counts, who, settings)
    assert starting.builds == 0
