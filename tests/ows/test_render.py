"""The pool of built maps: a map of a dataset's new version closes the idle maps of its earlier
versions (data overwritten or updated by another process, which never told this one)."""

from __future__ import annotations

import mapnik

from cartotheca.ows.render import MapPool

SETTINGS_KEY = ("data", "postgresql://store", "rasters")


def key(*layers: tuple) -> tuple:
    return ("epsg:4326", SETTINGS_KEY, layers)


def layer(resource_id: int, location: str, updated: str, sld: str = "style-1") -> tuple:
    return (resource_id, "postgis", location, location, updated, sld, None, 1.0, 1)


class Builds:
    """Counts the maps the pool had to build."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> mapnik.Map:
        self.count += 1
        return mapnik.Map(8, 8)


def draw(pool: MapPool, builds: Builds, *keys: tuple) -> int:
    """Take and give back a map of each key; how many had to be built."""
    before = builds.count
    for k in keys:
        with pool.map(k, builds):
            pass
    return builds.count - before


def test_a_new_version_of_a_dataset_closes_the_maps_of_the_old_one():
    pool, builds = MapPool(size=16), Builds()
    old = key(layer(7, "public.roads_v1", "t1"))
    old_other_style = key(layer(7, "public.roads_v1", "t1", sld="style-2"))
    old_under_rivers = key(layer(8, "public.rivers", "t1"), layer(7, "public.roads_v1", "t1"))
    rivers = key(layer(8, "public.rivers", "t1"))
    assert draw(pool, builds, old, old_other_style, old_under_rivers, rivers) == 4
    # Another style of the same data is not another version: everything is still pooled.
    assert draw(pool, builds, old, old_other_style, old_under_rivers, rivers) == 0

    overwritten = key(layer(7, "public.roads_v2", "t2"))
    assert draw(pool, builds, overwritten) == 1
    # The maps of the old data are gone (each is built again), the other dataset's map stays.
    assert draw(pool, builds, rivers, overwritten) == 0
    assert draw(pool, builds, old) == 1
    assert draw(pool, builds, old_other_style, old_under_rivers) == 2


def test_an_update_without_new_data_is_a_new_version_too():
    pool, builds = MapPool(size=16), Builds()
    before = key(layer(7, "public.roads", "t1"))
    after = key(layer(7, "public.roads", "t2"))
    assert draw(pool, builds, before, after) == 2
    assert draw(pool, builds, after) == 0
    assert draw(pool, builds, before) == 1  # closed when the update was first drawn
