"""cartotheca.ows.wfs.getfeature: GetFeature answers, streamed from the store in batches
(GML 2/3.1.1/3.2, GeoJSON, CSV, Excel, zipped Shapefile, KML), with result paging."""

from __future__ import annotations

import itertools
import re
import urllib.parse
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from starlette.responses import Response, StreamingResponse

from cartotheca.geodata import export
from cartotheca.ows import gml
from cartotheca.ows.request import OWSRequest
from cartotheca.ows.wfs.feature_types import namespace_uri
from cartotheca.ows.wfs.formats import DEFAULT_FORMAT, GML_VERSIONS, gml_media
from cartotheca.ows.wfs.parsing import GetFeature, parse_kvp, parse_xml
from cartotheca.ows.wfs.plan import Plan, plan


def _page_limit(request: GetFeature, settings: Any) -> int | None:
    """COUNT/MAXFEATURES, else CountDefault for 2.0.0 (the advertised default page), else all."""
    if request.count is not None:
        return request.count
    if request.version == "2.0.0":
        return settings.WFS_COUNT_DEFAULT
    return None


def get_feature(req: OWSRequest, version: str) -> Response:
    request = parse_xml(req, version) if req.xml is not None else parse_kvp(req, version)
    plans = [plan(req, request, q) for q in request.queries]
    limit = _page_limit(request, req.settings)
    counting = request.hits or request.format in ("gml32", "gml31", "json")
    matched = sum(p.store.count(p.stored, p.query) for p in plans) if counting else None
    if request.hits:
        return _hits(req, request, plans, matched or 0)
    _assign_pages(plans, request.start, limit, matched)
    returned = None
    if matched is not None:
        returned = max(0, matched - request.start)
        returned = returned if limit is None else min(limit, returned)
    return _respond(req, request, plans, matched, returned, limit)


def _assign_pages(plans: list[Plan], start: int, limit: int | None, matched: int | None) -> None:
    """Spread STARTINDEX/COUNT over the queries in order (one query: just offset/limit)."""
    if len(plans) == 1:
        plans[0].query = replace(plans[0].query, offset=start, limit=limit)
        return
    remaining_offset, remaining = start, limit
    for p in plans:
        total = p.store.count(p.stored, p.query)
        offset = min(remaining_offset, total)
        remaining_offset -= offset
        take = total - offset if remaining is None else min(remaining, total - offset)
        if remaining is not None:
            remaining -= take
        p.query = replace(p.query, offset=offset, limit=take)


def _batches(p: Plan) -> Iterator[Any]:
    """The plan's features, batch by batch. The first batch is read now, so a failing query
    becomes an exception report instead of a response cut short."""
    if p.query.limit == 0:
        return iter(())
    batches = iter(p.store.iter_batches(p.stored, p.query))
    first = next(batches, None)

    def stream() -> Iterator[Any]:
        if first is None:
            return
        for batch in itertools.chain([first], batches):
            if not p.with_geometry:
                batch.geometries[:] = None
            yield batch

    return stream()


def _hits(req: OWSRequest, request: GetFeature, plans: list[Plan], matched: int) -> Response:
    srs = plans[0].out_srs
    gml_version = GML_VERSIONS.get(request.format, GML_VERSIONS[DEFAULT_FORMAT[request.version]])
    if request.format == "json":
        body = export.geojson([], number_matched=matched)
        return StreamingResponse(body, media_type="application/json")
    collection = gml.Collection(version=gml_version, srs=srs, parts=[], number_matched=matched,
                                number_returned=0, wfs_version=request.version)
    if request.version == "1.1.0":
        collection.number_returned = matched  # 1.1.0 hits: numberOfFeatures is the match count
    return StreamingResponse(gml.write_collection(collection), media_type=gml_media(gml_version))



def _page_links(req: OWSRequest, request: GetFeature, matched: int | None,
                returned: int | None, limit: int | None) -> tuple[str | None, str | None]:
    if request.version != "2.0.0" or req.xml is not None or limit is None:
        return None, None
    params = {k: v for k, v in req.params.items() if k not in ("STARTINDEX", "COUNT", "MAXFEATURES")}

    def url(start: int) -> str:
        return req.service_url + "?" + urllib.parse.urlencode({**params, "STARTINDEX": start,
                                                               "COUNT": limit})

    following = None
    if matched is not None and returned is not None and request.start + returned < matched:
        following = url(request.start + limit)
    previous = url(max(0, request.start - limit)) if request.start > 0 else None
    return following, previous


def _export_layers(plans: list[Plan]) -> list[export.ExportLayer]:
    return [export.ExportLayer(name=p.info.name, fields=p.fields, geometry_name=p.info.geometry_name,
                               geometry_type=p.info.dataset.geometry_type or "Unknown",
                               batches=_batches(p), epsg=p.out_srs.epsg)
            for p in plans]


def _attachment(name: str, suffix: str) -> dict[str, str]:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "features"
    return {"Content-Disposition": f'attachment; filename="{safe}.{suffix}"'}


def _respond(req: OWSRequest, request: GetFeature, plans: list[Plan], matched: int | None,
             returned: int | None, limit: int | None) -> Response:
    name = plans[0].info.name if len(plans) == 1 else "features"
    fmt = request.format
    if fmt in GML_VERSIONS:
        return _gml_response(req, request, plans, matched, returned, limit)
    layers = _export_layers(plans)
    if fmt == "json":
        following, previous = _page_links(req, request, matched, returned, limit)
        extra = {}
        links = [{"href": h, "rel": r, "type": "application/json", "title": t}
                 for h, r, t in ((following, "next", "next page"), (previous, "previous", "previous page"))
                 if h]
        if links:
            extra["links"] = links
        crs_name = gml.srs_name(plans[0].out_srs.epsg, gml.GML32)
        body = export.geojson(layers, number_matched=matched, crs_name=crs_name, extra=extra)
        return StreamingResponse(body, media_type="application/json")
    if fmt == "csv":
        return StreamingResponse(export.csv_(layers), media_type="text/csv; charset=UTF-8",
                                 headers=_attachment(name, "csv"))
    if fmt == "excel":
        return StreamingResponse(
            export.xlsx(layers), headers=_attachment(name, "xlsx"),
            media_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
    if fmt == "shape":
        return StreamingResponse(export.shapefile_zip(layers), media_type="application/zip",
                                 headers=_attachment(name, "zip"))
    return StreamingResponse(export.kml(layers), media_type="application/vnd.google-earth.kml+xml",
                             headers=_attachment(name, "kml"))


def _gml_response(req: OWSRequest, request: GetFeature, plans: list[Plan], matched: int | None,
                  returned: int | None, limit: int | None) -> Response:
    version = GML_VERSIONS[request.format]
    srs = plans[0].out_srs
    following, previous = _page_links(req, request, matched, returned, limit)
    parts = []
    for p in plans:
        ftype = gml.FeatureType(prefix=p.info.workspace, namespace=namespace_uri(req, p.info.workspace),
                                name=p.info.name, geometry_name=p.info.geometry_name,
                                fields=[f.name for f in p.fields])
        parts.append((ftype, _batches(p)))
    collection = gml.Collection(version=version, srs=srs, parts=parts, number_matched=matched,
                                number_returned=returned, wfs_version=request.version,
                                next_url=following, previous_url=previous,
                                schema_location=_schema_location(req, request, plans, version))
    return StreamingResponse(gml.write_collection(collection), media_type=gml_media(version))


def _schema_location(req: OWSRequest, request: GetFeature, plans: list[Plan], version: str) -> str:
    describe = req.service_url + "?" + urllib.parse.urlencode({
        "service": "WFS", "version": request.version, "request": "DescribeFeatureType",
        "typeName": ",".join(p.info.qname for p in plans)})
    wfs = {"2.0.0": "http://www.opengis.net/wfs/2.0 http://schemas.opengis.net/wfs/2.0/wfs.xsd",
           "1.1.0": "http://www.opengis.net/wfs http://schemas.opengis.net/wfs/1.1.0/wfs.xsd",
           "1.0.0": "http://www.opengis.net/wfs http://schemas.opengis.net/wfs/1.0.0/WFS-basic.xsd"}
    spaces = {namespace_uri(req, p.info.workspace) for p in plans}
    own = " ".join(f"{ns} {describe}" for ns in sorted(spaces))
    gml32 = " http://www.opengis.net/gml/3.2 http://schemas.opengis.net/gml/3.2.1/gml.xsd" \
        if version == gml.GML32 else ""
    return f"{wfs[request.version]}{gml32} {own}"

