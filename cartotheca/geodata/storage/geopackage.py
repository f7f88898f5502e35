"""cartotheca.geodata.storage.geopackage: one GeoPackage per vector dataset (embedded default).

Writing streams the source through pyogrio's Arrow interface into ``DATA_DIR/vector/<name>.gpkg``
(GDAL builds the R-tree). Reading uses Python's sqlite3 on the file, read-only, through
SQLAlchemy Core: attribute predicates and ordering run in SQLite, the bbox goes through the
GeoPackage R-tree, and geometry blobs are decoded in numpy (no SpatiaLite needed).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sqlite3
import uuid
import warnings
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyogrio.raw
import sqlalchemy as sa
from sqlalchemy.pool import NullPool
from sqlalchemy.sql import operators

from cartotheca.errors import Conflict, InvalidInput, NotFound
from cartotheca.geodata.storage import FieldInfo, SourceLayer, StoredLayer, as_box, gpkg_copy, gpkg_geometry
from cartotheca.geodata.storage._files import publish, remove
from cartotheca.geodata.storage._source import (
    BATCH_SIZE,
    GeometryKinds,
    check_name,
    crs_for_gdal,
    crs_info,
    declared_type,
    open_source,
    promote_to_multi,
    wkb_type_codes,
)
from cartotheca.geodata.storage._sql import SQLVectorStore

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from cartotheca.settings import Settings

LOCATION_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,62}\.gpkg")
SQLITE_SIDECARS = ("-journal", "-wal", "-shm")


class _MixedParts(Exception):
    """Single and multi parts of one kind turned up after the layer type was fixed."""


def _gpkg_datetime(value: Any) -> Any:
    """Bind a datetime in the text form GDAL writes to GeoPackage (UTC, 'Z', milliseconds)."""
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    suffix = ""
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
        suffix = "Z"
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}"
    return text + suffix


class GeoPackageDateTime(sa.types.TypeDecorator):
    """GeoPackage DATETIME: ISO text. Comparisons go through julianday() so that '...:00Z',
    '...:00.000Z' and a bound value compare as instants, not as strings."""

    impl = sa.String
    cache_ok = True

    class comparator_factory(sa.types.TypeDecorator.Comparator):  # noqa: N801 - SQLAlchemy's name
        def operate(self, op, *other, **kwargs):
            if op in (operators.eq, operators.ne, operators.lt, operators.le, operators.gt, operators.ge):
                right = other[0]
                if not isinstance(right, sa.ColumnElement):
                    right = sa.literal(right, type_=GeoPackageDateTime())
                return op(sa.func.julianday(self.expr), sa.func.julianday(right))
            if op is operators.between_op:
                low, high = (o if isinstance(o, sa.ColumnElement)
                             else sa.literal(o, type_=GeoPackageDateTime()) for o in other[:2])
                return sa.func.julianday(self.expr).between(sa.func.julianday(low), sa.func.julianday(high))
            return super().operate(op, *other, **kwargs)

    def process_bind_param(self, value, dialect):
        return None if value is None else _gpkg_datetime(value)

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        try:
            return dt.datetime.fromisoformat(value)
        except (TypeError, ValueError):
            return value


class GeoPackageDate(sa.types.TypeDecorator):
    """GeoPackage DATE: 'YYYY-MM-DD' text, which compares correctly as text."""

    impl = sa.String
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, dt.datetime):
            value = value.date()
        return value.isoformat()

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        try:
            return dt.date.fromisoformat(value[:10])
        except (TypeError, ValueError):
            return value


def _column_type(declared: str) -> sa.types.TypeEngine:
    base = declared.upper().split("(")[0].strip()
    if base in ("BOOLEAN",):
        return sa.Boolean()
    if base in ("TINYINT", "SMALLINT", "MEDIUMINT", "INT"):
        return sa.Integer()
    if base in ("INTEGER", "BIGINT"):
        return sa.BigInteger()
    if base in ("FLOAT", "DOUBLE", "REAL"):
        return sa.Float()
    if base == "DATE":
        return GeoPackageDate()
    if base == "DATETIME":
        return GeoPackageDateTime()
    if base == "BLOB":
        return sa.LargeBinary()
    return sa.String()


@lru_cache(maxsize=512)
def _engine_for(path: str) -> Engine:
    uri = f"{Path(path).resolve().as_uri()}?mode=ro"

    def connect() -> sqlite3.Connection:
        if not os.path.exists(path):
            raise NotFound("the dataset's data file is missing")
        return sqlite3.connect(uri, uri=True, check_same_thread=False)

    # NullPool: a dropped or replaced file is never served from a pooled connection.
    return sa.create_engine("sqlite://", creator=connect, poolclass=NullPool)


@lru_cache(maxsize=512)
def _reflect(path: str, layer: str, stamp: tuple[int, int]) -> sa.Table:
    connection = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = connection.execute(f"PRAGMA table_info({_quote(layer)})").fetchall()
    finally:
        connection.close()
    if not rows:
        raise NotFound(f"layer {layer} is missing from its GeoPackage")
    columns = [sa.Column(name, _column_type(declared or ""), primary_key=bool(pk))
               for _cid, name, declared, _notnull, _default, pk in rows]
    return sa.Table(layer, sa.MetaData(), *columns)


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class GeoPackageStore(SQLVectorStore):
    name = "geopackage"
    batch_size = BATCH_SIZE  # features per Arrow batch while writing

    def __init__(self, root: Path):
        self.root = Path(root)

    @classmethod
    def for_settings(cls, settings: Settings) -> GeoPackageStore:
        return cls(Path(settings.DATA_DIR) / "vector")

    def path(self, stored: StoredLayer) -> Path:
        if not LOCATION_PATTERN.fullmatch(stored.location or ""):
            raise InvalidInput(f"invalid GeoPackage location {stored.location!r}")
        return self.root / stored.location

    # -- writing ------------------------------------------------------------------------------

    def write(self, source: SourceLayer, name: str) -> StoredLayer:
        name = check_name(name)
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.root / f"{name}.gpkg"
        if final.exists():
            raise Conflict(f"a GeoPackage named {name} already exists")
        temporary = self.root / f".{name}.{uuid.uuid4().hex}.tmp.gpkg"
        try:
            try:
                fields, geometry_type = self._copy(source, temporary, name, force_multi=False)
            except _MixedParts:
                _remove(temporary)
                fields, geometry_type = self._copy(source, temporary, name, force_multi=True)
            stored = self._describe(temporary, name, fields, geometry_type)
            publish(temporary, final)
        finally:
            _remove(temporary)
        return stored

    def _copy(self, source: SourceLayer, target: Path, layer: str,
              force_multi: bool) -> tuple[list[FieldInfo], str]:
        with open_source(source, self.batch_size) as stream:
            batches = stream.batches()
            first = next(batches, None)
            kinds = GeometryKinds()
            if first is not None:
                kinds.add(wkb_type_codes(first.column("geom")))
            declared_base, declared_multi = declared_type(stream.declared_geometry_type)
            promote = force_multi or declared_multi or kinds.mixed_multi
            if kinds.codes:
                base = kinds.base_name(promote)
            else:
                base = declared_base or "Geometry"
            schema = stream.schema
            fields = stream.attribute_fields()
            state: dict[str, Any] = {"fits": True, "error": None}

            def converted():
                for index, batch in enumerate(_chain(first, batches)):
                    codes = wkb_type_codes(batch.column("geom"))
                    if index:
                        try:
                            kinds.add(codes)
                        except InvalidInput as exc:
                            state["error"] = exc
                            raise
                        if kinds.mixed_multi and not promote:
                            raise _MixedParts()
                        state["fits"] = state["fits"] and kinds.fits(base, promote)
                    geometry = batch.column("geom")
                    if promote:
                        geometry = promote_to_multi(geometry, codes)
                    columns = [batch.column(f.name) for f in schema if f.name != "geom"]
                    yield pa.RecordBatch.from_arrays([*columns, geometry], schema=schema)

            reader = pa.RecordBatchReader.from_batches(schema, converted())
            geometry_type = base + (" Z" if kinds.has_z and base != "Geometry" else "")
            try:
                _write_arrow(reader, target, layer, "Unknown" if base == "Geometry" else geometry_type,
                             crs_for_gdal(stream.crs))
            except Exception as exc:
                if state["error"] is not None:
                    raise state["error"] from None
                if kinds.mixed_multi and not promote:
                    raise _MixedParts() from None
                raise InvalidInput(f"{Path(source.path).name} could not be stored: {exc}") from None
            if not state["fits"]:
                base = "Geometry"
                _set_geometry_type(target, layer, "GEOMETRY")
        return fields, base

    def _describe(self, path: Path, layer: str, fields: list[FieldInfo], geometry_type: str) -> StoredLayer:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            srs_id, definition, organization, code = connection.execute(
                "SELECT s.srs_id, s.definition, s.organization, s.organization_coordsys_id "
                "FROM gpkg_geometry_columns g JOIN gpkg_spatial_ref_sys s ON s.srs_id = g.srs_id "
                "WHERE g.table_name = ?", (layer,)).fetchone()
            count = connection.execute(f"SELECT count(*) FROM {_quote(layer)}").fetchone()[0]
            extent = connection.execute("SELECT min_x, min_y, max_x, max_y FROM gpkg_contents "
                                        "WHERE table_name = ?", (layer,)).fetchone()
        finally:
            connection.close()
        crs_wkt, srid = "", None
        if organization and organization.upper() == "EPSG" and code and code > 0:
            crs_wkt, srid = crs_info(f"EPSG:{code}")
        elif definition and definition.strip().lower() != "undefined":
            crs_wkt, srid = crs_info(definition)
        bounds = None
        if count and extent and None not in extent:
            bounds = as_box(extent)
        return StoredLayer(storage=self.name, location=f"{layer}.gpkg", layer=layer, geometry_column="geom",
                           fid_column="fid", geometry_type=geometry_type, srid=srid, crs_wkt=crs_wkt,
                           feature_count=int(count), bounds=bounds, fields=fields)

    def copy(self, stored: StoredLayer, name: str) -> StoredLayer:
        name = check_name(name)
        source = self.path(stored)
        if not source.is_file():
            raise NotFound(f"the data of layer {stored.layer} is missing")
        final = self.root / f"{name}.gpkg"
        if final.exists():
            raise Conflict(f"a GeoPackage named {name} already exists")
        temporary = self.root / f".{name}.{uuid.uuid4().hex}.tmp.gpkg"
        try:
            gpkg_copy.backup(source, temporary)
            gpkg_copy.rename_layer(temporary, stored.layer, name, stored.geometry_column)
            copied = self._describe(temporary, name, list(stored.fields), stored.geometry_type)
            publish(temporary, final)
        finally:
            _remove(temporary)
        return copied

    def drop(self, stored: StoredLayer) -> None:
        _remove(self.path(stored))

    # -- reading ------------------------------------------------------------------------------

    def table(self, stored: StoredLayer) -> sa.Table:
        path = self.path(stored)
        try:
            status = path.stat()
        except FileNotFoundError:
            raise NotFound(f"the data of layer {stored.layer} is missing") from None
        return _reflect(str(path), stored.layer, (status.st_mtime_ns, status.st_size))

    def _engine(self, stored: StoredLayer) -> Engine:
        return _engine_for(str(self.path(stored)))

    def _bbox_clause(self, stored: StoredLayer, table: sa.Table, bbox: tuple[float, float, float, float]):
        rtree = sa.table(f"rtree_{stored.layer}_{stored.geometry_column}",
                         sa.column("id"), sa.column("minx"), sa.column("maxx"), sa.column("miny"),
                         sa.column("maxy"))
        minx, miny, maxx, maxy = bbox
        inside = sa.select(rtree.c.id).where(rtree.c.minx <= maxx, rtree.c.maxx >= minx,
                                             rtree.c.miny <= maxy, rtree.c.maxy >= miny)
        return table.c[stored.fid_column].in_(inside)

    def _decode(self, values: list[Any]) -> np.ndarray:
        return gpkg_geometry.decode(values)

    def _ordering(self, column: sa.Column) -> Any:
        # GeoPackage date-times are text with optional milliseconds: order them as instants.
        return sa.func.julianday(column) if isinstance(column.type, GeoPackageDateTime) else column

    def native_crs(self, stored: StoredLayer) -> str | None:
        if stored.srid or stored.crs_wkt:
            return super().native_crs(stored)
        return _file_crs(str(self.path(stored)), stored.layer)

    def mapnik_datasource(self, stored: StoredLayer) -> dict[str, Any]:
        # mapnik's sqlite plugin cannot read GeoPackage; its OGR plugin can.
        return {"type": "ogr", "file": str(self.path(stored).resolve()), "layer": stored.layer}


@lru_cache(maxsize=256)
def _file_crs(path: str, layer: str) -> str | None:
    connection = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        row = connection.execute(
            "SELECT s.organization, s.organization_coordsys_id, s.definition FROM gpkg_geometry_columns g "
            "JOIN gpkg_spatial_ref_sys s ON s.srs_id = g.srs_id WHERE g.table_name = ?", (layer,)).fetchone()
    finally:
        connection.close()
    if not row:
        return None
    organization, code, definition = row
    if organization and organization.upper() == "EPSG" and code and code > 0:
        return f"EPSG:{code}"
    return definition if definition and definition.strip().lower() != "undefined" else None


def _write_arrow(reader: Any, target: Path, layer: str, geometry_type: str, crs: str | None) -> None:
    with warnings.catch_warnings():
        # A layer without a CRS is stored without one; pyogrio's warning says no more than that.
        warnings.filterwarnings("ignore", "'crs' was not provided", UserWarning)
        # Another geometry kind after the layer type was set: the type is widened afterwards.
        warnings.filterwarnings("ignore", ".*not normally allowed by the GeoPackage specification",
                                RuntimeWarning)
        pyogrio.raw.write_arrow(reader, str(target), layer=layer, driver="GPKG", geometry_name="geom",
                                geometry_type=geometry_type, crs=crs,
                                layer_options={"GEOMETRY_NAME": "geom", "FID": "fid", "SPATIAL_INDEX": "YES"})


def _chain(first: Any, rest: Any):
    if first is None:
        return
    yield first
    yield from rest


def _set_geometry_type(path: Path, layer: str, type_name: str) -> None:
    connection = sqlite3.connect(path)
    try:
        with connection:
            connection.execute("UPDATE gpkg_geometry_columns SET geometry_type_name = ? WHERE table_name = ?",
                               (type_name, layer))
    finally:
        connection.close()


def _remove(path: Path) -> None:
    remove(path, *SQLITE_SIDECARS)
