"""cartotheca.geodata.storage.postgis: one PostGIS table per vector dataset (scale-out backend).

The wheels' GDALs have no PostgreSQL driver, so loading is done here: the source's Arrow stream
becomes CSV with hex EWKB geometries, batch by batch, into one COPY (psycopg 3) inside one
transaction with the CREATE TABLE, the GiST index and ANALYZE. A failed load leaves nothing.
Reading is SQLAlchemy Core; the bbox uses ``&&`` against the GiST index.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import warnings
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import shapely
import sqlalchemy as sa
from pyproj import CRS
from sqlalchemy.dialects import postgresql

from cartotheca.errors import Conflict, InvalidInput, NotFound
from cartotheca.geodata.storage import SourceLayer, StoredLayer, as_box
from cartotheca.geodata.storage._source import (
    BATCH_SIZE,
    GeometryKinds,
    check_name,
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

SCHEMA = "public"
IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,62}")
CUSTOM_SRID_RANGE = (910000, 998999)  # PostGIS accepts user SRIDs up to 998999
PG_TYPES = {
    "bool": sa.Boolean, "int2": sa.SmallInteger, "int4": sa.Integer, "int8": sa.BigInteger,
    "float4": sa.Float, "float8": sa.Float, "numeric": sa.Numeric, "text": sa.String, "varchar": sa.String,
    "date": sa.Date, "time": sa.Time, "bytea": sa.LargeBinary,
}


class Geometry(sa.types.UserDefinedType):
    """The PostGIS geometry column; only ever selected through ST_AsBinary."""

    cache_ok = True

    def get_col_spec(self, **kw):
        return "geometry"


# One pool per datastore URL and process, apart from the catalogue's: its connections go to the
# datastore database and are not part of DATABASE_POOL_SIZE + DATABASE_MAX_OVERFLOW; count up to
# 5 + 10 per process against the datastore server's max_connections (README "Database
# connections"). Streams read each batch through a connection of their own and give it back.
@lru_cache(maxsize=16)
def engine_for(url: str) -> Engine:
    return sa.create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _pg_type(arrow_type: Any) -> str:
    if pa.types.is_boolean(arrow_type):
        return "boolean"
    if pa.types.is_int64(arrow_type) or pa.types.is_uint32(arrow_type):
        return "bigint"
    if pa.types.is_uint64(arrow_type):
        return "numeric"
    if pa.types.is_integer(arrow_type):
        return "integer"
    if pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        return "double precision"
    if pa.types.is_timestamp(arrow_type):
        return "timestamp with time zone" if arrow_type.tz else "timestamp without time zone"
    if pa.types.is_date(arrow_type):
        return "date"
    if pa.types.is_time(arrow_type):
        return "time"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return "bytea"
    return "text"


def _csv_column(column: Any) -> Any:
    """A column pyarrow's CSV writer renders as PostgreSQL reads it."""

    kind = column.type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return pa.array([None if v is None else "\\x" + v.hex() for v in column.to_pylist()], pa.string())
    if pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind) \
            or pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_temporal(kind) \
            or pa.types.is_decimal(kind):
        return column
    # lists, structs (GDAL's StringList, IntegerList...): JSON text
    values = column.to_pylist()
    return pa.array([None if v is None else json.dumps(v, default=str) for v in values], pa.string())


class PostGISStore(SQLVectorStore):
    name = "postgis"
    batch_size = BATCH_SIZE  # features per Arrow batch (and per COPY chunk) while writing
    # A slow client of a large GetFeature or download holds no datastore connection between
    # batches (see SQLVectorStore._pages).
    connection_per_batch = True

    def __init__(self, url: str):
        self.url = url

    @classmethod
    def for_settings(cls, settings: Settings) -> PostGISStore:
        if not settings.DATASTORE_URL:
            raise InvalidInput("the postgis storage backend needs DATASTORE_URL")
        return cls(settings.DATASTORE_URL)

    @property
    def engine(self) -> Engine:
        return engine_for(self.url)

    def _engine(self, stored: StoredLayer) -> Engine:
        return self.engine

    @staticmethod
    def _split(location: str) -> tuple[str, str]:
        schema, _, table = (location or "").partition(".")
        if not (IDENTIFIER.fullmatch(schema) and IDENTIFIER.fullmatch(table)):
            raise InvalidInput(f"invalid PostGIS location {location!r}")
        return schema, table

    def _qualified(self, location: str) -> str:
        schema, table = self._split(location)
        return f"{_quote(schema)}.{_quote(table)}"

    # -- writing ------------------------------------------------------------------------------

    def write(self, source: SourceLayer, name: str) -> StoredLayer:
        name = check_name(name)
        location = f"{SCHEMA}.{name}"
        with self._transaction() as cursor:
            cursor.execute("SELECT to_regclass(%s)", (self._qualified(location),))
            if cursor.fetchone()[0] is not None:
                raise Conflict(f"a table named {location} already exists")
            stored = self._load(cursor, source, name, location)
            cursor.execute(f"CREATE INDEX ON {self._qualified(location)} USING gist (geom)")
            cursor.execute(f"ANALYZE {self._qualified(location)}")
        return stored

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Any]:
        """A cursor on a raw driver connection: committed when the block ends, rolled back if
        it raises (whatever it raises, an interrupt included), the connection closed."""
        connection = self.engine.raw_connection()
        try:
            driver = connection.driver_connection
            if driver is None:  # a fresh checkout always has one; only an invalidated one has not
                raise RuntimeError("the datastore connection is closed")
            with driver.cursor() as cursor:
                yield cursor
            connection.commit()
        except BaseException:
            connection.rollback()
            raise
        finally:
            connection.close()

    def _load(self, cursor: Any, source: SourceLayer, name: str, location: str) -> StoredLayer:
        qualified = self._qualified(location)
        with open_source(source, self.batch_size) as stream:
            batches = stream.batches()
            first = next(batches, None)
            kinds = GeometryKinds()
            if first is not None:
                kinds.add(wkb_type_codes(first.column("geom")))
            declared_base, declared_multi = declared_type(stream.declared_geometry_type)
            promote = declared_multi or kinds.mixed_multi
            base = kinds.base_name(promote) if kinds.codes else (declared_base or "Geometry")
            attributes = [f for f in stream.schema if f.name != "geom"]
            fields = stream.attribute_fields()
            crs_wkt, epsg = crs_info(stream.crs)
            srid = epsg or (self._custom_srid(cursor, crs_wkt) if crs_wkt else 0)
            columns = ", ".join(f"{_quote(f.name)} {_pg_type(f.type)}" for f in attributes)
            # Same column order as the GeoPackage tables: fid, geom, the attributes.
            cursor.execute(f"CREATE TABLE {qualified} (fid bigserial PRIMARY KEY, "
                           f"geom geometry({_typmod(base, kinds.has_z)}, {srid})"
                           f"{', ' if columns else ''}{columns})")
            names = ", ".join([*(_quote(f.name) for f in attributes), "geom"])
            copy_sql = f"COPY {qualified} ({names}) FROM STDIN WITH (FORMAT csv)"
            count = 0
            bounds = np.array([np.inf, np.inf, -np.inf, -np.inf])
            measured = True  # every batch was points whose bounds were read from the WKB
            try:
                with contextlib.ExitStack() as copying:
                    copy = None
                    for batch in _chain(first, batches):
                        kinds.add(wkb_type_codes(batch.column("geom")))
                        if (kinds.mixed_multi and not promote) or not kinds.fits(base, promote):
                            # A later batch brings other types: widen the column between COPYs.
                            copying.close()
                            copy = None
                            promote = promote or kinds.mixed_multi
                            base = kinds.base_name(promote)
                            if not kinds.fits(base, promote):
                                base = "Geometry"
                            using = "ST_Multi(geom)" if promote else "geom"
                            cursor.execute(f"ALTER TABLE {qualified} ALTER COLUMN geom TYPE "
                                           f"geometry({_typmod(base, kinds.has_z)}, {srid}) USING {using}")
                        table, box = _csv_table(batch, attributes, srid, promote)
                        measured = measured and box is not None
                        if box is not None:
                            bounds = np.concatenate([np.minimum(bounds[:2], box[:2]),
                                                     np.maximum(bounds[2:], box[2:])])
                        if copy is None:
                            copy = copying.enter_context(cursor.copy(copy_sql))
                        buffer = io.BytesIO()
                        pacsv.write_csv(table, buffer, pacsv.WriteOptions(include_header=False))
                        copy.write(buffer.getbuffer())
                        count += len(batch)
                if count and not measured:
                    cursor.execute(f"SELECT ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e) "
                                   f"FROM (SELECT ST_Extent(geom) AS e FROM {qualified}) AS extent")
                    row = cursor.fetchone()
                    bounds = np.array([np.nan if v is None else float(v) for v in row])
            except (InvalidInput, Conflict):
                raise
            except Exception as exc:
                raise InvalidInput(f"{source.path.rsplit('/', 1)[-1]} could not be stored: {exc}") from None
        return StoredLayer(storage=self.name, location=location, layer=name, geometry_column="geom",
                           fid_column="fid", geometry_type=base, srid=epsg, crs_wkt=crs_wkt,
                           feature_count=count,
                           bounds=as_box(bounds) if np.isfinite(bounds).all() else None,
                           fields=fields)

    @staticmethod
    def _custom_srid(cursor: Any, wkt: str) -> int:
        """An SRID for a CRS without an EPSG code: found by its WKT, else added to spatial_ref_sys."""

        cursor.execute("SELECT srid FROM spatial_ref_sys WHERE srtext = %s AND auth_name = 'cartotheca'",
                       (wkt,))
        row = cursor.fetchone()
        if row:
            return int(row[0])
        cursor.execute("LOCK TABLE spatial_ref_sys IN SHARE ROW EXCLUSIVE MODE")
        cursor.execute("SELECT coalesce(max(srid), %s) + 1 FROM spatial_ref_sys WHERE srid BETWEEN %s AND %s",
                       (CUSTOM_SRID_RANGE[0] - 1, *CUSTOM_SRID_RANGE))
        srid = int(cursor.fetchone()[0])
        with warnings.catch_warnings():
            # proj4text is informative only; PostGIS 3 transforms with srtext
            warnings.simplefilter("ignore", UserWarning)
            proj4 = CRS.from_wkt(wkt).to_proj4()
        cursor.execute("INSERT INTO spatial_ref_sys (srid, auth_name, auth_srid, srtext, proj4text) "
                       "VALUES (%s, 'cartotheca', %s, %s, %s)", (srid, srid, wkt, proj4))
        return srid

    def copy(self, stored: StoredLayer, name: str) -> StoredLayer:
        name = check_name(name)
        location = f"{SCHEMA}.{name}"
        source, target = self._qualified(stored.location), self._qualified(location)
        with self._transaction() as cursor:
            cursor.execute("SELECT to_regclass(%s), to_regclass(%s)", (source, target))
            found, taken = cursor.fetchone()
            if found is None:
                raise NotFound(f"the data of layer {stored.layer} is missing")
            if taken is not None:
                raise Conflict(f"a table named {location} already exists")
            return self._copy_table(cursor, stored, source, target, location, name)

    def _copy_table(self, cursor: Any, stored: StoredLayer, source: str, target: str, location: str,
                    name: str) -> StoredLayer:
        """Columns (with the geometry typmod), primary key and GiST index as the source has
        them, in the caller's transaction: nobody sees the table before it is complete. The fid
        gets a sequence of its own; sharing the source's would tie the copy to the source."""
        cursor.execute(f"CREATE TABLE {target} (LIKE {source} INCLUDING CONSTRAINTS INCLUDING INDEXES)")
        cursor.execute(f"INSERT INTO {target} SELECT * FROM {source}")
        cursor.execute(f"ALTER TABLE {target} ALTER COLUMN fid ADD GENERATED BY DEFAULT AS IDENTITY")
        cursor.execute(f"SELECT setval(pg_get_serial_sequence(%s, 'fid'), coalesce(max(fid), 0) + 1, false), "
                       f"count(*), ST_XMin(ST_Extent(geom)), ST_YMin(ST_Extent(geom)), "
                       f"ST_XMax(ST_Extent(geom)), ST_YMax(ST_Extent(geom)) FROM {target}", (target,))
        _, count, *extent = cursor.fetchone()
        cursor.execute(f"ANALYZE {target}")
        return StoredLayer(storage=self.name, location=location, layer=name, geometry_column="geom",
                           fid_column="fid", geometry_type=stored.geometry_type, srid=stored.srid,
                           crs_wkt=stored.crs_wkt, feature_count=int(count),
                           bounds=None if None in extent else as_box(extent),
                           fields=list(stored.fields))

    def drop(self, stored: StoredLayer) -> None:
        qualified = self._qualified(stored.location)
        with self.engine.begin() as conn:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {qualified}"))
        _reflect.cache_clear()

    # -- reading ------------------------------------------------------------------------------

    def table(self, stored: StoredLayer) -> sa.Table:
        schema, name = self._split(stored.location)
        with self.engine.connect() as conn:
            oid = conn.execute(sa.text("SELECT to_regclass(:t)::oid"), {"t": self._qualified(stored.location)}
                               ).scalar()
        if oid is None:
            raise NotFound(f"the data of layer {stored.layer} is missing")
        return _reflect(self.url, schema, name, int(oid))

    def _geometry_expression(self, stored: StoredLayer, table: sa.Table) -> Any:
        return sa.func.ST_AsBinary(table.c[stored.geometry_column], type_=sa.LargeBinary)

    def _bbox_clause(self, stored: StoredLayer, table: sa.Table, bbox: tuple[float, float, float, float]):
        srid = table.info.get("srid") or 0
        envelope = sa.func.ST_MakeEnvelope(*(sa.literal(float(v), sa.Float) for v in bbox),
                                           sa.literal(int(srid), sa.Integer))
        return table.c[stored.geometry_column].op("&&")(envelope)

    def _decode(self, values: list[Any]) -> np.ndarray:
        if not values:
            return np.empty(0, dtype=object)
        return shapely.from_wkb(np.asarray([None if v is None else bytes(v) for v in values], dtype=object))

    def native_crs(self, stored: StoredLayer) -> str | None:
        if stored.srid or stored.crs_wkt:
            return super().native_crs(stored)
        srid = self.table(stored).info.get("srid")
        if not srid:
            return None
        with self.engine.connect() as conn:
            row = conn.execute(sa.text("SELECT auth_name, auth_srid, srtext FROM spatial_ref_sys "
                                       "WHERE srid = :s"), {"s": srid}).first()
        if row is None:
            return None
        return f"EPSG:{row.auth_srid}" if row.auth_name == "EPSG" else row.srtext

    def mapnik_datasource(self, stored: StoredLayer) -> dict[str, Any]:
        url = sa.engine.make_url(self.url)
        table = self.table(stored)
        params: dict[str, Any] = {
            "type": "postgis", "host": url.host or "localhost", "port": url.port or 5432,
            "user": url.username, "password": url.password, "dbname": url.database,
            "table": f"{table.schema}.{table.name}", "geometry_field": stored.geometry_column,
            "key_field": stored.fid_column, "srid": table.info.get("srid") or 0,
        }
        extent = stored.bounds or _extent(self.url, table.schema, table.name, table.info["oid"])
        if extent is not None:
            params["extent"] = ",".join(repr(float(v)) for v in extent)
        return {k: v for k, v in params.items() if v is not None}


@lru_cache(maxsize=512)
def _reflect(url: str, schema: str, name: str, oid: int) -> sa.Table:
    """The table's columns with SQLAlchemy types (the oid keys the cache: a table dropped and
    written again under the same name is reflected afresh)."""
    with engine_for(url).connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT a.attname, t.typname, a.atttypmod, pg_catalog.format_type(a.atttypid, a.atttypmod) "
            "FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = :oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"),
            {"oid": oid}).all()
        srid = conn.execute(sa.text("SELECT srid FROM geometry_columns WHERE f_table_schema = :s "
                                    "AND f_table_name = :t AND f_geometry_column = 'geom'"),
                            {"s": schema, "t": name}).scalar()
    columns = []
    for attname, typname, _typmod, formatted in rows:
        if typname == "geometry":
            kind: Any = Geometry()
        elif typname == "timestamptz":
            kind = sa.DateTime(timezone=True)
        elif typname == "timestamp":
            kind = sa.DateTime()
        elif typname == "_text" or formatted.endswith("[]"):
            kind = postgresql.ARRAY(sa.String)
        else:
            kind = PG_TYPES.get(typname, sa.String)()
        columns.append(sa.Column(attname, kind, primary_key=attname == "fid"))
    return sa.Table(name, sa.MetaData(), *columns, schema=schema, info={"srid": srid, "oid": oid})


@lru_cache(maxsize=512)
def _extent(url: str, schema: str, name: str, oid: int) -> tuple[float, float, float, float] | None:
    table = sa.table(name, sa.column("geom"), schema=schema)
    with engine_for(url).connect() as conn:
        row = conn.execute(sa.select(sa.func.ST_XMin(sa.func.ST_Extent(table.c.geom)),
                                     sa.func.ST_YMin(sa.func.ST_Extent(table.c.geom)),
                                     sa.func.ST_XMax(sa.func.ST_Extent(table.c.geom)),
                                     sa.func.ST_YMax(sa.func.ST_Extent(table.c.geom)))).first()
    if row is None or row[0] is None:
        return None
    return tuple(float(v) for v in row)  # type: ignore[return-value]


def _typmod(base: str, has_z: bool) -> str:
    return base + ("Z" if has_z else "")


def _csv_table(batch: Any, attributes: list[Any], srid: int, promote: bool) -> tuple[Any, np.ndarray | None]:
    """The batch as COPY rows (attributes, then hex EWKB) and the bounds of its geometries."""

    wkb = batch.column("geom")
    codes = wkb_type_codes(wkb)
    if promote:
        wkb = promote_to_multi(wkb, codes)
        codes = wkb_type_codes(wkb)
    box = _wkb_bounds(wkb, codes)
    table = pa.table([*(_csv_column(batch.column(f.name)) for f in attributes), hex_ewkb(wkb, srid)],
                     names=[*(f.name for f in attributes), "geom"])
    return table, box


def _binary_parts(wkb: Any) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data bytes) of a binary Arrow array, offsets relative to the data bytes."""

    width = np.int64 if pa.types.is_large_binary(wkb.type) else np.int32
    _, offsets_buffer, data_buffer = wkb.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=width, count=len(wkb) + 1,
                            offset=wkb.offset * width().itemsize)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return offsets.astype(np.int64), data


def hex_ewkb(wkb: Any, srid: int) -> Any:
    """WKB → hex EWKB (what PostGIS reads as text) for a whole Arrow column at once, without
    parsing a geometry: in little-endian WKB the type code's high byte is 0, so it takes the SRID
    flag and the SRID goes in after it (Arrow kernels), then the one data buffer is hex-encoded.
    Anything else (big-endian WKB, flags already set) goes through shapely."""

    if isinstance(wkb, pa.ChunkedArray):
        wkb = wkb.combine_chunks()
    if pa.types.is_large_binary(wkb.type):
        wkb = wkb.cast(pa.binary())
    valid = pc.drop_null(wkb)
    if len(valid) and not (pc.all(pc.equal(pc.binary_slice(valid, 0, 1), b"\x01")).as_py()
                           and pc.all(pc.equal(pc.binary_slice(valid, 4, 5), b"\x00")).as_py()
                           and pc.min(pc.binary_length(valid)).as_py() >= 5):
        geometries = shapely.from_wkb(np.asarray(wkb.to_numpy(zero_copy_only=False), dtype=object),
                                      on_invalid="raise")
        hexed = shapely.to_wkb(shapely.set_srid(geometries, srid), hex=True, include_srid=True,
                               flavor="extended")
        return pa.array(hexed, pa.string())
    flag_and_srid = pa.scalar(b"\x20" + int(srid).to_bytes(4, "little"), pa.binary())
    ewkb = pc.binary_join_element_wise(pc.binary_slice(wkb, 0, 4), flag_and_srid,
                                       pc.binary_slice(wkb, 5, 1 << 30), pa.scalar(b"", pa.binary()))
    offsets, data = _binary_parts(ewkb)
    hexed = data[offsets[0]:offsets[-1]].tobytes().hex().encode()
    new_offsets = ((offsets - offsets[0]) * 2).astype(np.int32)
    validity = ewkb.buffers()[0] if ewkb.null_count else None
    return pa.Array.from_buffers(pa.string(), len(ewkb), [validity, pa.py_buffer(new_offsets.tobytes()),
                                                          pa.py_buffer(hexed)], null_count=ewkb.null_count)


def _wkb_bounds(wkb: Any, codes: np.ndarray) -> np.ndarray | None:
    """(minx, miny, maxx, maxy) of a column of 2D little-endian points, read straight from the
    bytes; None for other geometries (and when all are null or empty)."""

    if isinstance(wkb, pa.ChunkedArray):
        wkb = wkb.combine_chunks()
    present = codes >= 0
    if not present.any():
        return None
    if (codes[present] == 1).all():
        offsets, data = _binary_parts(wkb)
        starts, lengths = offsets[:-1][present], np.diff(offsets)[present]
        if (lengths == 21).all() and (data[starts] == 1).all():
            index = starts[:, None] + np.arange(5, 21)
            xy = data[index].copy().view("<f8")  # rows of (x, y)
            with np.errstate(invalid="ignore"):
                if np.isnan(xy).all():
                    return None
                return np.array([np.nanmin(xy[:, 0]), np.nanmin(xy[:, 1]),
                                 np.nanmax(xy[:, 0]), np.nanmax(xy[:, 1])])
    return None  # the table's extent is asked of PostGIS once the rows are in


def _chain(first: Any, rest: Any):
    if first is not None:
        yield first
    yield from rest
