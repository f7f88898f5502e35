"""cartotheca.geodata.storage.stores: the store a dataset's data lives in, from the settings.

Kept apart from the package's interface (``cartotheca.geodata.storage``), which every backend
imports: only this module knows the backends.
"""

from __future__ import annotations

from cartotheca.geodata.storage import RasterStore, VectorStore
from cartotheca.geodata.storage.cog import COGStore
from cartotheca.geodata.storage.geopackage import GeoPackageStore
from cartotheca.geodata.storage.postgis import PostGISStore
from cartotheca.settings import Settings


def vector_store(settings: Settings, storage: str | None = None) -> VectorStore:
    """The store for ``storage`` (a ``datasets.storage`` value), default the configured one."""
    kind = storage or settings.STORAGE_BACKEND
    if kind == "geopackage":
        return GeoPackageStore.for_settings(settings)
    if kind == "postgis":
        return PostGISStore.for_settings(settings)
    raise ValueError(f"unknown storage backend {kind!r}")


def raster_store(settings: Settings) -> RasterStore:
    return COGStore.for_settings(settings)
