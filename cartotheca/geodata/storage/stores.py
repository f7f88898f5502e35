"""cartotheca.geodata.storage.stores: the store a dataset's data lives in, from the settings.

Kept apart from the package's interface (``cartotheca.geodata.storage``), which every backend
imports: only this module knows the backends.
"""

from __future__ import annotations

from pathlib import Path

from cartotheca.filestore.stores import file_store
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


RASTER_PREFIX = "rasters/"  # the COGs' keys in an object store


def raster_store(settings: Settings) -> RasterStore:
    """COGs in the object store when ``OBJECT_STORE_URL`` is set (every node reads the same
    objects), else files under ``RASTER_DIR/cog``. One per file store, as the file store is
    one per settings object: its GDAL session is reused."""
    files = file_store(settings) if settings.OBJECT_STORE_URL else None
    folder = Path(settings.raster_dir) / "cog"
    cached = settings._raster_store
    if cached is None or cached[0] is not files or cached[1] != folder:
        store = COGStore(files, RASTER_PREFIX) if files is not None else COGStore.in_folder(folder)
        settings._raster_store = cached = (files, folder, store)
    return cached[2]
