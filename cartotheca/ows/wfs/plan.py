"""cartotheca.ows.wfs.plan: one GetFeature query made concrete against its dataset's store:
the fields, the output CRS and the store query with its filters compiled."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import shapely
from pygeofilter import ast
from pyproj import CRS

from cartotheca.errors import OWSException
from cartotheca.filters.parse import GeometryLiteral, parse_cql, parse_fes, parse_fids
from cartotheca.filters.sql import FilterLayer, Selection, compile_filter
from cartotheca.geodata.storage import FeatureQuery, FieldInfo, stored_layer
from cartotheca.geodata.storage.stores import vector_store
from cartotheca.ows import gml
from cartotheca.ows.crs import Srs, SrsError, parse_srs
from cartotheca.ows.request import OWSRequest
from cartotheca.ows.wfs.feature_types import FeatureTypeInfo, resolve
from cartotheca.ows.wfs.parsing import GetFeature, Query


@dataclass
class Plan:
    """A query made concrete: the dataset, the store query and what to write."""

    info: FeatureTypeInfo
    store: Any
    stored: Any
    query: FeatureQuery
    fields: list[FieldInfo]
    with_geometry: bool
    out_srs: Srs


def _srs(text: str, locator: str) -> Srs:
    try:
        return parse_srs(text)
    except SrsError as exc:
        raise OWSException("InvalidParameterValue", str(exc), locator=locator) from None


def default_srs(info: FeatureTypeInfo, version: str) -> Srs:
    """What a version assumes without SRSNAME: the native CRS, named as that version does."""
    name = gml.srs_name(info.epsg, {"2.0.0": gml.GML32, "1.1.0": gml.GML31}.get(version, gml.GML2))
    return parse_srs(name)


def _bbox_selection(text: str, info: FeatureTypeInfo, layer: FilterLayer,
                    version: str) -> Selection:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (4, 5):
        raise OWSException("InvalidParameterValue", "BBOX needs minx,miny,maxx,maxy[,crs]", locator="bbox")
    try:
        a, b, c, d = (float(p) for p in parts[:4])
    except ValueError:
        raise OWSException("InvalidParameterValue", "BBOX values must be numbers", locator="bbox") from None
    if not all(math.isfinite(v) for v in (a, b, c, d)):  # GEOS fails on NaN and infinities
        raise OWSException("InvalidParameterValue", "BBOX values must be finite numbers", locator="bbox")
    srs = _srs(parts[4], "bbox") if len(parts) == 5 else default_srs(info, version)
    if srs.swap:
        a, b, c, d = b, a, d, c
    node = GeometryLiteral(shapely.box(min(a, c), min(b, d), max(a, c), max(b, d)), f"EPSG:{srs.epsg}")
    return compile_filter(ast.GeometryIntersects(ast.Attribute(info.geometry_name), node), layer)


def _selection(plan_query: Query, info: FeatureTypeInfo, store: Any, stored: Any,
               out_srs: Srs, version: str) -> Selection:
    if not (plan_query.fes is not None or plan_query.cql or plan_query.bbox or plan_query.ids):
        return Selection()

    def spatial_fids(mask, bbox):
        batch = store.query(stored, FeatureQuery(bbox=bbox, geometry_predicate=mask, properties=[]))
        return list(batch.fids)

    layer = FilterLayer(
        table=store.table(stored), geometry_column=info.geometry_name,
        fid_column=info.dataset.fid_column or "fid", type_name=info.name,
        native_crs=_native_crs(info), parse_srs=parse_srs, default_srs=out_srs,
        spatial_fids=spatial_fids, field_types={f.name: f.type for f in info.fields})
    selection = Selection()
    if plan_query.ids is not None:
        selection = selection.and_(Selection(fids=parse_fids(plan_query.ids, info.name)))
    if plan_query.bbox:
        selection = selection.and_(_bbox_selection(plan_query.bbox, info, layer, version))
    if plan_query.fes is not None:
        selection = selection.and_(compile_filter(parse_fes(plan_query.fes), layer))
    if plan_query.cql:
        selection = selection.and_(compile_filter(parse_cql(plan_query.cql), layer))
    return selection


def _native_crs(info: FeatureTypeInfo) -> CRS:
    if info.dataset.native_srid:
        return CRS.from_epsg(info.dataset.native_srid)
    return CRS.from_wkt(info.dataset.native_crs) if info.dataset.native_crs else CRS.from_epsg(4326)


def _strip(name: str) -> str:
    return name.rsplit("/", 1)[-1].rpartition(":")[2]


def plan(req: OWSRequest, request: GetFeature, q: Query) -> Plan:
    info = resolve(req, q.type_name)
    store = vector_store(req.settings, info.dataset.storage)
    stored = stored_layer(info.dataset)
    if request.format == "kml":
        out_srs = parse_srs("EPSG:4326")
    else:
        out_srs = _srs(q.srs_name, "srsName") if q.srs_name else default_srs(info, request.version)
    names = {f.name for f in info.fields}
    fields = info.fields
    with_geometry = True
    if q.properties:
        wanted = [_strip(p) for p in q.properties]
        unknown = [p for p in wanted if p not in names and p != info.geometry_name]
        if unknown:
            raise OWSException("InvalidParameterValue", f"Unknown property {unknown[0]}",
                               locator="propertyName")
        fields = [f for f in info.fields if f.name in wanted]
        with_geometry = info.geometry_name in wanted
    sort = [(_strip(n), asc) for n, asc in q.sort]
    for name, _ in sort:
        if name not in names:
            raise OWSException("InvalidParameterValue", f"Cannot sort by unknown property {name}",
                               locator="sortBy")
    selection = _selection(q, info, store, stored, out_srs, request.version)
    query = FeatureQuery(bbox=selection.bbox, where=selection.where,
                         geometry_predicate=selection.geometry_predicate,
                         properties=[f.name for f in fields], sort=sort, fids=selection.fids,
                         out_crs=f"EPSG:{out_srs.epsg}" if out_srs.epsg != info.epsg or
                         not info.dataset.native_srid else None)
    return Plan(info, store, stored, query, fields, with_geometry, out_srs)

