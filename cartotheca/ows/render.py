"""cartotheca.ows.render: map images of datasets with mapnik (WMS, tiles, thumbnails, downloads).

A mapnik ``Map`` (datasources opened, styles compiled) costs far more to build than a small
render, so built maps are kept in a pool keyed by what they draw: the datasets (and when they
last changed), their styles, the TIME slice and the output CRS. mapnik maps are not thread-safe,
so a map is taken out of the pool for the length of one render and put back afterwards; two
threads drawing the same layers build two maps.

Vector layers read the store's own datasource (GeoPackage through OGR, PostGIS through mapnik's
``postgis`` plugin, both using their spatial index); rasters are COGs read by mapnik's ``gdal``
plugin, which picks overviews. A map with a raster in the object store is built per request
over the view's window of it (``raster_window``), not pooled. A TIME slice becomes SQL on the
datasource, because mapnik's expressions know no dates.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import mapnik
import pyproj
from lxml import etree
from sqlalchemy import inspect as sa_inspect
from sqlalchemy import select
from sqlalchemy.orm import object_session

from cartotheca.db.models import Style
from cartotheca.errors import InvalidInput
from cartotheca.geodata.storage import stored_layer
from cartotheca.geodata.storage.stores import raster_store, vector_store
from cartotheca.ows import raster_window
from cartotheca.ows.crs import parse_crs
from cartotheca.ows.map_encoding import encode_png, render_pdf
from cartotheca.settings import Settings
from cartotheca.styling import sld as sldlib
from cartotheca.styling.defaults import default_sld
from cartotheca.timeutil import format_time, parse_time, to_datetime

# MIME type → mapnik encoder. PNG at zlib level 1: on 256 px tiles it encodes 2-3 times
# faster than the default level for some 20% more bytes, and encoding is a large share of
# a small map's time. "png8" is a 256-colour palette.
IMAGE_FORMATS = {
    "image/png": "png32:z=1", "image/png; mode=32bit": "png32:z=1", "image/png32": "png32:z=1",
    "image/png8": "png8:z=1", "image/png; mode=8bit": "png8:z=1",
    "image/jpeg": "jpeg85", "image/jpg": "jpeg85",
    "image/webp": "webp",
    "application/pdf": "pdf",
}
OPAQUE_FORMATS = {"jpeg85"}
# The 256-colour PNG under the name GeoServer advertises and answers with; "image/png8" is
# accepted on input too.
PNG8 = "image/png; mode=8bit"
POOL_SIZE = 64  # idle maps kept, over all keys
BUFFER_PIXELS = 32  # at most: features outside the view whose marker, label or outline reaches in


@dataclass
class LayerSpec:
    """One layer of a render: a dataset, its SLD (None: its default style), an optional TIME
    value (WMS syntax) and an opacity."""

    resource: Any
    dataset: Any
    sld: str | None = None
    time: str | None = None
    opacity: float = 1.0
    sample: int = 1  # draw only features whose fid is a multiple of this (thumbnails of big layers)


def available_formats() -> list[str]:
    formats = ["image/png", PNG8, "image/jpeg"]
    if mapnik.has_webp():
        formats.append("image/webp")
    if mapnik.has_cairo():
        formats.append("application/pdf")
    return formats


# -- CRS --------------------------------------------------------------------------------------

def dataset_srs(dataset: Any) -> str:
    if dataset.native_srid:
        return f"epsg:{int(dataset.native_srid)}"
    if dataset.native_crs:
        return _wkt_to_proj(dataset.native_crs)
    return "epsg:4326"


@lru_cache(maxsize=128)
def _wkt_to_proj(wkt: str) -> str:
    crs = pyproj.CRS.from_user_input(wkt)
    epsg = crs.to_epsg()
    return f"epsg:{epsg}" if epsg else crs.to_proj4()


# -- styles -----------------------------------------------------------------------------------

def _stored_styles(dataset: Any) -> list[tuple[str, str, str]]:
    """(name, workspace, sld_body) of the dataset's styles, default first: the loaded
    relationship when the caller loaded it, else one query in the row's own session."""
    state = sa_inspect(dataset, raiseerr=False)
    if state is None:
        return []
    if "styles" not in state.unloaded:
        styles = sorted(dataset.styles, key=lambda s: (not s.is_default, s.id))
        return [(s.name, s.workspace, s.sld_body) for s in styles]
    session = object_session(dataset)
    if session is None:
        return []
    stmt = select(Style.name, Style.workspace, Style.sld_body).where(
        Style.dataset_id == dataset.resource_id).order_by(Style.is_default.desc(), Style.id)
    return [tuple(row) for row in session.execute(stmt)]


class UnknownStyle(InvalidInput):
    """A style name the dataset does not have (WMS: StyleNotDefined)."""


def dataset_sld(dataset: Any, style_name: str | None = None) -> str:
    """The SLD of a dataset's style named ``style_name`` (None: its default), read through
    the session the dataset row belongs to; a generated default if it has none stored. The
    dataset's own name always names its default style (capabilities list it so when the
    dataset has no stored style)."""
    own_names = (dataset.name, f"{dataset.workspace}:{dataset.name}")
    rows = _stored_styles(dataset)
    for name, workspace, body in rows:
        if style_name in (name, f"{workspace}:{name}"):
            return body
    if rows and (style_name is None or style_name in own_names):
        return rows[0][2]  # default first; with none marked default, the first style
    if style_name is not None and style_name not in own_names:
        raise UnknownStyle(f"Style {style_name} is not defined for {dataset.workspace}:{dataset.name}")
    return generated_sld(dataset)


def generated_sld(dataset: Any) -> str:
    """The default style of a dataset that has none stored."""
    kind = "raster" if dataset.storage == "cog" else "vector"
    return default_sld(dataset.name, kind, dataset.geometry_type, dataset.raster_info)


# -- TIME -------------------------------------------------------------------------------------

_TIME_VALUES: OrderedDict[tuple, list[str]] = OrderedDict()
_TIME_LOCK = threading.Lock()


def time_values(settings: Settings, resource: Any, dataset: Any) -> list[str]:
    """The distinct TIME values of a time-enabled dataset, ISO 8601 UTC, ascending; read from
    the store once per dataset version."""
    key = (_settings_key(settings), dataset.resource_id, getattr(resource, "last_updated", None),
           dataset.time_attribute)
    with _TIME_LOCK:
        if key in _TIME_VALUES:
            _TIME_VALUES.move_to_end(key)
            return _TIME_VALUES[key]
    if not dataset.time_attribute or dataset.storage == "cog":
        return []
    values = vector_store(settings, dataset.storage).distinct(stored_layer(dataset), dataset.time_attribute)
    times = sorted({t for t in (to_datetime(v) for v in values) if t is not None})
    result = [format_time(t) for t in times]
    with _TIME_LOCK:
        _TIME_VALUES[key] = result
        while len(_TIME_VALUES) > 256:
            _TIME_VALUES.popitem(last=False)
    return result


def _time_params(params: dict[str, Any], dataset: Any, value: str) -> dict[str, Any]:
    """The datasource restricted to features whose [time, time_end] meets the TIME value."""
    intervals = parse_time(value)
    start_col = dataset.time_attribute
    end_col = dataset.time_end_attribute or start_col
    kind = params.get("type")
    if kind == "ogr":
        def norm(col: str) -> str:
            return f"strftime('%Y-%m-%dT%H:%M:%f', {_ident(col)})"

        def lit(value: dt.datetime) -> str:
            return "'" + value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}'"
    elif kind == "postgis":
        def norm(col: str) -> str:
            return f"CAST({_ident(col)} AS timestamp)"

        def lit(value: dt.datetime) -> str:
            return "TIMESTAMP '" + value.strftime("%Y-%m-%d %H:%M:%S.%f") + "'"
    else:
        raise InvalidInput(f"TIME cannot be applied to a {kind} datasource")
    start, end = norm(start_col), f"COALESCE({norm(end_col)}, {norm(start_col)})"
    where = " OR ".join(f"({start} <= {lit(hi)} AND {end} >= {lit(lo)})" for lo, hi in intervals)
    out = dict(params)
    if kind == "ogr":
        layer = out.pop("layer", None) or dataset.layer
        out.pop("layer_by_index", None)
        out["layer_by_sql"] = f"SELECT * FROM {_ident(layer)} WHERE {where}"
    else:
        out["table"] = f"(SELECT * FROM {out['table']} WHERE {where}) AS time_slice"
    return out


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# -- map building -----------------------------------------------------------------------------

def _data_version(layer_key: tuple) -> tuple:
    """What in a layer's key names its data: storage, location, layer and last update."""
    return layer_key[1:5]


def _layer_key(spec: LayerSpec, sld: str) -> tuple:
    dataset, resource = spec.dataset, spec.resource
    return (dataset.resource_id, dataset.storage, dataset.location, dataset.layer,
            getattr(resource, "last_updated", None), hashlib.sha1(sld.encode()).hexdigest(),
            spec.time, round(float(spec.opacity), 3), spec.sample)


def _datasource(settings: Settings, spec: LayerSpec, style: sldlib.UserStyle,
                file: str | None = None) -> dict[str, Any]:
    dataset = spec.dataset
    if dataset.storage == "cog":
        params: dict[str, Any] = {"type": "gdal",
                                  "file": file or raster_store(settings).path(dataset.location)}
        colorized = any(el.find("RasterColorizer") is not None
                        for rule in style.rules for el in rule.symbolizers)
        if colorized or style.raster_band:
            # mapnik colours raw values only when one band is read as data
            params["band"] = str(style.raster_band or 1)
        return params
    params = dict(vector_store(settings, dataset.storage).mapnik_datasource(stored_layer(dataset)))
    resource = spec.resource
    if params.get("type") == "postgis" and "extent" not in params and resource.bbox_x0 is not None:
        # Saves mapnik an extent query over the whole table when the map is built
        params["extent"] = f"{resource.bbox_x0},{resource.bbox_y0},{resource.bbox_x1},{resource.bbox_y1}"
    if spec.time and dataset.has_time and dataset.time_attribute:
        params = _time_params(params, dataset, spec.time)
    elif spec.sample > 1:
        params = _sample_params(params, dataset, int(spec.sample))
        if "extent" not in params and resource.bbox_x0 is not None:
            # An SQL layer has no stored extent: without one, mapnik reads the sample to find it
            params["extent"] = f"{resource.bbox_x0},{resource.bbox_y0},{resource.bbox_x1},{resource.bbox_y1}"
    return params


def _sample_params(params: dict[str, Any], dataset: Any, step: int) -> dict[str, Any]:
    """The datasource restricted to every ``step``-th feature (by fid, so spread evenly)."""
    fid = _ident(dataset.fid_column or "fid")
    out = dict(params)
    if out.get("type") == "ogr":
        layer = out.pop("layer", None) or dataset.layer
        out.pop("layer_by_index", None)
        # The fids picked in a subquery: GDAL then reads only those rows (the same filter put
        # directly on the layer's SELECT made it read every feature, ten times slower)
        out["layer_by_sql"] = (f"SELECT * FROM {_ident(layer)} WHERE {fid} IN "
                               f"(SELECT {fid} FROM {_ident(layer)} WHERE {fid} % {step} = 0)")
    elif out.get("type") == "postgis":
        out["table"] = f"(SELECT * FROM {out['table']} WHERE {fid} % {step} = 0) AS sample"
    return out


def _reach(style_el: etree._Element) -> float | None:
    """How many pixels a style draws beyond a feature's geometry (half an outline, a marker's
    size), or None when that is not known (labels, images, rasters, sizes from expressions)."""
    reach = 0.0
    for symbolizer in style_el.iter():
        tag = symbolizer.tag if isinstance(symbolizer.tag, str) else ""
        if not tag.endswith("Symbolizer"):
            continue
        get = symbolizer.get
        try:
            if tag == "PolygonSymbolizer":
                reach = max(reach, 1.0)  # anti-aliased edge
            elif tag == "LineSymbolizer":
                reach = max(reach, float(get("stroke-width", 1)) / 2 + abs(float(get("offset", 0))) + 1)
            elif tag == "MarkersSymbolizer" and (get("width") or get("height")):
                size = max(float(get("width") or 0), float(get("height") or 0))
                if get("file") and not get("width"):
                    return None  # an image scaled to a height: its width is the image's
                # half the diagonal, so a rotated marker is covered too
                reach = max(reach, size * 0.7072 + float(get("stroke-width", 0)) + 1)
            else:
                return None
        except ValueError:
            return None
    return reach


def _buffer_pixels(reaches: list[float | None]) -> int:
    """The map's buffer: features up to this many pixels outside the view are read, so their
    symbols are drawn where they reach into it. Reading a wider box than the symbols need costs
    time on small views (a 32 px buffer reads 56% more area of a 256 px map)."""
    if not reaches or any(r is None for r in reaches):
        return BUFFER_PIXELS
    return min(BUFFER_PIXELS, math.ceil(max(reaches)) + 1)  # type: ignore[type-var]


def _map_xml(settings: Settings, specs: list[LayerSpec], slds: list[str], srs: str,
             files: dict[int, str]) -> str:
    root = etree.Element("Map", srs=srs)
    layers = []
    reaches: list[float | None] = []
    for index, (spec, text) in enumerate(zip(specs, slds, strict=True)):
        style = sldlib.first_user_style(text)
        names = []
        for style_el in sldlib.mapnik_styles(style, f"l{index}", spec.opacity):
            root.append(style_el)
            names.append(style_el.get("name"))
            reaches.append(None if spec.dataset.storage == "cog" else _reach(style_el))
        layer = etree.Element("Layer", name=f"l{index}", srs=dataset_srs(spec.dataset))
        for name in names:
            etree.SubElement(layer, "StyleName").text = name
        datasource = etree.SubElement(layer, "Datasource")
        for key, value in _datasource(settings, spec, style, files.get(index)).items():
            etree.SubElement(datasource, "Parameter", name=str(key)).text = str(value)
        layers.append(layer)
    for layer in layers:
        root.append(layer)
    root.set("buffer-size", str(_buffer_pixels(reaches)))
    return etree.tostring(root, encoding="unicode")


class MapPool:
    """Idle mapnik maps by key, least recently used dropped first."""

    def __init__(self, size: int = POOL_SIZE):
        self.size = size
        self._idle: OrderedDict[tuple, list[mapnik.Map]] = OrderedDict()
        self._count = 0
        self._lock = threading.Lock()

    @contextmanager
    def map(self, key: tuple, build: Callable[[], mapnik.Map]) -> Iterator[mapnik.Map]:
        with self._lock:
            idle = self._idle.get(key)
            m = idle.pop() if idle else None
            if idle is not None and not idle:
                del self._idle[key]
            if m is not None:
                self._count -= 1
        if m is None:
            self._drop_superseded(key)
            m = build()
        yield m
        with self._lock:
            self._idle.setdefault(key, []).append(m)
            self._idle.move_to_end(key)
            self._count += 1
            while self._count > self.size:
                _, maps = next(iter(self._idle.items()))
                maps.pop(0)
                self._count -= 1
                if not maps:
                    self._idle.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._idle.clear()
            self._count = 0

    def _drop_superseded(self, key: tuple) -> None:
        """Drop the idle maps drawing another version of a dataset ``key`` draws (other data,
        another update). Another process may have overwritten it, so this process was never
        told: the first map it builds of the new version closes the old ones, which no request
        asks for again, instead of keeping their datasources open until they are the least
        recently used."""
        current = {layer[0]: _data_version(layer) for layer in key[2]}
        with self._lock:
            for other in [k for k in self._idle if k != key and any(
                    current.get(layer[0], _data_version(layer)) != _data_version(layer)
                    for layer in k[2])]:
                self._count -= len(self._idle.pop(other))

    def forget(self, storage: str, location: str) -> None:
        """Drop the idle maps drawing data at ``location``: they hold its file open."""
        with self._lock:
            for key in [k for k in self._idle
                        if any(layer[1] == storage and layer[2] == location for layer in k[2])]:
                self._count -= len(self._idle.pop(key))


_POOL = MapPool()


def forget_data(storage: str, location: str) -> None:
    """Stored data was dropped: close the pooled maps that hold it open, so its space comes
    back at once (handed to the catalogue at the composition root as ``ingest.Dropped``)."""
    _POOL.forget(storage, location)


def clear_cache() -> None:
    """Drop every built map (after data files were replaced or removed)."""
    _POOL.clear()


def _build(settings: Settings, specs: list[LayerSpec], slds: list[str], srs: str,
           files: dict[int, str] | None = None) -> mapnik.Map:
    """``files``: local windows of rasters (by layer position) read instead of their store."""
    m = mapnik.Map(256, 256)
    try:
        mapnik.load_map_from_string(m, _map_xml(settings, specs, slds, srs, files or {}), False, "")
    except RuntimeError as exc:
        raise RenderError(f"The map could not be built: {exc}") from None
    m.aspect_fix_mode = mapnik.aspect_fix_mode.RESPECT
    return m


class RenderError(InvalidInput):
    """mapnik refused a style or could not open a datasource."""


# -- rendering --------------------------------------------------------------------------------

def render_image(settings: Settings, layers: list[LayerSpec], bbox: tuple, crs: str, width: int,
                 height: int, *, image_format: str = "image/png", transparent: bool = True,
                 bgcolor: str = "#ffffff") -> bytes:
    """An image of ``layers`` (first at the bottom) over ``bbox`` (x/y order, in ``crs`` units)."""
    encoder = IMAGE_FORMATS.get(image_format.lower().replace(" ", "").replace(";mode", "; mode"))
    if encoder is None or (encoder == "pdf" and not mapnik.has_cairo()):
        raise InvalidInput(f"Image format {image_format} is not supported")
    minx, miny, maxx, maxy = (float(v) for v in bbox)
    if not (maxx > minx and maxy > miny):
        raise InvalidInput("The bounding box is empty or inverted")
    srs = parse_crs(crs).srs
    slds = [spec.sld or dataset_sld(spec.dataset) for spec in layers]
    key = (srs, _settings_key(settings),
           tuple(_layer_key(spec, text) for spec, text in zip(layers, slds, strict=True)))
    opaque = not transparent or encoder in OPAQUE_FORMATS
    background = mapnik.Color(bgcolor) if opaque else mapnik.Color(0, 0, 0, 0)

    def draw(m: mapnik.Map) -> Any:
        m.resize(width, height)
        m.zoom_to_box(mapnik.Box2d(minx, miny, maxx, maxy))
        m.background = background
        if encoder == "pdf":
            return render_pdf(m)
        image = mapnik.Image(width, height)
        try:
            mapnik.render(m, image)
        except RuntimeError as exc:
            raise RenderError(f"Rendering failed: {exc}") from None
        return image

    datasets = [spec.dataset for spec in layers]
    if raster_window.needs_windows(settings, datasets):
        with raster_window.local_windows(settings, datasets, (minx, miny, maxx, maxy), srs, width, height,
                                         BUFFER_PIXELS) as files:
            image = draw(_build(settings, layers, slds, srs, files))
    else:
        with _POOL.map(key, lambda: _build(settings, layers, slds, srs)) as m:
            image = draw(m)
    if isinstance(image, bytes):
        return image  # a PDF
    if encoder == "png32:z=1":
        return encode_png(image, alpha=not opaque)
    if opaque and encoder.startswith("png"):
        encoder += ":t=0"  # no alpha channel: smaller, and faster to encode
    return image.to_string(encoder)


def _settings_key(settings: Settings) -> tuple:
    return (str(settings.DATA_DIR), settings.DATASTORE_URL, str(settings.raster_dir))


@lru_cache(maxsize=64)
def _transformer(src: str, dst: str) -> pyproj.Transformer:
    return pyproj.Transformer.from_crs(src, dst, always_xy=True)


def transform_point(x: float, y: float, src: str, dst: str) -> tuple[float, float]:
    """(x, y) from one CRS (``parse_crs`` names or mapnik srs) to another, x/y order."""
    return _transformer(_pyproj_name(src), _pyproj_name(dst)).transform(x, y)


def transform_points(x: Any, y: Any, src: str, dst: str) -> tuple[Any, Any]:
    """Coordinate arrays from one CRS to another, x/y order."""
    return _transformer(_pyproj_name(src), _pyproj_name(dst)).transform(x, y)


def _pyproj_name(srs: str) -> str:
    return srs.upper() if srs.lower().startswith("epsg:") else srs


