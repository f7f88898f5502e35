"""cartotheca.geodata.storage._source: stream an uploaded layer as Arrow batches for the stores.

Both vector stores copy a source the same way: pyogrio's Arrow stream, batch by batch, never the
whole layer in memory. This module owns what they share: opening the stream with the upload's
character set and open options, recognising geometry types straight from the WKB bytes, turning
single parts into multi parts when a layer mixes them, and describing fields and CRS.
"""

from __future__ import annotations

import codecs
import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyogrio.raw
import shapely
from pyproj import CRS
from pyproj.exceptions import CRSError

from cartotheca.errors import InvalidInput
from cartotheca.geodata.storage import FieldInfo, SourceLayer

BATCH_SIZE = 65536
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,62}")
# Column names the stores use themselves; a source attribute with one of them is renamed.
RESERVED = ("fid", "geom")
BASE_TYPES = {1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint", 5: "MultiLineString",
              6: "MultiPolygon", 7: "GeometryCollection"}
TYPE_CODES = {name: code for code, name in BASE_TYPES.items()}
MULTI_OF = {1: 4, 2: 5, 3: 6}


def check_name(name: str) -> str:
    """Store names end up in paths and SQL identifiers: only ``[a-z][a-z0-9_]*`` gets there."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise InvalidInput(f"invalid storage name {name!r}: use lower-case letters, digits and _")
    return name


def xsd_type(arrow_type: Any) -> str:
    if pa.types.is_boolean(arrow_type):
        return "xsd:boolean"
    if pa.types.is_int64(arrow_type) or pa.types.is_uint32(arrow_type) or pa.types.is_uint64(arrow_type):
        return "xsd:long"
    if pa.types.is_integer(arrow_type):
        return "xsd:int"
    if pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        return "xsd:double"
    if pa.types.is_timestamp(arrow_type):
        return "xsd:dateTime"
    if pa.types.is_date(arrow_type):
        return "xsd:date"
    if pa.types.is_time(arrow_type):
        return "xsd:time"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return "xsd:base64Binary"
    return "xsd:string"


@lru_cache(maxsize=256)
def crs_info(user_input: str | None) -> tuple[str, int | None]:
    """(WKT, EPSG code when pyproj identifies one) of a CRS given as text. Lon/lat WGS 84 (OGC
    CRS84, what GDAL gives CSV and GeoJSON) counts as EPSG:4326: the stores use x/y order."""
    if not user_input:
        return "", None

    try:
        crs = CRS.from_user_input(user_input)
    except CRSError as exc:
        raise InvalidInput(f"coordinate reference system not understood: {exc}") from None
    epsg = crs.to_epsg(min_confidence=70)
    if epsg is None and crs.to_authority(min_confidence=70) == ("OGC", "CRS84"):
        epsg = 4326
    if epsg is not None:
        return CRS.from_epsg(epsg).to_wkt(), epsg
    return crs.to_wkt(), None


def crs_for_gdal(user_input: str | None) -> str | None:
    """The CRS to hand GDAL: "EPSG:n" when identified, so the store records the code."""
    wkt, epsg = crs_info(user_input)
    return f"EPSG:{epsg}" if epsg else (wkt or None)


def wkb_type_codes(wkb: Any) -> np.ndarray:
    """ISO WKB type codes (e.g. 1 Point, 1003 Polygon Z, -1 for null) of an Arrow binary array,
    read from bytes 1–4 of each value without parsing the geometries."""

    if isinstance(wkb, pa.ChunkedArray):
        wkb = wkb.combine_chunks()
    if pa.types.is_large_binary(wkb.type):
        offsets = np.frombuffer(wkb.buffers()[1], dtype=np.int64)
    else:
        offsets = np.frombuffer(wkb.buffers()[1], dtype=np.int32)
    offsets = offsets[wkb.offset: wkb.offset + len(wkb) + 1]
    data_buffer = wkb.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1].astype(np.int64)
    valid = (np.diff(offsets) >= 5) & ~np.asarray(wkb.is_null(), dtype=bool)
    codes = np.full(len(wkb), -1, dtype=np.int64)
    if not valid.any():
        return codes
    s = starts[valid]
    little = data[s] == 1
    b1, b2, b3, b4 = (data[s + i].astype(np.int64) for i in (1, 2, 3, 4))
    value = np.where(little, b1 | b2 << 8 | b3 << 16 | b4 << 24, b4 | b3 << 8 | b2 << 16 | b1 << 24)
    # EWKB-style flags (Z 0x80000000, M 0x40000000, SRID 0x20000000) folded into ISO codes
    iso = value & 0x0FFFFFFF
    iso = iso + np.where(value & 0x80000000, 1000, 0) + np.where(value & 0x40000000, 2000, 0)
    codes[valid] = iso
    return codes


@dataclass
class GeometryKinds:
    """Which geometry types a layer holds, and the one type it is declared with."""

    codes: set[int] = field(default_factory=set)  # base codes 1..7
    has_z: bool = False
    has_m: bool = False

    def add(self, type_codes: np.ndarray) -> None:
        present = np.unique(type_codes[type_codes >= 0])
        if len(present) and ((present % 1000 < 1) | (present % 1000 > 7) | (present >= 4000)).any():
            raise InvalidInput("the layer has a geometry that is not valid WKB")
        for code in present.tolist():
            self.codes.add(code % 1000)
            dims = code // 1000
            self.has_z |= dims in (1, 3)
            self.has_m |= dims in (2, 3)

    @property
    def mixed_multi(self) -> bool:
        """Single and multi parts of one kind: store all as multi."""
        return any(single in self.codes and multi in self.codes for single, multi in MULTI_OF.items())

    def base_name(self, promote: bool) -> str:
        codes = {MULTI_OF.get(c, c) for c in self.codes} if promote else set(self.codes)
        if len(codes) == 1:
            return BASE_TYPES[codes.pop()]
        return "GeometryCollection" if codes == {7} else "Geometry"

    def fits(self, declared: str, promote: bool) -> bool:
        """Whether every geometry seen so far can go into a layer of type ``declared``."""
        if declared == "Geometry":
            return True
        codes = {MULTI_OF.get(c, c) for c in self.codes} if promote else set(self.codes)
        return codes <= {TYPE_CODES[declared]}


def declared_type(name: str | None) -> tuple[str | None, bool]:
    """(base OGC type, whether it is multi) from a SourceLayer/pyogrio geometry type name."""
    if not name:
        return None, False
    base = name.replace("3D ", "").replace("Measured ", "").replace(" Z", "").replace(" M", "").strip()
    if base not in TYPE_CODES:
        return None, False
    return base, base.startswith("Multi")


def promote_geometries(geometries: np.ndarray) -> np.ndarray:
    """Shapely geometries with every single part as a one-part multi geometry."""

    type_ids = shapely.get_type_id(geometries)
    out = geometries.copy()
    makers = ((0, shapely.multipoints), (1, shapely.multilinestrings), (3, shapely.multipolygons))
    for single_id, maker in makers:
        chosen = np.flatnonzero(type_ids == single_id)
        if len(chosen):
            made = np.empty(len(chosen), dtype=object)
            made[:] = [maker([g]) for g in geometries[chosen]]
            out[chosen] = made
    return out


def promote_to_multi(wkb: Any, type_codes: np.ndarray) -> Any:
    """The WKB column with every single-part geometry as a one-part multi geometry."""

    if not np.isin(type_codes % 1000, list(MULTI_OF)).any():
        return wkb
    geometries = shapely.from_wkb(np.asarray(wkb.to_numpy(zero_copy_only=False), dtype=object))
    return pa.array(shapely.to_wkb(promote_geometries(geometries), flavor="iso"), type=pa.binary())


@dataclass
class SourceStream:
    """An open Arrow stream of a source layer with what the stores need to know about it."""

    reader: Any  # pyarrow.RecordBatchReader
    label: str  # the file name, for messages
    geometry_column: str
    crs: str | None  # as pyogrio/ingest gives it: "EPSG:xxxx" or WKT
    declared_geometry_type: str | None
    renames: dict[str, str]  # source column → stored column (reserved names)
    recode: str | None  # decode text from this character set (non-UTF-8 sources GDAL cannot recode)

    def batches(self) -> Iterator[Any]:
        iterator = iter(self.reader)
        while True:
            try:
                batch = next(iterator)
            except StopIteration:
                return
            except Exception as exc:  # GDAL read errors surface here, mid-stream
                raise InvalidInput(f"{self.label} could not be read: {exc}") from None
            try:
                yield self._fix(batch)
            except UnicodeDecodeError as exc:
                raise InvalidInput(f"{self.label}: text is not valid {self.recode}: {exc}") from None

    def _fix(self, batch: Any) -> Any:
        if self.renames:
            batch = batch.rename_columns([self.renames.get(n, n) for n in batch.schema.names])
        if self.recode:
            columns = []
            for column in batch.columns:
                if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
                    raw = column.view(pa.binary() if pa.types.is_string(column.type) else pa.large_binary())
                    column = pa.array([None if v is None else v.decode(self.recode)
                                       for v in raw.to_pylist()], type=pa.string())
                columns.append(column)
            batch = pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
        return batch

    @property
    def schema(self) -> Any:
        """The stored schema: attributes renamed (and recoded to UTF-8 text), then ``geom`` as
        plain WKB, last."""

        fields = []
        for source_field in self.reader.schema:
            name = self.renames.get(source_field.name, source_field.name)
            kind = source_field.type
            if self.recode and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
                kind = pa.string()
            if name != self.geometry_column:
                fields.append(pa.field(name, kind))
        return pa.schema([*fields, pa.field(self.geometry_column, pa.binary())])

    def attribute_fields(self) -> list[FieldInfo]:
        return [FieldInfo(f.name, xsd_type(f.type)) for f in self.schema if f.name != self.geometry_column]


@contextlib.contextmanager
def open_source(source: SourceLayer, batch_size: int = BATCH_SIZE) -> Iterator[SourceStream]:
    """Open ``source`` as an Arrow stream. The shapefile driver recodes text itself (its
    ``encoding`` is GDAL's SHAPE_ENCODING); other drivers hand undecoded bytes through, which are
    decoded here when the upload names a non-UTF-8 character set."""

    encoding = source.encoding
    is_shapefile = source.path.lower().endswith((".shp", ".dbf", ".shz", ".shp.zip"))
    recode = None
    if encoding and not is_shapefile:
        if _codec(encoding) != "utf-8":
            recode = encoding
        encoding = None
    label = source.path.rsplit("/", 1)[-1]
    with contextlib.ExitStack() as stack:
        preloaded = source.preloaded
        if preloaded is not None and preloaded.batches is not None:
            meta = preloaded.meta
            reader = pa.RecordBatchReader.from_batches(preloaded.schema, iter(preloaded.batches))
        else:
            try:
                meta, reader = stack.enter_context(pyogrio.raw.open_arrow(
                    source.path, layer=source.layer, encoding=encoding, batch_size=batch_size,
                    use_pyarrow=True, **source.open_options))
            except Exception as exc:
                raise InvalidInput(f"{label} could not be read: {exc}") from None
        geometry_column = meta.get("geometry_name") or "wkb_geometry"
        if geometry_column not in reader.schema.names:
            raise InvalidInput(f"{label} has no geometry column")
        renames = _renames([n for n in reader.schema.names if n != geometry_column])
        renames[geometry_column] = "geom"
        yield SourceStream(reader=reader, label=label, geometry_column="geom",
                           crs=source.crs_wkt or meta.get("crs"),
                           declared_geometry_type=source.geometry_type or meta.get("geometry_type"),
                           renames=renames, recode=recode)


def _renames(names: list[str]) -> dict[str, str]:
    taken = {n.lower() for n in names}
    renames = {}
    for name in names:
        if name.lower() in RESERVED:
            candidate, i = f"{name}_1", 1
            while candidate.lower() in taken:
                i += 1
                candidate = f"{name}_{i}"
            taken.add(candidate.lower())
            renames[name] = candidate
    return renames


def _codec(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        raise InvalidInput(f"unknown character set {name!r}") from None
