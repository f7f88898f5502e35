"""cartotheca.geodata.storage: where published data lives, behind one small interface.

Vector data goes to a ``VectorStore``: one GeoPackage per dataset under the data directory
(embedded default) or one table per dataset in a PostGIS datastore (scale-out). Rasters go to
a ``RasterStore`` as Cloud-Optimized GeoTIFFs in the file store (a folder, or the object store
every node reads). The map server, the
exports and ingest only talk to these interfaces, so both backends pass the same tests.

Reading is columnar: a query returns a ``FeatureBatch`` (fids, shapely geometries, property
columns), filtered and sorted by the database (GeoPackage is SQLite: attribute predicates and
ordering run there, the bbox goes through the GeoPackage R-tree; PostGIS uses its GiST index).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    from sqlalchemy import ColumnElement, Table


Box = tuple[float, float, float, float]  # min x, min y, max x, max y


def as_box(values: Iterable[Any]) -> Box:
    """Four numbers (from a database row, a request) as a ``Box`` of floats."""
    minx, miny, maxx, maxy = (float(v) for v in values)
    return minx, miny, maxx, maxy


@dataclass(frozen=True)
class FieldInfo:
    """One attribute column: its name and an xsd type (xsd:string, xsd:int, xsd:long,
    xsd:double, xsd:boolean, xsd:date, xsd:dateTime, xsd:time)."""

    name: str
    type: str


@dataclass(frozen=True)
class SourceLayer:
    """An OGR-readable layer of an uploaded file, as validation found it."""

    path: str
    layer: str | int | None = None
    encoding: str | None = None  # the upload's ``charset`` for files without a declared one
    open_options: dict[str, str] = field(default_factory=dict)  # e.g. CSV X/Y/WKT columns
    crs_wkt: str | None = None
    geometry_type: str | None = None
    feature_count: int | None = None
    # The layer as validation read it (Arrow batches), so the store copies it without reading
    # the file a second time; None when it was too large to keep.
    preloaded: Preloaded | None = field(default=None, compare=False, repr=False)


class Preloaded:
    """Arrow batches of a layer exactly as ``pyogrio.raw.open_arrow`` streamed them, with the
    stream's metadata; ``release`` frees them once the data is stored."""

    def __init__(self, meta: dict[str, Any], schema: Any, batches: list[Any]):
        self.meta = meta
        self.schema = schema
        self.batches: list[Any] | None = batches

    def release(self) -> None:
        self.batches = None


@dataclass
class StoredLayer:
    """A vector layer as stored; what the ``datasets`` row records about it."""

    storage: str  # "geopackage" | "postgis"
    location: str  # GeoPackage path relative to the store root, or schema.table
    layer: str
    geometry_column: str
    fid_column: str
    geometry_type: str  # Point, LineString, Polygon, MultiPoint, ... (OGC names)
    srid: int | None  # EPSG code of the data when it has one
    crs_wkt: str
    feature_count: int
    bounds: tuple[float, float, float, float] | None  # native CRS, None when empty
    fields: list[FieldInfo]


@dataclass
class FeatureQuery:
    """What to read. Coordinates are in the layer's native CRS unless ``bbox_crs`` says so."""

    bbox: tuple[float, float, float, float] | None = None
    bbox_crs: str | None = None  # e.g. "EPSG:3857"; reprojected to native by the store
    # Attribute predicate over the layer's SQLAlchemy table (built by filters.sql)
    where: Callable[[Table], ColumnElement[bool]] | None = None
    # Exact spatial test applied after the bbox prefilter: shapely array → bool mask
    geometry_predicate: Callable[[np.ndarray], np.ndarray] | None = None
    properties: list[str] | None = None  # None: every field
    sort: list[tuple[str, bool]] = field(default_factory=list)  # (field, ascending)
    offset: int = 0
    limit: int | None = None
    fids: list[int] | None = None
    out_crs: str | None = None  # reproject geometries to this CRS ("EPSG:4326", ...)


@dataclass
class FeatureBatch:
    fids: list[int]
    geometries: np.ndarray  # shapely geometries (None for a feature without geometry)
    properties: dict[str, list[Any]]  # column name → values, in field order

    def __len__(self) -> int:
        return len(self.fids)


class VectorStore(Protocol):
    name: str  # "geopackage" | "postgis"

    def write(self, source: SourceLayer, name: str) -> StoredLayer:
        """Copy ``source`` into a new layer called ``name`` with a spatial index."""

    def copy(self, stored: StoredLayer, name: str) -> StoredLayer:
        """Copy the stored layer into a new layer called ``name`` (same rows, fids, columns and
        CRS, with its own spatial index), published whole or not at all; ``NotFound`` if the
        source's data is missing, ``Conflict`` if ``name`` is taken."""

    def drop(self, stored: StoredLayer) -> None:
        """Remove the layer and everything it wrote; missing is not an error."""

    def table(self, stored: StoredLayer) -> Table:
        """The layer as an SQLAlchemy table (attribute columns typed), for ``where``."""

    def query(self, stored: StoredLayer, query: FeatureQuery) -> FeatureBatch: ...

    def iter_batches(self, stored: StoredLayer, query: FeatureQuery,
                     batch_size: int = 10000) -> Iterator[FeatureBatch]:
        """The same as ``query`` in bounded batches, for streaming exports."""

    def count(self, stored: StoredLayer, query: FeatureQuery) -> int: ...

    def distinct(self, stored: StoredLayer, column: str, limit: int = 1000) -> list[Any]:
        """Sorted distinct values of a column (WMS TIME dimension, unique_values)."""

    def mapnik_datasource(self, stored: StoredLayer) -> dict[str, Any]:
        """Keyword arguments for ``mapnik.Datasource`` reading this layer."""


class RasterStore(Protocol):
    is_local: bool  # the COGs are files of this machine (GDAL opens them without options)

    def write_cog(self, source_path: str, name: str) -> str:
        """Convert a GDAL-readable raster to a COG (internal tiling, overviews); returns
        its location relative to the raster root."""

    def copy_cog(self, location: str, name: str) -> str:
        """Copy a stored COG under ``name`` (published whole or not at all); returns the
        copy's location."""

    def path(self, location: str) -> str:
        """The name GDAL opens a stored COG by (a file path, or ``/vsis3/...``)."""

    def reading(self, location: str) -> AbstractContextManager[str]:
        """The COG's GDAL name, for reads made inside the block (GDAL configured for the
        store; an outage of the store raises ``StoreUnavailable``)."""

    def version(self, location: str) -> tuple:
        """What changes when the COG is written again; ``NotFound`` when it is missing."""

    def open_bytes(self, location: str) -> tuple[Iterator[bytes], int]:
        """The stored file's bytes in chunks, and their count."""

    def drop(self, location: str) -> None: ...


def stored_layer(dataset: Any) -> StoredLayer:
    """The ``StoredLayer`` a ``datasets`` row describes (fields are not needed to read)."""
    return StoredLayer(
        storage=dataset.storage, location=dataset.location, layer=dataset.layer,
        geometry_column=dataset.geometry_column or "geom", fid_column=dataset.fid_column or "fid",
        geometry_type=dataset.geometry_type or "Unknown", srid=dataset.native_srid,
        crs_wkt=dataset.native_crs or "",
        feature_count=dataset.feature_count or 0, bounds=None, fields=[],
    )
