"""Datasets for the tile and coverage tests, published through the real ingest, and readers for
what those services answer (GeoTIFFs as arrays and their profile).

Plain functions, so tests outside ``tests/ows`` (routes, live clients) use them as well as the
fixtures of ``tests/ows/conftest.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

from rasterio.io import MemoryFile

import cartotheca  # noqa: F401  (PROJ_DATA before rasterio)
from cartotheca.db.models import Dataset, Resource
from cartotheca.geodata.storage.stores import raster_store
from tests.geodata.fixtures import (
    polygons_sld,
    publish_file,
    write_points,
    write_polygons,
    write_raster,
)

# The single-band raster of ``write_raster``'s defaults: 64 x 48 pixels over lon 0..16, lat 40..52
RASTER_SIZE = (64, 48)
RASTER_BOUNDS = (0.0, 40.0, 16.0, 52.0)
RASTER_RES = 0.25
# A view-only permission set: everyone sees the dataset, nobody but the owner downloads it
VIEW_ONLY = json.dumps({"users": {"AnonymousUser": ["view_resourcebase"]}, "groups": {}})


def publish_raster(db, settings, owner, tmp_path: Path, name: str = "raster", **options) -> Resource:
    """``write_raster(tmp_path, name, ...)`` published; raster options (bands, nodata,
    width, height, bounds, crs, dtype) go to the writer, the rest to the upload."""
    raster_keys = {"width", "height", "bounds", "crs", "bands", "dtype", "nodata", "tiled"}
    raster_options = {k: options.pop(k) for k in list(options) if k in raster_keys}
    path = write_raster(tmp_path / name, name, **raster_options)
    return publish_file(db, settings, owner, path, title=options.pop("title", name.title()), **options)


def publish_points(db, settings, owner, tmp_path: Path, **options) -> Resource:
    return publish_file(db, settings, owner, write_points(tmp_path / "points"),
                        title=options.pop("title", "Points"), **options)


def publish_polygons(db, settings, owner, tmp_path: Path, **options) -> Resource:
    return publish_file(db, settings, owner, write_polygons(tmp_path / "polygons"),
                        title=options.pop("title", "Polygons"), sld=polygons_sld(), **options)


def dataset_of(db, resource: Resource) -> Dataset:
    return db.get(Dataset, resource.id)


def cog_path(db, settings, resource: Resource) -> str:
    return raster_store(settings).path(dataset_of(db, resource).location)


def coverage_id(resource: Resource) -> str:
    return resource.alternate.replace(":", "__")


def read_geotiff(data: bytes):
    """(pixels, profile-ish dict) of GeoTIFF bytes."""
    assert data[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00"), data[:64]
    with MemoryFile(data) as memory, memory.open() as tiff:
        return tiff.read(), {"crs": tiff.crs, "transform": tiff.transform, "bounds": tuple(tiff.bounds),
                             "nodata": tiff.nodata, "dtype": tiff.dtypes[0], "count": tiff.count,
                             "descriptions": tiff.descriptions}
