"""The catalogue index's totals and facets equal SQL's after every random change (both backends)."""

from __future__ import annotations

import random

import pytest

from cartotheca.catalogue.index import CatalogueIndex, IndexedCounts
from tests.support.catalogue_changes import LIST_QUERIES, make_cast, random_change
from tests.support.index_compare import check_facets, check_lists, requesters


@pytest.fixture
def index(app, settings):
    built = CatalogueIndex(app.state.cartotheca.engine, settings)
    return built


@pytest.mark.parametrize("seed", [1, 2])
def test_random_changes_keep_every_count_equal_to_sql(app, db, settings, index, seed):
    rnd = random.Random(seed)
    cast = make_cast(db, settings)
    assert index.rebuild()
    counts = IndexedCounts(index)
    who = requesters(db, app, cast)
    moderated = settings.model_copy(update={"ADMIN_MODERATE_UPLOADS": True})
    unpublished = settings.model_copy(update={"RESOURCE_PUBLISHING": False})
    done = []
    compared = 0
    for _step in range(12):
        done.append(random_change(db, settings, cast, rnd))
        compared += check_lists(db, counts, who, settings)
        compared += check_lists(db, counts, who, moderated, LIST_QUERIES[:5])
        compared += check_lists(db, counts, who, unpublished, LIST_QUERIES[:3])
        compared += check_facets(db, counts, who, settings)
        db.rollback()
    assert index.builds == 1  # every change came through the feed, none through a rebuild
    print(f"\n{len(done)} changes ({', '.join(done)}), {compared} comparisons")


def test_a_rebuild_equals_the_index_kept_by_the_feed(app, db, settings, index):
    rnd = random.Random(7)
    cast = make_cast(db, settings)
    assert index.rebuild()
    counts = IndexedCounts(index)
    who = requesters(db, app, cast)
    for _ in range(30):
        random_change(db, settings, cast, rnd)
    check_lists(db, counts, who, settings, LIST_QUERIES[:1])
    fed = index.bitmaps
    fed.drop_empty()
    again = CatalogueIndex(app.state.cartotheca.engine, settings)
    assert again.rebuild()
    built = again.bitmaps
    assert fed.all == built.all and fed.state == built.state
    assert fed.by == built.by
