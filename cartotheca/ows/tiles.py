"""cartotheca.ows.tiles: map tiles of datasets for the XYZ routes and WMTS.

Rasters are read from their COG with rio-tiler (overviews, masks and alpha handled there), vector
datasets are drawn by the map renderer in their default style, and vector datasets also give
Mapbox vector tiles. Tiles are addressed in a morecantile tile matrix set (WebMercatorQuad for
XYZ; WMTS adds WorldCRS84Quad). A tile's ETag is known before it is drawn, so a client's cached
tile is confirmed without reading any data.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import mapbox_vector_tile
import morecantile
import numpy as np
import shapely
from rasterio.enums import ColorInterp
from rio_tiler.errors import TileOutsideBounds
from rio_tiler.io import Reader
from rio_tiler.models import ImageData

from cartotheca.errors import InvalidInput, NotFound
from cartotheca.geodata.storage import FeatureQuery, stored_layer
from cartotheca.geodata.storage.stores import raster_store, vector_store
from cartotheca.ows import render
from cartotheca.settings import Settings

PNG = "image/png"
MVT = "application/vnd.mapbox-vector-tile"
FORMATS_BY_EXTENSION = {"png": PNG, "pbf": MVT, "mvt": MVT}
TILE_MATRIX_SETS = ("WebMercatorQuad", "WorldCRS84Quad")
DEFAULT_TMS = "WebMercatorQuad"
MVT_EXTENT = 4096
MVT_BUFFER = 64  # tile units kept around a vector tile, so lines and polygons join across tiles
READER_POOL_SIZE = 32  # idle rio-tiler readers kept, over all COGs
STATS_SAMPLE = 1024  # largest side read to find the display range of non-byte rasters


class TileOutOfRange(NotFound):
    """A tile address outside its tile matrix (WMTS: TileOutOfRange)."""


@cache
def tile_matrix_set(identifier: str) -> morecantile.TileMatrixSet:
    if identifier not in TILE_MATRIX_SETS:
        raise NotFound(f"Unknown tile matrix set {identifier}")
    return morecantile.tms.get(identifier)


def check_tile(tms: morecantile.TileMatrixSet, z: int, x: int, y: int) -> None:
    if not tms.minzoom <= z <= tms.maxzoom:
        raise TileOutOfRange(f"Zoom level {z} is outside {tms.minzoom}..{tms.maxzoom}")
    matrix = tms.matrix(z)
    if not (0 <= x < matrix.matrixWidth and 0 <= y < matrix.matrixHeight):
        raise TileOutOfRange(f"Tile {z}/{x}/{y} is outside the tile matrix")


def tms_crs(tms: morecantile.TileMatrixSet) -> str:
    """The CRS of a tile matrix set's coordinates, x/y order (CRS84 is lon/lat)."""
    return "EPSG:3857" if tms.id == "WebMercatorQuad" else "EPSG:4326"


def formats_for(dataset: Any) -> list[str]:
    return [PNG] if dataset.storage == "cog" else [PNG, MVT]


# -- planning: what a tile is, and its ETag ----------------------------------------------------

@dataclass
class TileJob:
    """One tile of one dataset, ready to draw."""

    resource: Any
    dataset: Any
    tms: morecantile.TileMatrixSet
    z: int
    x: int
    y: int
    media_type: str
    sld: str | None  # vector PNG tiles: the style drawn
    etag: str
    raster_version: tuple = ()  # raster tiles: the stored COG's version, read once per tile


def plan_tile(settings: Settings, resource: Any, dataset: Any, tms_id: str, z: int, x: int, y: int,
              media_type: str, style: str | None = None, *, default_sld: str | None = None) -> TileJob:
    """Check a tile request against the dataset; ``NotFound`` for what it cannot give.
    ``default_sld``: the dataset's default style when the caller has it already."""
    tms = tile_matrix_set(tms_id)
    check_tile(tms, z, x, y)
    if media_type not in formats_for(dataset):
        raise NotFound(f"{resource.alternate} has no {media_type} tiles")
    sld = None
    version: tuple = (resource.id, dataset.location, str(resource.last_updated))
    raster_version: tuple = ()
    if dataset.storage == "cog":
        raster_version = raster_store(settings).version(dataset.location)
        version += raster_version
    elif media_type == PNG:
        sld = default_sld if default_sld is not None and not style \
            else render.dataset_sld(dataset, style or None)
        version += (hashlib.sha1(sld.encode()).hexdigest(),)
    digest = hashlib.sha1(repr((version, tms.id, z, x, y, media_type)).encode()).hexdigest()
    return TileJob(resource, dataset, tms, z, x, y, media_type, sld, f'"{digest[:32]}"', raster_version)


def draw_tile(settings: Settings, job: TileJob) -> bytes:
    """The tile's bytes; an empty vector tile is ``b""``."""
    if not _touches_dataset(job):
        return b"" if job.media_type == MVT else blank_png()
    if job.media_type == MVT:
        return vector_tile(settings, job)
    if job.dataset.storage == "cog":
        return raster_png(settings, job)
    return vector_png(settings, job)


def _touches_dataset(job: TileJob) -> bool:
    """False when the tile lies clearly outside the dataset's lon/lat extent (with a margin for
    symbols drawn across tile edges), so blank tiles cost nothing."""
    resource = job.resource
    if resource.ll_minx is None:
        return True
    west, south, east, north = _lonlat_bounds(job.tms, job.x, job.y, job.z)
    margin_x, margin_y = (east - west) * 0.25, (north - south) * 0.25
    return not (west - margin_x > resource.ll_maxx or east + margin_x < resource.ll_minx
                or south - margin_y > resource.ll_maxy or north + margin_y < resource.ll_miny)


def _lonlat_bounds(tms: morecantile.TileMatrixSet, x: int, y: int, z: int) -> tuple[float, ...]:
    """A tile's lon/lat bounds; WebMercatorQuad's by formula (morecantile goes through pyproj)."""
    if tms.id != DEFAULT_TMS:
        return tuple(tms.bounds(x, y, z))  # type: ignore[return-value]
    n = 2.0 ** z

    def lat(row: int) -> float:
        return math.degrees(math.atan(math.sinh(math.pi * (1 - 2 * row / n))))

    return x / n * 360.0 - 180.0, lat(y + 1), (x + 1) / n * 360.0 - 180.0, lat(y)


@cache
def blank_png(size: int = 256) -> bytes:
    return ImageData(np.ma.masked_all((1, size, size), dtype="uint8")).render(img_format="PNG")


# -- raster tiles ------------------------------------------------------------------------------

@dataclass
class Display:
    """How a COG's bands become a PNG: which bands, and the value range of non-byte data."""

    indexes: tuple[int, ...] | None
    in_range: tuple[tuple[float, float], ...] | None
    colormap: dict | None


def _display(dataset: Any) -> Display:
    interp = dataset.colorinterp
    bands = [i for i in dataset.indexes if interp[i - 1] != ColorInterp.alpha]
    chosen = tuple(bands[:3]) if len(bands) >= 3 else tuple(bands[:1])
    # rio-tiler's own choice (every non-alpha band) when that already makes a grey or RGB image
    indexes = None if chosen == tuple(bands) else chosen
    colormap = None
    if len(chosen) == 1 and interp[chosen[0] - 1] == ColorInterp.palette:
        try:
            colormap = dataset.colormap(chosen[0])
        except ValueError:
            colormap = None
    in_range = None
    if dataset.dtypes[chosen[0] - 1] != "uint8" and colormap is None:
        in_range = _value_range(dataset, chosen)
    return Display(indexes, in_range, colormap)


def _value_range(dataset: Any, indexes: tuple[int, ...]) -> tuple[tuple[float, float], ...]:
    """Min and max over all displayed bands, read from a small overview (one range for all
    bands keeps an RGB composite's colour balance)."""
    scale = max(dataset.width, dataset.height) / STATS_SAMPLE
    shape = (len(indexes), max(1, round(dataset.height / max(scale, 1))),
             max(1, round(dataset.width / max(scale, 1))))
    data = dataset.read(indexes, out_shape=shape, masked=True).astype("float64")
    values = data.compressed()
    values = values[np.isfinite(values)]
    if values.size == 0:
        low, high = 0.0, 1.0
    else:
        low, high = float(values.min()), float(values.max())
        if high <= low:
            high = low + 1.0
    return ((low, high),) * len(indexes)


@dataclass
class _PooledReader:
    reader: Reader
    display: Display


class ReaderPool:
    """Open rio-tiler readers by (COG, its version, tile matrix set). A rasterio dataset is not
    thread-safe, so a reader serves one tile at a time; concurrent tiles of one COG open more.
    Readers are used inside the store's ``reading`` block (an object store's reads need its
    GDAL options)."""

    def __init__(self, size: int = READER_POOL_SIZE):
        self.size = size
        self._idle: OrderedDict[tuple, list[_PooledReader]] = OrderedDict()
        self._displays: dict[tuple, Display] = {}
        self._count = 0
        self._lock = threading.Lock()

    @contextmanager
    def reader(self, path: str, version: tuple, tms: morecantile.TileMatrixSet) -> Iterator[_PooledReader]:
        key = (path, *version, tms.id)
        with self._lock:
            idle = self._idle.get(key)
            entry = idle.pop() if idle else None
            if entry is not None:
                self._count -= 1
        if entry is None:
            entry = self._open(key, path, tms)
        try:
            yield entry
        except BaseException:
            entry.reader.close()  # a failed read may leave the dataset in any state
            raise
        self._put_back(key, entry)

    def _open(self, key: tuple, path: str, tms: morecantile.TileMatrixSet) -> _PooledReader:
        reader = Reader(path, tms=tms)
        display = self._displays.get(key)
        if display is None:
            display = _display(reader.dataset)
            with self._lock:
                self._displays[key] = display
        return _PooledReader(reader, display)

    def _put_back(self, key: tuple, entry: _PooledReader) -> None:
        evicted = []
        with self._lock:
            self._idle.setdefault(key, []).append(entry)
            self._idle.move_to_end(key)
            self._count += 1
            while self._count > self.size:
                old_key, entries = next(iter(self._idle.items()))
                evicted.append(entries.pop(0))
                self._count -= 1
                if not entries:
                    del self._idle[old_key]
                    self._displays.pop(old_key, None)
        for old in evicted:
            old.reader.close()

    def clear(self) -> None:
        with self._lock:
            entries = [e for idle in self._idle.values() for e in idle]
            self._idle.clear()
            self._displays.clear()
            self._count = 0
        for entry in entries:
            entry.reader.close()


READERS = ReaderPool()


def raster_png(settings: Settings, job: TileJob) -> bytes:
    store = raster_store(settings)
    version = job.raster_version or store.version(job.dataset.location)
    with store.reading(job.dataset.location) as path, READERS.reader(path, version, job.tms) as pooled:
        try:
            image = pooled.reader.tile(job.x, job.y, job.z, indexes=pooled.display.indexes)
        except TileOutsideBounds:
            return blank_png()
        display = pooled.display
    if display.in_range is not None:
        image.rescale(in_range=display.in_range)
    return image.render(img_format="PNG", colormap=display.colormap or None)


# -- vector tiles ------------------------------------------------------------------------------

def vector_png(settings: Settings, job: TileJob) -> bytes:
    matrix = job.tms.matrix(job.z)
    bbox = tuple(job.tms.xy_bounds(job.x, job.y, job.z))
    return render.render_image(settings, [render.LayerSpec(job.resource, job.dataset, sld=job.sld)],
                               bbox, tms_crs(job.tms), matrix.tileWidth, matrix.tileHeight)


def vector_tile(settings: Settings, job: TileJob) -> bytes:
    """A Mapbox vector tile (one layer named after the dataset): geometries clipped to the tile
    plus a buffer and snapped to the 4096 grid, every attribute as a property."""
    left, bottom, right, top = job.tms.xy_bounds(job.x, job.y, job.z)
    pad = (right - left) * MVT_BUFFER / MVT_EXTENT
    box = (left - pad, bottom - pad, right + pad, top + pad)
    dataset, crs = job.dataset, tms_crs(job.tms)
    batch = vector_store(settings, dataset.storage).query(
        stored_layer(dataset), FeatureQuery(bbox=box, bbox_crs=crs, out_crs=crs))
    if not len(batch):
        return b""
    geometries = to_tile_grid(np.asarray(batch.geometries, dtype=object), box=box,
                              origin=(left, top), size=(right - left, top - bottom))
    names = list(batch.properties)
    columns = [batch.properties[name] for name in names]
    features = []
    for i, geometry in enumerate(geometries):
        if geometry is None:
            continue
        properties = {}
        for name, column in zip(names, columns, strict=True):
            value = property_value(column[i])
            if value is not None:
                properties[name] = value
        features.append({"geometry": geometry, "properties": properties, "id": int(batch.fids[i])})
    if not features:
        return b""
    return mapbox_vector_tile.encode(
        {"name": dataset.name, "features": features},
        default_options={"extents": MVT_EXTENT, "y_coord_down": True})


def to_tile_grid(geometries: np.ndarray, *, box: tuple[float, float, float, float],
                 origin: tuple[float, float], size: tuple[float, float]) -> list[Any]:
    """Clip to ``box`` and map into tile units (x right, y down, integers); None for what falls
    outside or collapses on the grid."""
    present = ~shapely.is_missing(geometries)
    clipped = np.full(len(geometries), None, dtype=object)
    clipped[present] = shapely.clip_by_rect(geometries[present], *box)
    sx, sy = MVT_EXTENT / size[0], MVT_EXTENT / size[1]
    x0, y0 = origin

    def scale(coords: np.ndarray) -> np.ndarray:
        return np.column_stack(((coords[:, 0] - x0) * sx, (y0 - coords[:, 1]) * sy))

    kept = present & ~shapely.is_empty(clipped)
    out: list[Any] = [None] * len(geometries)
    if not kept.any():
        return out
    gridded = shapely.set_precision(shapely.transform(clipped[kept], scale), 1.0)
    for index, geometry in zip(np.flatnonzero(kept), gridded, strict=True):
        geometry = _single_kind(geometry)
        if geometry is not None and not geometry.is_empty:
            out[index] = geometry
    return out


def _single_kind(geometry: Any) -> Any:
    """MVT has no geometry collections: keep the parts of the highest dimension."""
    if geometry is None or geometry.geom_type != "GeometryCollection":
        return geometry
    parts = [p for p in shapely.get_parts(geometry) if not p.is_empty]
    if not parts:
        return None
    top = max(shapely.get_dimensions(parts))
    parts = [p for p in parts if shapely.get_dimensions(p) == top]
    if top == 2:
        return shapely.multipolygons(shapely.get_parts(parts))
    if top == 1:
        return shapely.multilinestrings(shapely.get_parts(parts))
    return shapely.multipoints(shapely.get_parts(parts))


def property_value(value: Any) -> str | int | float | bool | None:
    """A property as MVT can hold it (string, number or boolean); None drops it."""
    if value is None:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return None if value != value else value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return None
    return str(value)


def parse_extension(extension: str) -> str:
    media_type = FORMATS_BY_EXTENSION.get(extension.lower())
    if media_type is None:
        raise NotFound(f"Tiles come as .png, .pbf or .mvt, not .{extension}")
    return media_type


def parse_format(value: str | None, default: str = PNG) -> str:
    """A WMTS FORMAT value → one of ours."""
    if not value:
        return default
    text = value.strip().lower()
    if text in ("image/png", "png", "image/png32", "image/png; mode=32bit"):
        return PNG
    if text in (MVT, "application/x-protobuf", "pbf", "mvt", "application/vnd.mapbox-vector-tile"):
        return MVT
    raise InvalidInput(f"Format {value} is not supported")
