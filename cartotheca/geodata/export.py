"""cartotheca.geodata.export: features and rasters out as files: streamed, in bounded memory.

Each writer takes ``ExportLayer``s (a name, the output fields, and an iterable of
``FeatureBatch``es read lazily from the store) and yields bytes. Text formats (GeoJSON, CSV,
KML) are produced batch by batch; formats a library must finish first (zipped Shapefile, Excel)
are written to a temporary file batch by batch, then streamed from it and removed.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyogrio
import rasterio
import shapely
from rasterio.windows import from_bounds
from sqlalchemy import select

from cartotheca.db.models import DatasetAttribute
from cartotheca.geodata.storage import FeatureBatch, FeatureQuery, FieldInfo, stored_layer
from cartotheca.geodata.storage.stores import raster_store, vector_store
from cartotheca.xmlsafe import escape, quoteattr

CHUNK = 1 << 16
EXCEL_CELL_LIMIT = 32767  # the most characters an Excel cell holds


@dataclass
class ExportLayer:
    name: str  # layer name: file, sheet and folder names, feature id prefix
    fields: list[FieldInfo]  # output properties, in order
    geometry_name: str
    geometry_type: str  # OGC name (Point, MultiPolygon, ...)
    batches: Iterable[FeatureBatch]
    epsg: int | None = None  # CRS of the geometries in the batches
    crs_wkt: str | None = None


def _plain(value: Any) -> Any:
    """numpy scalars and NaN → plain Python values (None for missing)."""
    if value is None:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def _rows(batch: FeatureBatch, fields: list[FieldInfo]) -> Iterator[tuple[int, Any, list[Any]]]:
    columns = [batch.properties.get(f.name) for f in fields]
    for i, fid in enumerate(batch.fids):
        yield fid, batch.geometries[i], [_plain(c[i]) if c is not None else None for c in columns]


def _missing(geom: Any) -> bool:
    return geom is None or shapely.is_empty(geom)


# -- GeoJSON --------------------------------------------------------------------------------


def geojson(layers: list[ExportLayer], *, number_matched: int | None = None,
            crs_name: str | None = None, extra: dict[str, Any] | None = None) -> Iterator[bytes]:
    """A FeatureCollection; GeoServer's members (totalFeatures, numberMatched, numberReturned,
    timeStamp, crs) follow the features, so counting happens while streaming."""
    yield b'{"type":"FeatureCollection","features":['
    returned = 0
    for layer in layers:
        for batch in layer.batches:
            parts = []
            for fid, geom, values in _rows(batch, layer.fields):
                geometry = b"null" if _missing(geom) else shapely.to_geojson(geom).encode()
                props = orjson.dumps(dict(zip((f.name for f in layer.fields), values, strict=True)),
                                     default=str)
                prefix = b"," if returned else b""
                parts.append(prefix + b'{"type":"Feature","id":' + orjson.dumps(f"{layer.name}.{fid}")
                             + b',"geometry":' + geometry + b',"geometry_name":'
                             + orjson.dumps(layer.geometry_name) + b',"properties":' + props + b"}")
                returned += 1
            yield b"".join(parts)
    tail: dict[str, Any] = {
        "totalFeatures": number_matched if number_matched is not None else returned,
        "numberMatched": number_matched if number_matched is not None else returned,
        "numberReturned": returned,
        "timeStamp": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
    }
    if crs_name:
        tail["crs"] = {"type": "name", "properties": {"name": crs_name}}
    tail.update(extra or {})
    yield b"]," + orjson.dumps(tail)[1:]


# -- CSV ------------------------------------------------------------------------------------


def csv_(layers: list[ExportLayer]) -> Iterator[bytes]:
    """``FID``, the attributes, then the geometry as WKT in a column named after it."""
    for n, layer in enumerate(layers):
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\r\n")
        if n:
            buffer.write("\r\n")
        writer.writerow(["FID", *(f.name for f in layer.fields), layer.geometry_name])
        for batch in layer.batches:
            for fid, geom, values in _rows(batch, layer.fields):
                wkt = "" if _missing(geom) else shapely.to_wkt(geom, rounding_precision=-1)
                writer.writerow([f"{layer.name}.{fid}", *("" if v is None else _text(v) for v in values),
                                 wkt])
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
        yield buffer.getvalue().encode("utf-8")


def _text(value: Any) -> Any:
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    return value


# -- temporary files ------------------------------------------------------------------------


def stream_file(path: Path | str, *, remove: Path | str | None = None) -> Iterator[bytes]:
    """A file's bytes in chunks; ``remove`` (the file or its folder) is deleted afterwards,
    also when the client goes away mid-download."""
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                yield chunk
    finally:
        if remove is not None:
            target = Path(remove)
            if target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink(missing_ok=True)


def _in_tempdir(build: Callable[[Path], Path]) -> Iterator[bytes]:
    """Build the file now (errors surface before any byte is sent), stream it later."""
    folder = Path(tempfile.mkdtemp(prefix="cartotheca-export-"))
    try:
        result = build(folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return stream_file(result, remove=folder)


# -- Excel ----------------------------------------------------------------------------------


def xlsx(layers: list[ExportLayer]) -> Iterator[bytes]:
    """An Excel 2007+ workbook, one sheet per layer (openpyxl's write-only mode keeps rows on
    disk, not in memory); the geometry is a WKT column."""
    # openpyxl loads with the first Excel export rather than with every server (~0.1 s).
    from openpyxl import Workbook  # noqa: PLC0415

    def build(folder: Path) -> Path:
        book = Workbook(write_only=True)
        for layer in layers:
            sheet = book.create_sheet(title=_sheet_title(layer.name))
            sheet.append(["FID", *(f.name for f in layer.fields), layer.geometry_name])
            for batch in layer.batches:
                for fid, geom, values in _rows(batch, layer.fields):
                    wkt = "" if _missing(geom) else shapely.to_wkt(geom, rounding_precision=-1)
                    sheet.append([f"{layer.name}.{fid}", *(_cell(v) for v in values),
                                  wkt[:EXCEL_CELL_LIMIT]])
        path = folder / "features.xlsx"
        book.save(path)
        return path

    return _in_tempdir(build)


def _sheet_title(name: str) -> str:
    for ch in "[]:*?/\\":
        name = name.replace(ch, "_")
    return name[:31] or "features"


def _cell(value: Any) -> Any:
    if isinstance(value, str):
        return value[:EXCEL_CELL_LIMIT]
    if isinstance(value, bytes):
        return value.hex()
    return value


# -- KML ------------------------------------------------------------------------------------

KML_TYPES = {"xsd:int": "int", "xsd:long": "int", "xsd:short": "int", "xsd:double": "double",
             "xsd:float": "float", "xsd:boolean": "bool"}


def _kml_coords(coords: np.ndarray) -> str:
    return " ".join(f"{x!r},{y!r}" for x, y in coords[:, :2].tolist())


def kml_geometry(geom: Any) -> str:
    """A lon/lat shapely geometry as KML."""
    kind = geom.geom_type
    if kind == "Point":
        return f"<Point><coordinates>{_kml_coords(shapely.get_coordinates(geom))}</coordinates></Point>"
    if kind in ("LineString", "LinearRing"):
        return (f"<LineString><coordinates>{_kml_coords(shapely.get_coordinates(geom))}"
                "</coordinates></LineString>")
    if kind == "Polygon":
        def ring(r: Any, tag: str) -> str:
            return (f"<{tag}><LinearRing><coordinates>{_kml_coords(shapely.get_coordinates(r))}"
                    f"</coordinates></LinearRing></{tag}>")
        inner = "".join(ring(r, "innerBoundaryIs") for r in geom.interiors)
        return f"<Polygon>{ring(geom.exterior, 'outerBoundaryIs')}{inner}</Polygon>"
    parts = "".join(kml_geometry(g) for g in geom.geoms if not g.is_empty)
    return f"<MultiGeometry>{parts}</MultiGeometry>"


def kml(layers: list[ExportLayer]) -> Iterator[bytes]:
    """KML 2.2 (geometries must be lon/lat WGS84): a Folder per layer, attributes as
    ExtendedData of a Schema, the first text attribute as the placemark name."""
    yield (b'<?xml version="1.0" encoding="UTF-8"?>\n'
           b'<kml xmlns="http://www.opengis.net/kml/2.2"><Document>')
    for layer in layers:
        schema_id = f"{layer.name}_schema"
        simple = "".join(f"<SimpleField name={quoteattr(f.name)} type="
                         f"\"{KML_TYPES.get(f.type, 'string')}\"/>" for f in layer.fields)
        yield (f"<Schema name={quoteattr(layer.name)} id={quoteattr(schema_id)}>{simple}</Schema>"
               f"<Folder><name>{escape(layer.name)}</name>").encode()
        label = next((i for i, f in enumerate(layer.fields) if f.type == "xsd:string"), None)
        for batch in layer.batches:
            parts = []
            for fid, geom, values in _rows(batch, layer.fields):
                name = values[label] if label is not None and values[label] is not None else \
                    f"{layer.name}.{fid}"
                data = "".join(f"<SimpleData name={quoteattr(f.name)}>{escape(str(_text(v)))}</SimpleData>"
                               for f, v in zip(layer.fields, values, strict=True) if v is not None)
                geometry = "" if _missing(geom) else kml_geometry(geom)
                parts.append(f"<Placemark id={quoteattr(f'{layer.name}.{fid}')}><name>{escape(str(name))}"
                             f"</name><ExtendedData><SchemaData schemaUrl=\"#{schema_id}\">{data}"
                             f"</SchemaData></ExtendedData>{geometry}</Placemark>")
            yield "".join(parts).encode("utf-8")
        yield b"</Folder>"
    yield b"</Document></kml>"


# -- Shapefile ------------------------------------------------------------------------------

ARROW_TYPES = {"xsd:int": "int32", "xsd:short": "int32", "xsd:long": "int64", "xsd:integer": "int64",
               "xsd:double": "float64", "xsd:float": "float64", "xsd:decimal": "float64",
               "xsd:boolean": "bool", "xsd:date": "date32", "xsd:dateTime": "timestamp",
               "xsd:string": "string"}


def _arrow_table(batch: FeatureBatch, fields: list[FieldInfo], shapefile: bool) -> Any:
    columns, names = [], []
    for f in fields:
        kind = ARROW_TYPES.get(f.type, "string")
        values = [_plain(v) for v in batch.properties.get(f.name, [None] * len(batch))]
        if kind == "timestamp" and shapefile:
            kind = "string"  # a shapefile has dates but no date-times: keep the full value
        if kind == "string":
            values = [None if v is None else str(_text(v)) for v in values]
            columns.append(pa.array(values, type=pa.string()))
        elif kind == "timestamp":
            columns.append(pa.array(values, type=pa.timestamp("ms")))
        else:
            columns.append(pa.array(values, type=getattr(pa, kind)()))
        names.append(f.name)
    wkb = [None if _missing(g) else shapely.to_wkb(g) for g in batch.geometries]
    columns.append(pa.array(wkb, type=pa.binary()))
    names.append("geometry")
    field_list = [pa.field(n, c.type) for n, c in zip(names[:-1], columns[:-1], strict=True)]
    field_list.append(pa.field("geometry", pa.binary(), metadata={"ARROW:extension:name": "geoarrow.wkb"}))
    return pa.Table.from_arrays(columns, schema=pa.schema(field_list))


def _shapefile_type(geometry_type: str) -> str:
    # A shapefile's polygon (line) type holds single and multi parts alike.
    return {"Polygon": "MultiPolygon", "LineString": "MultiLineString"}.get(geometry_type, geometry_type)


def write_vector_file(layer: ExportLayer, path: Path, driver: str, **options: Any) -> None:
    """Append ``layer``'s batches to a new OGR file, one Arrow batch at a time."""
    shapefile = driver == "ESRI Shapefile"
    geometry_type = _shapefile_type(layer.geometry_type) if shapefile else layer.geometry_type
    crs = f"EPSG:{layer.epsg}" if layer.epsg else (layer.crs_wkt or None)
    wrote = False
    for batch in layer.batches:
        if not len(batch) and wrote:
            continue
        pyogrio.write_arrow(_arrow_table(batch, layer.fields, shapefile), str(path), layer=layer.name,
                            driver=driver, geometry_name="geometry", geometry_type=geometry_type,
                            crs=crs, append=wrote, **options)
        wrote = True
    if not wrote:
        empty = FeatureBatch(fids=[], geometries=np.array([], dtype=object),
                             properties={f.name: [] for f in layer.fields})
        pyogrio.write_arrow(_arrow_table(empty, layer.fields, shapefile), str(path), layer=layer.name,
                            driver=driver, geometry_name="geometry", geometry_type=geometry_type,
                            crs=crs, **options)


def shapefile_zip(layers: list[ExportLayer]) -> Iterator[bytes]:
    """Each layer as a shapefile (UTF-8 attributes, declared in a .cpg), all in one zip."""
    def build(folder: Path) -> Path:
        parts = folder / "parts"
        parts.mkdir()
        for layer in layers:
            write_vector_file(layer, parts / f"{layer.name}.shp", "ESRI Shapefile",
                              encoding="UTF-8")
            cpg = parts / f"{layer.name}.cpg"
            if not cpg.exists():
                cpg.write_text("UTF-8")
        archive = folder / "features.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for part in sorted(parts.iterdir()):
                zf.write(part, part.name)
        return archive

    return _in_tempdir(build)


# -- rasters --------------------------------------------------------------------------------


def geotiff_subset(path: str, bounds: tuple[float, float, float, float]) -> Iterator[bytes]:
    """The part of a GeoTIFF inside ``bounds`` (its own CRS), as a tiled GeoTIFF."""
    def build(folder: Path) -> Path:
        out = folder / "subset.tif"
        with rasterio.open(path) as src:
            window = from_bounds(*bounds, transform=src.transform).round_offsets().round_lengths()
            window = window.intersection(rasterio.windows.Window(0, 0, src.width, src.height))
            profile = src.profile.copy()
            profile.update(driver="GTiff", width=window.width, height=window.height, tiled=True,
                           blockxsize=256, blockysize=256, compress="deflate",
                           transform=src.window_transform(window))
            with rasterio.open(out, "w", **profile) as dst:
                for _, block in dst.block_windows(1):
                    source = rasterio.windows.Window(block.col_off + window.col_off,
                                                     block.row_off + window.row_off,
                                                     block.width, block.height)
                    dst.write(src.read(window=source), window=block)
        return out

    return _in_tempdir(build)


def file_size(path: str) -> int:
    return os.stat(path).st_size


# -- whole-dataset downloads ----------------------------------------------------------------


@dataclass
class Download:
    chunks: Iterator[bytes]
    media_type: str
    filename: str
    size: int | None = None


def dataset_fields(session: Any, dataset: Any) -> list[FieldInfo]:
    """A dataset's attributes as stored at publication, in display order."""
    rows = session.execute(
        select(DatasetAttribute.attribute, DatasetAttribute.attribute_type)
        .where(DatasetAttribute.dataset_id == dataset.resource_id)
        .order_by(DatasetAttribute.display_order, DatasetAttribute.id))
    # GeoNode lists the geometry among the attributes (type gml:...): it is not a field
    return [FieldInfo(name, kind or "xsd:string") for name, kind in rows
            if not (kind or "").startswith("gml:")]


def dataset_download(session: Any, settings: Any, dataset: Any) -> Download:
    """The default download: a vector dataset as a zipped shapefile in its native CRS, a
    raster as its stored GeoTIFF (a COG, readable by any GeoTIFF reader)."""
    if dataset.storage == "cog":
        chunks, size = raster_store(settings).open_bytes(dataset.location)
        return Download(chunks, "image/tiff", f"{dataset.name}.tif", size)
    store = vector_store(settings, dataset.storage)
    stored = stored_layer(dataset)
    fields = dataset_fields(session, dataset)
    layer = ExportLayer(name=dataset.name, fields=fields, geometry_name=dataset.geometry_column or "geom",
                        geometry_type=dataset.geometry_type or "Unknown",
                        batches=store.iter_batches(stored, FeatureQuery(properties=[f.name for f in fields])),
                        epsg=dataset.native_srid, crs_wkt=dataset.native_crs)
    return Download(shapefile_zip([layer]), "application/zip", f"{dataset.name}.zip")
