"""Storage fixtures: the vector store follows the database backend (SQLite runs write
GeoPackages, PostgreSQL runs write PostGIS tables), so storage tests run once per backend."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pytest

from cartotheca.errors import CartothecaError
from cartotheca.geodata.storage import StoredLayer
from cartotheca.geodata.storage.stores import raster_store, vector_store
from cartotheca.settings import Settings


@pytest.fixture
def storage_settings(make_settings, tmp_path) -> Settings:
    """Settings with a data directory of the test's own (the PostGIS datastore is shared)."""
    return make_settings(DATA_DIR=tmp_path / "data")


@pytest.fixture
def store(storage_settings):
    return vector_store(storage_settings)


@pytest.fixture
def cog_store(storage_settings):
    return raster_store(storage_settings)


@pytest.fixture
def store_name() -> Iterator[callable]:
    """Unique layer names (the PostGIS datastore outlives a test)."""
    return lambda prefix="layer": f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.fixture
def written(store) -> Iterator[list[StoredLayer]]:
    """Layers a test wrote; dropped afterwards."""
    layers: list[StoredLayer] = []
    yield layers
    for layer in layers:
        with contextlib.suppress(CartothecaError):
            store.drop(layer)


@pytest.fixture
def write(store, store_name, written):
    """``write(SourceLayer, prefix)`` → StoredLayer, dropped after the test."""
    def run(source, prefix: str = "layer") -> StoredLayer:
        layer = store.write(source, store_name(prefix))
        written.append(layer)
        return layer
    return run
