"""cartotheca.ows.featureinfo: what lies under a map pixel (WMS GetFeatureInfo), and its formats.

Vector layers are queried through the store with a box of a few pixels around the clicked point
(the spatial index narrows it, an exact intersection test follows); rasters answer their band
values at the point. Answers come as text, HTML (a dataset's ``featureinfo_custom_template`` when
it has one), GeoJSON or GML 2, the format QGIS asks for first.
"""

from __future__ import annotations

import datetime as dt
import decimal
import html
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import rasterio
import shapely
from rasterio.windows import Window
from shapely.geometry import box, mapping

from cartotheca import siteurl, timeutil
from cartotheca.geodata.storage import FeatureQuery, stored_layer
from cartotheca.geodata.storage.stores import raster_store, vector_store
from cartotheca.ows import render
from cartotheca.ows.crs import CRSInfo
from cartotheca.xmlsafe import escape, quoteattr

FORMATS = {"text/plain", "text/html", "application/json", "application/vnd.ogc.gml",
           "application/vnd.ogc.gml/3.1.1", "application/geojson", "text/xml"}
GEONODE_NS = "http://www.geonode.org/"


@dataclass
class Feature:
    fid: str
    geometry: Any  # shapely geometry in the map's CRS, or None
    properties: dict[str, Any]


@dataclass
class LayerResult:
    name: str  # the layer's alternate
    dataset: Any
    crs: str  # "EPSG:4326" ... of the geometries
    features: list[Feature] = field(default_factory=list)


def query_vector(settings: Any, resource: Any, dataset: Any, area: tuple[float, float, float, float],
                 crs: CRSInfo, count: int, time: str | None, hidden: set[str]) -> LayerResult:
    """Features of ``dataset`` meeting ``area`` (a box in the map CRS, x/y order)."""
    result = LayerResult(resource.alternate or f"{dataset.workspace}:{dataset.name}", dataset, crs.code)
    native_srs = render.dataset_srs(dataset)
    native_area = _box_to(area, crs.srs, native_srs)
    target = shapely.segmentize(native_area, max(native_area.length / 64, 1e-12))
    store = vector_store(settings, dataset.storage)
    intervals = timeutil.parse_time(time) if time and dataset.has_time and dataset.time_attribute else None
    query = FeatureQuery(
        bbox=native_area.bounds,
        geometry_predicate=lambda geoms: np.asarray(shapely.intersects(geoms, target), dtype=bool),
        limit=None if intervals else count,
    )
    batch = store.query(stored_layer(dataset), query)
    names = [name for name in batch.properties if name not in hidden]
    reproject = native_srs != crs.srs
    for index, fid in enumerate(batch.fids):
        props = {name: batch.properties[name][index] for name in batch.properties}
        if intervals is not None and not timeutil.time_matches(
                props.get(dataset.time_attribute), props.get(dataset.time_end_attribute or ""), intervals):
            continue
        geometry = batch.geometries[index]
        if geometry is not None and reproject:
            geometry = shapely.transform(geometry, _vector_transform(native_srs, crs.srs),
                                         interleaved=False)
        result.features.append(Feature(f"{dataset.name}.{fid}", geometry,
                                       {name: props[name] for name in names}))
        if len(result.features) >= count:
            break
    return result


def _vector_transform(src: str, dst: str):
    def apply(x, y):
        return render.transform_points(x, y, src, dst)
    return apply


def _box_to(area: tuple[float, float, float, float], src: str, dst: str) -> Any:
    polygon = box(*area)
    if src == dst:
        return polygon
    dense = shapely.segmentize(polygon, max(polygon.length / 64, 1e-12))
    return shapely.transform(dense, _vector_transform(src, dst), interleaved=False)


def query_raster(settings: Any, resource: Any, dataset: Any, x: float, y: float,
                 crs: CRSInfo) -> LayerResult:
    """The raster's band values at (x, y) in the map CRS; no feature on nodata or outside."""
    result = LayerResult(resource.alternate or f"{dataset.workspace}:{dataset.name}", dataset, crs.code)
    with raster_store(settings).reading(dataset.location) as path, rasterio.open(path) as src:
        native = f"epsg:{src.crs.to_epsg()}" if src.crs and src.crs.to_epsg() else render.dataset_srs(dataset)
        nx, ny = render.transform_point(x, y, crs.srs, native) if native != crs.srs else (x, y)
        row, col = src.index(nx, ny)
        if not (0 <= row < src.height and 0 <= col < src.width):
            return result
        values = src.read(window=Window(col, row, 1, 1), masked=True)[:, 0, 0]
        if np.ma.is_masked(values) and np.ma.getmaskarray(values).all():
            return result
        names = _band_names(src.count, src.dtypes[0], src.descriptions)
        props = {name: (None if np.ma.is_masked(v) else v.item())
                 for name, v in zip(names, values, strict=True)}
    result.features.append(Feature(f"{dataset.name}.pixel", shapely.Point(x, y), props))
    return result


def _band_names(count: int, dtype: str, descriptions: tuple) -> list[str]:
    if count == 1:
        return [descriptions[0] or "GRAY_INDEX"]
    if dtype == "uint8" and count in (3, 4):
        return ["RED_BAND", "GREEN_BAND", "BLUE_BAND", "ALPHA_BAND"][:count]
    return [descriptions[i] or f"BAND_{i + 1}" for i in range(count)]


# -- output formats ---------------------------------------------------------------------------

def encode(results: list[LayerResult], info_format: str, settings: Any) -> tuple[bytes, str]:
    fmt = info_format.lower().split(";")[0].strip()
    if fmt in ("application/json", "application/geojson"):
        return _json(results).encode(), "application/json"
    if fmt == "text/html":
        return _html(results).encode(), "text/html; charset=utf-8"
    if fmt in ("application/vnd.ogc.gml", "application/vnd.ogc.gml/3.1.1", "text/xml"):
        return _gml(results, settings).encode(), "application/vnd.ogc.gml"
    return _text(results).encode(), "text/plain; charset=utf-8"


def _value(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes | bytearray | memoryview):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _json(results: list[LayerResult]) -> str:
    features = []
    crs = results[0].crs if results else "EPSG:4326"
    for result in results:
        for feature in result.features:
            features.append({
                "type": "Feature", "id": feature.fid,
                "geometry": mapping(feature.geometry) if feature.geometry is not None else None,
                "geometry_name": result.dataset.geometry_column or "geom",
                "properties": {k: _value(v) for k, v in feature.properties.items()},
            })
    code = crs.split(":")[-1]
    return json.dumps({
        "type": "FeatureCollection", "features": features, "totalFeatures": "unknown",
        "numberReturned": len(features),
        "timeStamp": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "crs": {"type": "name", "properties": {"name": f"urn:ogc:def:crs:EPSG::{code}"}},
    })


def _text(results: list[LayerResult]) -> str:
    lines = []
    for result in results:
        if not result.features:
            continue
        for feature in result.features:
            lines.append(f"Results for FeatureType '{result.name}':")
            lines.append("-" * 44)
            for key, value in feature.properties.items():
                lines.append(f"{key} = {_value(value)}")
            if feature.geometry is not None and result.dataset.storage != "cog":
                lines.append(f"{result.dataset.geometry_column or 'geom'} = "
                             f"[GEOMETRY ({feature.geometry.geom_type}) with "
                             f"{shapely.get_num_coordinates(feature.geometry)} points]")
            lines.append("-" * 44)
    return "\n".join(lines) + "\n" if lines else "no features were found\n"


_PLACEHOLDER = re.compile(r"\$\{properties\.([^}]+)\}")


def _html(results: list[LayerResult]) -> str:
    parts = ['<!DOCTYPE html><html><head><meta charset="utf-8"><title>GetFeatureInfo</title>'
             "</head><body>"]
    for result in results:
        if not result.features:
            continue
        template = result.dataset.featureinfo_custom_template
        if template:
            for feature in result.features:
                parts.append(_PLACEHOLDER.sub(
                    lambda m, f=feature: html.escape(str(_value(f.properties.get(m.group(1).strip(), "")))),
                    template))
            continue
        names = list(result.features[0].properties)
        parts.append(f'<table class="featureInfo"><caption class="featureInfo">{html.escape(result.name)}'
                     "</caption><tr><th>fid</th>" + "".join(f"<th>{html.escape(n)}</th>" for n in names)
                     + "</tr>")
        for feature in result.features:
            cells = "".join(f"<td>{html.escape(str(_value(feature.properties.get(n))))}</td>" for n in names)
            parts.append(f"<tr><td>{html.escape(feature.fid)}</td>{cells}</tr>")
        parts.append("</table><br/>")
    parts.append("</body></html>")
    return "".join(parts)


def _gml(results: list[LayerResult], settings: Any) -> str:
    namespaces = {}
    members = []
    for result in results:
        workspace = result.dataset.workspace
        prefix = _xml_name(workspace)
        namespaces[prefix] = GEONODE_NS if workspace == "geonode" else f"{siteurl.base(settings)}/{workspace}"
        type_name = f"{prefix}:{_xml_name(result.dataset.name)}"
        for feature in result.features:
            body = []
            if feature.geometry is not None and result.dataset.storage != "cog":
                geom_name = f"{prefix}:{_xml_name(result.dataset.geometry_column or 'geom')}"
                body.append(f"<{geom_name}>{gml2(feature.geometry, result.crs)}</{geom_name}>")
            for key, value in feature.properties.items():
                tag = f"{prefix}:{_xml_name(key)}"
                value = _value(value)
                body.append(f"<{tag}/>" if value is None else f"<{tag}>{escape(str(value))}</{tag}>")
            members.append(f"<gml:featureMember><{type_name} fid={quoteattr(feature.fid)}>"
                           f"{''.join(body)}</{type_name}></gml:featureMember>")
    ns = "".join(f" xmlns:{p}={quoteattr(uri)}" for p, uri in namespaces.items())
    return ('<?xml version="1.0" encoding="UTF-8"?>'
            f'<wfs:FeatureCollection xmlns:wfs="http://www.opengis.net/wfs" '
            f'xmlns:gml="http://www.opengis.net/gml"{ns}>'
            '<gml:boundedBy><gml:null>unknown</gml:null></gml:boundedBy>'
            f"{''.join(members)}</wfs:FeatureCollection>")


def _xml_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    return cleaned if re.match(r"[A-Za-z_]", cleaned) else f"_{cleaned}"


GML2_COLLECTIONS = {"MultiPoint": ("MultiPoint", "pointMember"),
                    "MultiLineString": ("MultiLineString", "lineStringMember"),
                    "MultiPolygon": ("MultiPolygon", "polygonMember")}


def gml2(geometry: Any, crs: str) -> str:
    """A shapely geometry as GML 2 (x,y coordinate order; ``EPSG:n`` names are x/y)."""
    srs = f' srsName="{escape(crs)}"'
    kind = geometry.geom_type
    if kind == "Point":
        return f"<gml:Point{srs}>{_coords([geometry.coords[0]])}</gml:Point>"
    if kind == "LineString":
        return f"<gml:LineString{srs}>{_coords(geometry.coords)}</gml:LineString>"
    if kind == "Polygon":
        return f"<gml:Polygon{srs}>{_rings(geometry)}</gml:Polygon>"
    members = GML2_COLLECTIONS.get(kind, ("MultiGeometry", "geometryMember"))
    inner = "".join(f"<gml:{members[1]}>{gml2(part, crs)}</gml:{members[1]}>" for part in geometry.geoms)
    return f"<gml:{members[0]}{srs}>{inner}</gml:{members[0]}>"


def _rings(polygon: Any) -> str:
    out = (f"<gml:outerBoundaryIs><gml:LinearRing>{_coords(polygon.exterior.coords)}"
           "</gml:LinearRing></gml:outerBoundaryIs>")
    for ring in polygon.interiors:
        out += (f"<gml:innerBoundaryIs><gml:LinearRing>{_coords(ring.coords)}"
                "</gml:LinearRing></gml:innerBoundaryIs>")
    return out


def _coords(coords: Any) -> str:
    text = " ".join(f"{c[0]!r},{c[1]!r}" for c in coords)
    return f'<gml:coordinates decimal="." cs="," ts=" ">{text}</gml:coordinates>'
