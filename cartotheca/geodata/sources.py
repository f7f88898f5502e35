"""cartotheca.geodata.sources: recognise uploaded files and validate them before anything is stored.

Validation reads the whole input once (GDAL through pyogrio for vectors, rasterio for rasters)
and refuses, with a reason a person can act on, anything that would publish badly: a file GDAL
reads as another format than its name says, no coordinate reference system, no or mixed
geometry types, no features, text that does not decode in the declared character set.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyogrio
import pyogrio.raw
import rasterio
from pyproj import CRS
from pyproj.exceptions import CRSError
from rasterio.errors import RasterioError

from cartotheca import xmlsafe
from cartotheca.errors import InvalidInput
from cartotheca.geodata.storage import FieldInfo, Preloaded, SourceLayer
from cartotheca.geodata.storage._source import BATCH_SIZE, GeometryKinds, wkb_type_codes

VECTOR_DRIVERS = {
    ".shp": "ESRI Shapefile", ".geojson": "GeoJSON", ".json": "GeoJSON", ".kml": "KML",
    ".gpkg": "GPKG", ".fgb": "FlatGeobuf", ".csv": "CSV",
}
RASTER_SUFFIXES = (".tif", ".tiff", ".geotiff", ".gtiff")
ARCHIVE_SUFFIXES = (".zip",)
SHAPEFILE_PARTS = (".shp", ".shx", ".dbf", ".prj", ".cpg", ".qix", ".sbn", ".sbx", ".qmd", ".xml",
                   ".shp.xml", ".fix")
# GeoJSON and KML are lon/lat by definition; CSV coordinates are taken as lon/lat too.
LONLAT_DRIVERS = ("GeoJSON", "KML", "CSV")
TEXT_DRIVERS = ("GeoJSON", "CSV")  # KML names its encoding in its XML declaration
CSV_OPTIONS = {
    "X_POSSIBLE_NAMES": "lon,long,longitude,lng,x,easting",
    "Y_POSSIBLE_NAMES": "lat,latitude,y,northing",
    "GEOM_POSSIBLE_NAMES": "wkt,geom,geometry,the_geom,wkt_geom",
    "KEEP_GEOM_COLUMNS": "NO",
    "AUTODETECT_TYPE": "YES",
}
DRIVER_ALIASES = {"KML": ("KML", "LIBKML"), "GeoJSON": ("GeoJSON", "GeoJSONSeq")}
SUPPORTED_TYPES = {"Point", "LineString", "Polygon", "MultiPoint", "MultiLineString", "MultiPolygon"}
XSD_TYPES = {
    "OFTInteger": "xsd:int", "OFTInteger64": "xsd:long", "OFTReal": "xsd:double",
    "OFTString": "xsd:string", "OFTDate": "xsd:date", "OFTDateTime": "xsd:dateTime",
    "OFTTime": "xsd:time", "OFTBinary": "xsd:base64Binary",
}
TIME_TYPES = ("xsd:dateTime", "xsd:date")
BATCH = BATCH_SIZE  # the stores' batch size: preloaded batches go to them as they are
PRELOAD_BYTES = 1 << 30  # layers up to this size in all (Arrow) are read once, for validation and copy
NAN_BYTES = b"\x00\x00\x00\x00\x00\x00\xf8\x7f"  # little-endian NaN: an empty point's x
MAX_NAME = 58  # leaves room for a _NNN suffix inside PostgreSQL's 63-byte identifiers


def unsupported(filename: str) -> InvalidInput:
    # GeoNode's importer answers this case with code importer_exception and this message.
    return InvalidInput(f"No handlers found for this dataset type/action ({filename})",
                        code="importer_exception")


def kind_of(filename: str) -> str | None:
    """``vector``, ``raster`` or ``archive`` by file name, else None."""
    name = filename.lower()
    if name.endswith(ARCHIVE_SUFFIXES):
        return "archive"
    if name.endswith(RASTER_SUFFIXES):
        return "raster"
    if Path(name).suffix in VECTOR_DRIVERS:
        return "vector"
    return None


def sanitize_name(text: str) -> str:
    """A layer name: ASCII letters, digits and ``_``, starting with a letter, lower case."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", ascii_text).strip("_").lower()
    name = re.sub(r"_+", "_", name)
    if not name or not name[0].isalpha():
        name = f"layer_{name}" if name else "layer"
    return name[:MAX_NAME].rstrip("_")


def normalise_charset(charset: str | None) -> str | None:
    """Python's canonical name of a character set (GDAL understands those), or InvalidInput."""
    if charset is None or not charset.strip():
        return None
    text = charset.strip()
    if text.isdigit():  # ESRI .cpg files often say just "1252"
        text = f"cp{text}"
    try:
        return codecs.lookup(text).name
    except LookupError:
        raise InvalidInput(f"charset: unknown character set {charset!r}") from None


# -- what was uploaded ----------------------------------------------------------------------


@dataclass
class Candidate:
    """One dataset to publish: its main file and how GDAL should read it."""

    kind: str  # vector | raster
    path: Path
    stem: str
    driver: str | None = None
    layer: str | None = None
    parts: dict[str, Path] = field(default_factory=dict)  # shapefile parts by suffix


def shapefile_candidate(shp: Path, siblings: Iterable[Path]) -> Candidate:
    """The shapefile ``shp`` with its parts; missing mandatory parts are refused."""
    stem = shp.name[: -len(".shp")]
    parts = {".shp": shp}
    for path in siblings:
        lower = path.name.lower()
        if lower.startswith(stem.lower() + ".") and path != shp:
            parts[lower[len(stem):]] = path
    for suffix, why in ((".shx", "its index (.shx)"), (".dbf", "its attributes (.dbf)"),
                        (".prj", "its coordinate reference system (.prj)")):
        if suffix not in parts:
            raise InvalidInput(f"The shapefile {shp.name} is missing {why}; send the {suffix} "
                               f"file as {suffix[1:]}_file or inside the zip archive",
                               code="invalid_shapefile")
    return Candidate("vector", shp, stem, "ESRI Shapefile", parts=parts)


def candidates_in(paths: list[Path]) -> list[Candidate]:
    """The datasets among unpacked files: shapefiles with their parts, and single-file formats."""
    found: list[Candidate] = []
    for path in sorted(paths):
        lower = path.name.lower()
        if lower.startswith(".") or lower.endswith(".aux.xml"):
            continue
        if lower.endswith(".shp"):
            found.append(shapefile_candidate(path, [p for p in paths if p.parent == path.parent]))
            continue
        kind = kind_of(lower)
        if kind == "raster":
            found.append(Candidate("raster", path, path.stem))
        elif kind == "vector" and not lower.endswith(SHAPEFILE_PARTS):
            found.append(Candidate("vector", path, path.stem, VECTOR_DRIVERS[path.suffix.lower()]))
    if not found:
        raise InvalidInput("The archive holds no file of a supported format (shapefile, GeoTIFF, "
                           "GeoPackage, GeoJSON, KML, FlatGeobuf, CSV)", code="importer_exception")
    return found


# -- vector validation ----------------------------------------------------------------------


@dataclass
class VectorSource:
    """A validated vector layer and what publishing needs to know about it."""

    candidate: Candidate
    source: SourceLayer
    name: str  # suggested layer name (sanitised stem or layer name)
    fields: list[FieldInfo]
    bounds: tuple[float, float, float, float]
    crs_wkt: str
    srid: int | None
    geometry_type: str
    feature_count: int
    charset: str
    values: dict[str, Any]  # attribute columns (pyarrow ChunkedArray or None) by field name
    time_attribute: str | None = None
    time_extent: tuple[Any, Any] | None = None

    kind = "vector"


class PreloadBudget:
    """Bytes of Arrow batches validation may still keep for the stores, over one upload."""

    def __init__(self, limit: int = PRELOAD_BYTES):
        self.left = limit


def inspect_vector(candidate: Candidate, *, charset: str | None, time: bool,
                   budget: PreloadBudget | None = None) -> list[VectorSource]:
    """Validate every layer of a vector candidate; each becomes a dataset. Layers are kept in
    memory for the store's copy while ``budget`` (by default PRELOAD_BYTES per call) lasts."""
    budget = budget or PreloadBudget()
    encoding = _encoding_for(candidate, charset)
    if candidate.driver in TEXT_DRIVERS and encoding != "utf-8":
        candidate = _transcoded(candidate, encoding)
        encoding = "utf-8"
    options = dict(CSV_OPTIONS) if candidate.driver == "CSV" else {}
    try:
        layers = [str(row[0]) for row in pyogrio.list_layers(str(candidate.path))]
    except Exception as exc:
        raise _unreadable(candidate, exc) from None
    if not layers:
        raise InvalidInput(f"{candidate.path.name} holds no layer")
    sources = []
    for layer in layers:
        name = candidate.stem if len(layers) == 1 else layer
        sources.append(_inspect_layer(candidate, layer if len(layers) > 1 else None, name,
                                      encoding, options, time, budget))
    return sources


def _unreadable(candidate: Candidate, exc: Exception) -> InvalidInput:
    what = candidate.driver or "a supported format"
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return InvalidInput(f"{candidate.path.name} could not be read as {what}: {detail}")


def _encoding_for(candidate: Candidate, charset: str | None) -> str:
    """The character set of the attribute text: a shapefile's .cpg, else the upload's
    ``charset``, else UTF-8 (checked strictly, so wrong guesses are refused, not mangled)."""
    cpg = candidate.parts.get(".cpg")
    if cpg is not None:
        declared = cpg.read_text(encoding="ascii", errors="replace").strip()
        try:
            found = normalise_charset(declared)
        except InvalidInput:
            found = None
        if found:
            return found
    return normalise_charset(charset) or "utf-8"


def _transcoded(candidate: Candidate, encoding: str) -> Candidate:
    """GDAL reads GeoJSON and CSV as UTF-8 only: a copy re-encoded from ``encoding``."""
    target = candidate.path.parent / "utf-8" / candidate.path.name
    target.parent.mkdir(exist_ok=True)
    try:
        with candidate.path.open("r", encoding=encoding, newline="") as src, \
                target.open("w", encoding="utf-8", newline="") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{candidate.path.name} is not valid {encoding} text ({exc.reason})",
                           code="invalid_encoding") from None
    return replace(candidate, path=target)


def _inspect_layer(candidate: Candidate, layer: str | None, name: str, encoding: str,
                   options: Mapping[str, str], time: bool, budget: PreloadBudget) -> VectorSource:
    label = candidate.path.name + (f" (layer {layer})" if layer else "")
    shapefile_encoding = encoding if candidate.driver == "ESRI Shapefile" else None
    try:
        info = pyogrio.read_info(str(candidate.path), layer=layer, encoding=shapefile_encoding,
                                 force_feature_count=True, force_total_bounds=True, **options)
    except Exception as exc:
        raise _unreadable(candidate, exc) from None
    if candidate.driver and info["driver"] not in DRIVER_ALIASES.get(candidate.driver, (candidate.driver,)):
        raise InvalidInput(f"{candidate.path.name} is not a valid {candidate.driver} file "
                           f"(GDAL reads it as {info['driver']})")
    if candidate.driver == "ESRI Shapefile":
        check_shapefile_parts(candidate)
    if not info["features"]:
        raise InvalidInput(f"{label} has no features")
    crs_wkt, srid = _crs(info.get("crs"), candidate, label)
    fields = [FieldInfo(str(n), _xsd(t, s)) for n, t, s in
              zip(info["fields"], info["ogr_types"], info["ogr_subtypes"], strict=True)]
    for column in fields:  # names become attribute records and XML element names
        xmlsafe.check_text(column.name, f"{label}: field name {column.name!r}")
    source = SourceLayer(path=str(candidate.path), layer=layer, encoding=shapefile_encoding,
                         open_options=dict(options), crs_wkt=crs_wkt,
                         feature_count=int(info["features"]))
    types, values, preloaded = _read_all(source, fields, label, budget)
    source = replace(source, geometry_type=_geometry_type(types, label), preloaded=preloaded)
    bounds = info.get("total_bounds")
    if bounds is None or not all(np.isfinite(bounds)):
        raise InvalidInput(f"{label} has no usable extent (empty geometries?)")
    result = VectorSource(candidate, source, sanitize_name(name), fields, tuple(map(float, bounds)),
                          crs_wkt, srid, source.geometry_type or "Unknown", int(info["features"]),
                          encoding, values)
    if time:
        _enable_time(result, label)
    return result


def _xsd(ogr_type: str, subtype: str) -> str:
    if ogr_type == "OFTInteger" and subtype == "OFSTBoolean":
        return "xsd:boolean"
    return XSD_TYPES.get(ogr_type, "xsd:string")


def _crs(declared: str | None, candidate: Candidate, label: str) -> tuple[str, int | None]:
    if declared is None:
        if candidate.driver in LONLAT_DRIVERS:
            declared = "EPSG:4326"
        else:
            raise InvalidInput(f"{label} has no coordinate reference system")
    try:
        crs = CRS.from_user_input(declared)
    except CRSError as exc:
        raise InvalidInput(f"{label}: its coordinate reference system is not understood: {exc}") from None
    return crs.to_wkt(), crs.to_epsg(min_confidence=70)


def _read_all(source: SourceLayer, fields: list[FieldInfo], label: str, budget: PreloadBudget
              ) -> tuple[set[str], dict[str, Any], Preloaded | None]:
    """Stream every feature once: the geometry types present (read from the WKB headers), the
    attribute columns (Arrow arrays, for statistics) and, while the budget lasts, the batches
    themselves, which the store then copies instead of reading the file again. Text must be
    valid in the layer's character set: GDAL passes undecodable bytes through untouched, and
    they are caught here instead of being mangled."""
    kinds = GeometryKinds()
    chunks: dict[str, list[Any]] = {f.name: [] for f in fields}
    kept: list[Any] | None = []
    kept_bytes = 0
    encoding = source.encoding if _is_shapefile(source) else None
    try:
        with pyogrio.raw.open_arrow(source.path, layer=source.layer, encoding=encoding,
                                    batch_size=BATCH, use_pyarrow=True,
                                    **source.open_options) as (meta, reader):
            geometry_column = meta.get("geometry_name") or "wkb_geometry"
            schema = reader.schema
            for batch in reader:
                for info in fields:
                    column = batch.column(info.name)
                    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
                        _check_text(column, info.name, label, source.encoding or "utf-8")
                    chunks[info.name].append(column)
                if geometry_column in batch.schema.names:
                    try:
                        kinds.add(_non_empty_codes(batch.column(geometry_column)))
                    except InvalidInput as exc:
                        raise InvalidInput(f"{label}: {exc}") from None
                if kept is not None:
                    kept_bytes += batch.nbytes
                    if kept_bytes <= budget.left:
                        kept.append(batch)
                    else:
                        kept = None
    except InvalidInput:
        raise
    except Exception as exc:
        raise InvalidInput(f"{label} could not be read: {exc}") from None
    columns = {name: pa.chunked_array(parts) if parts else None for name, parts in chunks.items()}
    types = {_TYPE_NAMES[code] for code in kinds.codes}
    preloaded = None
    if kept is not None:
        preloaded = Preloaded(meta, schema, kept)
        budget.left -= kept_bytes
    return types, columns, preloaded


def _non_empty_codes(wkb: Any) -> np.ndarray:
    """ISO type codes of a WKB column, -1 for nulls and empty geometries (a part count of 0:
    9 bytes; an empty point is NaN coordinates)."""
    codes = wkb_type_codes(wkb)
    lengths = pc.binary_length(wkb).to_numpy(zero_copy_only=False)
    codes[np.nan_to_num(lengths, nan=0) <= 9] = -1
    if (codes % 1000 == 1).any():
        empty_points = pc.equal(pc.binary_slice(wkb, 5, 13), NAN_BYTES).to_numpy(zero_copy_only=False)
        codes[(codes % 1000 == 1) & (np.asarray(empty_points, dtype=float) == 1)] = -1
    return codes


def _is_shapefile(source: SourceLayer) -> bool:
    return source.path.lower().endswith(".shp")


def _check_text(column: Any, name: str, label: str, encoding: str) -> None:
    try:
        column.validate(full=True)
    except pa.ArrowInvalid:
        raise InvalidInput(
            f"{label}: the text of attribute {name!r} is not valid {encoding}; send the file's "
            "character set as charset (for example ISO-8859-1 or windows-1252) or add a .cpg file",
            code="invalid_encoding") from None


_TYPE_NAMES = {1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint",
               5: "MultiLineString", 6: "MultiPolygon", 7: "GeometryCollection"}


def _geometry_type(types: set[str], label: str) -> str:
    """One OGC geometry type for the layer; single and multi parts of one kind become multi."""
    if not types:
        raise InvalidInput(f"{label} has no geometries")
    unsupported_types = types - SUPPORTED_TYPES
    if unsupported_types:
        raise InvalidInput(f"{label} has geometries of an unsupported type "
                           f"({', '.join(sorted(unsupported_types))})")
    bases = {t.removeprefix("Multi") for t in types}
    if len(bases) > 1:
        raise InvalidInput(f"{label} mixes geometry types ({', '.join(sorted(types))}); "
                           "publish each type as its own dataset")
    if len(types) == 1:
        return types.pop()
    return "Multi" + bases.pop()


def _enable_time(result: VectorSource, label: str) -> None:
    """time=true: the first date or date-time attribute is the time dimension."""
    for info in result.fields:
        column = result.values.get(info.name)
        if info.type in TIME_TYPES and column is not None and column.null_count < len(column):
            bounds = pc.min_max(column).as_py()
            result.time_attribute = info.name
            result.time_extent = (bounds["min"], bounds["max"])
            return
    raise InvalidInput(f"{label}: time was requested but no attribute holds dates")


def check_shapefile_parts(candidate: Candidate) -> None:
    """The .shx and .dbf must describe the same number of shapes as each other: a .dbf
    of another shapefile would pair attributes with the wrong geometries."""
    shx, dbf = candidate.parts[".shx"], candidate.parts[".dbf"]
    shx_size = shx.stat().st_size
    with dbf.open("rb") as handle:
        header = handle.read(32)
    if shx_size < 100 or (shx_size - 100) % 8 or len(header) < 32:
        raise InvalidInput(f"The shapefile parts of {candidate.path.name} are damaged",
                           code="invalid_shapefile")
    shapes = (shx_size - 100) // 8
    records = int.from_bytes(header[4:8], "little")
    if shapes != records:
        raise InvalidInput(
            f"The parts of {candidate.path.name} do not belong together: the .shx indexes "
            f"{shapes} shapes but the .dbf holds {records} records", code="invalid_shapefile")


# -- raster validation ----------------------------------------------------------------------


@dataclass
class RasterSource:
    candidate: Candidate
    name: str
    bounds: tuple[float, float, float, float]
    crs_wkt: str
    srid: int | None
    info: dict[str, Any]

    kind = "raster"


def inspect_raster(candidate: Candidate) -> RasterSource:
    label = candidate.path.name
    try:
        with rasterio.open(candidate.path) as src:
            if src.driver not in ("GTiff", "COG"):
                raise InvalidInput(f"{label} is not a GeoTIFF (GDAL reads it as {src.driver})")
            if src.crs is None:
                raise InvalidInput(f"{label} has no coordinate reference system")
            if src.width < 1 or src.height < 1 or src.count < 1:
                raise InvalidInput(f"{label} has no pixels")
            if src.transform.is_identity:
                raise InvalidInput(f"{label} is not georeferenced (no geotransform)")
            # Reading a corner block proves the pixel data is readable, not only the header.
            src.read(1, window=((0, min(src.height, 16)), (0, min(src.width, 16))))
            info = {
                "bands": src.count, "dtype": src.dtypes[0], "dtypes": list(src.dtypes),
                "nodata": src.nodata, "width": src.width, "height": src.height,
                "resolution": [abs(src.res[0]), abs(src.res[1])],
                "band_descriptions": [d or f"band_{i + 1}" for i, d in enumerate(src.descriptions)],
                # Approximate band statistics (from overviews or a subsample) let the default
                # style stretch a non-8-bit band between its real values.
                "statistics": [{"min": float(st.min), "max": float(st.max), "mean": float(st.mean),
                                "stddev": float(st.std)} for st in src.stats(approx=True)],
            }
            bounds = tuple(float(v) for v in src.bounds)
            crs_wkt = src.crs.to_wkt()
            srid = src.crs.to_epsg()
    except RasterioError as exc:
        raise InvalidInput(f"{label} could not be read as a GeoTIFF: {exc}") from None
    return RasterSource(candidate, sanitize_name(candidate.stem), bounds, crs_wkt, srid, info)
