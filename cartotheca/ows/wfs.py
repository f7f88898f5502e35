"""cartotheca.ows.wfs: the Web Feature Service (1.0.0, 1.1.0, 2.0.0), read-only.

GetCapabilities lists the vector datasets the requester may view; DescribeFeatureType answers
their XML schema from stored attributes; GetFeature needs the download permission and streams
features from the store in batches (GML 2/3.1.1/3.2, GeoJSON, CSV, Excel, zipped Shapefile,
KML). Type names are advertised as ``workspace:name``; bare names resolve too.
"""

from __future__ import annotations

import itertools
import math
import re
import urllib.parse
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import shapely
from pygeofilter import ast
from pyproj import CRS
from sqlalchemy import select
from starlette.responses import Response, StreamingResponse

from cartotheca import siteurl, xmlsafe
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.datasets import get_dataset, split_alternate, visible_datasets
from cartotheca.db.models import DatasetAttribute, Keyword
from cartotheca.db.models.resources import resource_keywords
from cartotheca.errors import CartothecaError, NotFound
from cartotheca.geodata import export
from cartotheca.geodata.storage import FeatureQuery, FieldInfo, stored_layer, vector_store
from cartotheca.ows import filters, gml
from cartotheca.ows.exceptions import OWSException
from cartotheca.ows.request import OWSRequest
from cartotheca.ows.wfs_capabilities import capabilities_document, describe_feature_type

VERSIONS = ("2.0.0", "1.1.0", "1.0.0")
GENERIC_NAMESPACE = "http://www.geonode.org/"
# The largest COUNT/STARTINDEX accepted: past any layer's size, well inside the LIMIT/OFFSET
# integers of PostgreSQL and SQLite.
MAX_INDEX = 2**31 - 1


def handle(req: OWSRequest) -> Response:
    operation = req.operation.lower()
    if operation == "getcapabilities":
        version = negotiate(req)
        return _xml(capabilities_document(req, version, _feature_types(req)), "application/xml")
    version = _version(req)
    if operation == "describefeaturetype":
        names = _type_names(req, version, required=False)
        types = _feature_types(req, names) if names else _feature_types(req)
        if names:
            _check_found(req, names, types)
        return _xml(describe_feature_type(req, version, types), _schema_media_type(version))
    if operation == "getfeature":
        return get_feature(req, version)
    if operation in ("transaction", "lockfeature", "getfeaturewithlock", "createstoredquery",
                     "dropstoredquery"):
        raise OWSException("OperationNotSupported", f"{req.operation} is not supported: this "
                           "service is read-only", locator=req.operation, version=version)
    if not operation:
        raise OWSException("MissingParameterValue", "Parameter REQUEST is required",
                           locator="request", version=version)
    raise OWSException("OperationNotSupported", f"Unknown operation {req.operation}",
                       locator="request", version=version)


def _xml(body: bytes, media_type: str) -> Response:
    return Response(body, media_type=media_type)


def _schema_media_type(version: str) -> str:
    return {"2.0.0": "application/gml+xml; version=3.2", "1.1.0": "text/xml; subtype=gml/3.1.1"}.get(
        version, "text/xml")


# -- versions -------------------------------------------------------------------------------


def _canonical(version: str) -> str | None:
    text = version.strip()
    for known in VERSIONS:
        if text == known or known.startswith(text + ".") or text.startswith(known):
            return known
    return None


def negotiate(req: OWSRequest) -> str:
    """GetCapabilities: the first of ACCEPTVERSIONS we speak, else VERSION, else the highest."""
    accept = req.get("ACCEPTVERSIONS")
    if accept:
        for candidate in accept.split(","):
            known = _canonical(candidate)
            if known:
                return known
        raise OWSException("VersionNegotiationFailed", f"None of {accept} is supported",
                           locator="AcceptVersions")
    if req.version:
        return _canonical(req.version) or VERSIONS[0]
    return VERSIONS[0]


def _version(req: OWSRequest) -> str:
    if not req.version:
        return VERSIONS[0]
    known = _canonical(req.version)
    if known is None:
        raise OWSException("InvalidParameterValue", f"Unsupported WFS version {req.version}",
                           locator="version")
    return known


# -- feature types --------------------------------------------------------------------------


@dataclass
class FeatureTypeInfo:
    resource: Any
    dataset: Any
    fields: list[FieldInfo]
    keywords: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.dataset.name

    @property
    def workspace(self) -> str:
        return self.dataset.workspace

    @property
    def qname(self) -> str:
        return f"{self.workspace}:{self.name}"

    @property
    def geometry_name(self) -> str:
        return self.dataset.geometry_column or "geom"

    @property
    def epsg(self) -> int:
        return self.dataset.native_srid or 4326


def namespace_uri(req: OWSRequest, workspace: str) -> str:
    """The XML namespace of a workspace (GeoNode's own for its default workspace)."""
    if workspace == req.settings.DEFAULT_WORKSPACE:
        return GENERIC_NAMESPACE
    return f"{siteurl.base(req.settings)}/workspaces/{workspace}"


def is_vector(dataset: Any) -> bool:
    return dataset.storage != "cog"


def _fields(req: OWSRequest, resource_ids: list[int]) -> dict[int, list[FieldInfo]]:
    found: dict[int, list[FieldInfo]] = defaultdict(list)
    if resource_ids:
        rows = req.session.execute(
            select(DatasetAttribute.dataset_id, DatasetAttribute.attribute, DatasetAttribute.attribute_type)
            .where(DatasetAttribute.dataset_id.in_(resource_ids))
            .order_by(DatasetAttribute.dataset_id, DatasetAttribute.display_order, DatasetAttribute.id))
        for dataset_id, name, kind in rows:
            if (kind or "").startswith("gml:"):
                continue  # GeoNode lists the geometry among the attributes
            found[dataset_id].append(FieldInfo(name, kind or "xsd:string"))
    return found


def _keywords(req: OWSRequest, resource_ids: list[int]) -> dict[int, list[str]]:
    found: dict[int, list[str]] = defaultdict(list)
    if resource_ids:
        for resource_id, name in req.session.execute(
                select(resource_keywords.c.resource_id, Keyword.name)
                .join(Keyword, Keyword.id == resource_keywords.c.keyword_id)
                .where(resource_keywords.c.resource_id.in_(resource_ids)).order_by(Keyword.name)):
            found[resource_id].append(name)
    return found


def _feature_types(req: OWSRequest, names: list[str] | None = None) -> list[FeatureTypeInfo]:
    """Vector datasets the requester may view (``names`` restricts them), with their fields:
    three statements whatever the number of datasets."""
    rows = [(r, d) for r, d in visible_datasets(req.session, req.principal, req.settings, names)
            if is_vector(d)]
    ids = [r.id for r, _ in rows]
    fields, keywords = _fields(req, ids), _keywords(req, ids)
    return [FeatureTypeInfo(r, d, fields[r.id], keywords[r.id]) for r, d in rows]


def _check_found(req: OWSRequest, names: list[str], types: list[FeatureTypeInfo]) -> None:
    known = {(t.workspace, t.name) for t in types}
    for name in names:
        if split_alternate(name, req.settings) not in known:
            raise OWSException("InvalidParameterValue", f"Feature type {name} is unknown",
                               locator="typeName")


def _split_names(text: str) -> list[str]:
    return [n.strip() for n in re.split(r"[,()]", text) if n.strip()]


def _type_names(req: OWSRequest, version: str, required: bool = True) -> list[str]:
    if req.xml is not None:
        names = [n for el in req.xml if isinstance(el.tag, str) and el.tag.endswith("TypeName")
                 for n in _split_names(el.text or "")]
        names += _split_names(req.xml.get("typeName") or req.xml.get("typeNames") or "")
        return names
    text = req.get("TYPENAMES") or req.get("TYPENAME")
    if not text:
        if required:
            raise OWSException("MissingParameterValue", "Parameter TYPENAMES is required",
                               locator="typeName", version=version)
        return []
    return _split_names(text)


def resolve(req: OWSRequest, name: str, codename: str = perms.DOWNLOAD) -> FeatureTypeInfo:
    """One feature type by (prefixed or bare) name, checking ``codename``."""
    try:
        resource, dataset = get_dataset(req.session, req.principal, req.settings, name, codename=codename)
    except NotFound:
        raise OWSException("InvalidParameterValue", f"Feature type {name} is unknown",
                           locator="typeName") from None
    if not is_vector(dataset):
        raise OWSException("InvalidParameterValue", f"{name} is a coverage, not a feature type",
                           locator="typeName")
    return FeatureTypeInfo(resource, dataset, _fields(req, [resource.id])[resource.id])


# -- GetFeature -----------------------------------------------------------------------------

FORMATS = {
    "gml32": ("application/gml+xml; version=3.2", "text/xml; subtype=gml/3.2", "gml32",
              "text/xml; subtype=gml/3.2.1", "application/gml+xml;version=3.2"),
    "gml31": ("text/xml; subtype=gml/3.1.1", "gml3", "application/gml+xml; version=3.1",
              "text/xml; subtype=gml/3.1.1/profiles/gmlsf/0"),
    "gml2": ("text/xml; subtype=gml/2.1.2", "GML2", "gml2", "application/gml+xml; version=2.1"),
    "json": ("application/json", "json", "geojson", "application/geo+json"),
    "csv": ("csv", "text/csv"),
    "excel": ("excel", "excel2007", "xlsx",
              "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    "shape": ("SHAPE-ZIP", "application/zip", "shapezip"),
    "kml": ("application/vnd.google-earth.kml+xml", "KML", "application/vnd.google-earth.kml"),
}
DEFAULT_FORMAT = {"2.0.0": "gml32", "1.1.0": "gml31", "1.0.0": "gml2"}
GML_VERSIONS = {"gml2": gml.GML2, "gml31": gml.GML31, "gml32": gml.GML32}


def _format_key(text: str) -> str:
    return re.sub(r"\s+", "", text.lower().replace("gml xml", "gml+xml"))


_FORMAT_LOOKUP = {_format_key(alias): key for key, aliases in FORMATS.items() for alias in aliases}


def output_format(req: OWSRequest, version: str, text: str | None) -> str:
    if not text or _format_key(text) in ("text/xml", "application/xml", "xml"):
        return DEFAULT_FORMAT[version]
    key = _FORMAT_LOOKUP.get(_format_key(text))
    if key is None:
        raise OWSException("InvalidParameterValue", f"Unknown output format {text}",
                           locator="outputFormat")
    return key


def advertised_formats(version: str) -> list[str]:
    """Output formats for capabilities: the version's GML first, then the others."""
    gmls = [FORMATS[DEFAULT_FORMAT[version]][0]] + [FORMATS[k][0] for k in ("gml32", "gml31", "gml2")
                                                    if k != DEFAULT_FORMAT[version]]
    return [*gmls, "GML2", "gml3", "gml32", "application/json", "csv", "excel", "excel2007",
            "SHAPE-ZIP", "application/vnd.google-earth.kml+xml", "KML"]


@dataclass
class Query:
    """One typename's part of a GetFeature (KVP or a ``wfs:Query`` element)."""

    type_name: str
    srs_name: str | None = None
    properties: list[str] | None = None
    sort: list[tuple[str, bool]] = field(default_factory=list)
    fes: Any = None  # filter element
    cql: str | None = None
    bbox: str | None = None
    ids: list[str] | None = None


@dataclass
class GetFeature:
    version: str
    queries: list[Query]
    count: int | None
    start: int
    hits: bool
    format: str


def _int_param(value: str | None, name: str) -> int | None:
    """COUNT, MAXFEATURES or STARTINDEX; a value past MAX_INDEX would overflow the database's
    LIMIT/OFFSET integer halfway through a streamed answer, so it is refused up front."""
    if value in (None, ""):
        return None
    try:
        number = int(float(value))
    except (ValueError, OverflowError):  # "nan", "inf", "1e400"
        raise OWSException("InvalidParameterValue", f"{name} must be an integer", locator=name) from None
    if not 0 <= number <= MAX_INDEX:
        raise OWSException("InvalidParameterValue", f"{name} must be between 0 and {MAX_INDEX}",
                           locator=name)
    return number


def _sort(text: str | None) -> list[tuple[str, bool]]:
    out = []
    for item in (text or "").split(","):
        words = item.strip().split()
        if not words:
            continue
        direction = words[1].upper() if len(words) > 1 else "ASC"
        if direction not in ("A", "D", "ASC", "DESC"):
            raise OWSException("InvalidParameterValue", f"Invalid sort order {item}", locator="sortBy")
        out.append((words[0], direction in ("A", "ASC")))
    return out


def _filter_element(text: str) -> Any:
    body = text.strip()
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1]
    try:
        return xmlsafe.parse(body.encode("utf-8"), "filter")
    except CartothecaError as exc:
        raise OWSException("InvalidParameterValue", f"Invalid filter: {exc.message}",
                           locator="filter") from None


def parse_kvp(req: OWSRequest, version: str) -> GetFeature:
    ids_text = req.get("RESOURCEID") or req.get("FEATUREID")
    ids = _split_names(ids_text) if ids_text else None
    names = _type_names(req, version, required=ids is None) or filters.id_type_names(ids or [])
    if not names:
        raise OWSException("MissingParameterValue", "Parameter TYPENAMES is required",
                           locator="typeName")
    props = req.get("PROPERTYNAME")
    fes_text, cql = req.get("FILTER"), req.get("CQL_FILTER")
    fes = _filter_element(fes_text) if fes_text else None
    queries = [Query(name, srs_name=req.get("SRSNAME") or req.get("SRS"),
                     properties=[p for p in _split_names(props) if p != "*"] or None if props else None,
                     sort=_sort(req.get("SORTBY")), fes=fes, cql=cql, bbox=req.get("BBOX"), ids=ids)
               for name in names]
    count = _int_param(req.get("COUNT") or req.get("MAXFEATURES"), "count")
    return GetFeature(version, queries, count, _int_param(req.get("STARTINDEX"), "startIndex") or 0,
                      (req.get("RESULTTYPE") or "results").lower() == "hits",
                      output_format(req, version, req.get("OUTPUTFORMAT")))


def _local(el: Any) -> str:
    return el.tag.rsplit("}", 1)[-1] if isinstance(el.tag, str) else ""


def parse_xml(req: OWSRequest, version: str) -> GetFeature:
    root = req.xml
    queries = []
    for q in root:
        if _local(q) != "Query":
            continue
        props = [(p.text or "").strip() for p in q if _local(p) in ("PropertyName", "ValueReference")
                 and (p.text or "").strip()]
        fes = next((c for c in q if _local(c) == "Filter"), None)
        sort = []
        for sort_by in (c for c in q if _local(c) == "SortBy"):
            for prop in sort_by:
                name = next(((c.text or "").strip() for c in prop if _local(c) in
                             ("PropertyName", "ValueReference")), "")
                order = next(((c.text or "").strip().upper() for c in prop
                              if _local(c) == "SortOrder"), "ASC")
                sort.append((name, order in ("ASC", "A")))
        for name in _split_names(q.get("typeNames") or q.get("typeName") or ""):
            queries.append(Query(name, srs_name=q.get("srsName"), properties=props or None, sort=sort,
                                 fes=fes))
    if not queries:
        raise OWSException("MissingParameterValue", "GetFeature needs a wfs:Query", locator="typeName")
    count = _int_param(root.get("count") or root.get("maxFeatures"), "count")
    return GetFeature(version, queries, count, _int_param(root.get("startIndex"), "startIndex") or 0,
                      (root.get("resultType") or "results").lower() == "hits",
                      output_format(req, version, root.get("outputFormat")))


# -- from a query to the store --------------------------------------------------------------


@dataclass
class Plan:
    """A query made concrete: the dataset, the store query and what to write."""

    info: FeatureTypeInfo
    store: Any
    stored: Any
    query: FeatureQuery
    fields: list[FieldInfo]
    with_geometry: bool
    out_srs: gml.Srs


def _srs(text: str, locator: str) -> gml.Srs:
    try:
        return gml.parse_srs(text)
    except gml.SrsError as exc:
        raise OWSException("InvalidParameterValue", str(exc), locator=locator) from None


def default_srs(info: FeatureTypeInfo, version: str) -> gml.Srs:
    """What a version assumes without SRSNAME: the native CRS, named as that version does."""
    name = gml.srs_name(info.epsg, {"2.0.0": gml.GML32, "1.1.0": gml.GML31}.get(version, gml.GML2))
    return gml.parse_srs(name)


def _bbox_selection(text: str, info: FeatureTypeInfo, layer: filters.FilterLayer,
                    version: str) -> filters.Selection:
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
    node = filters.GeometryLiteral(shapely.box(min(a, c), min(b, d), max(a, c), max(b, d)),
                                   f"EPSG:{srs.epsg}")
    return filters.compile_filter(ast.GeometryIntersects(ast.Attribute(info.geometry_name), node), layer)


def _selection(plan_query: Query, info: FeatureTypeInfo, store: Any, stored: Any,
               out_srs: gml.Srs, version: str) -> filters.Selection:
    if not (plan_query.fes is not None or plan_query.cql or plan_query.bbox or plan_query.ids):
        return filters.Selection()

    def spatial_fids(mask, bbox):
        batch = store.query(stored, FeatureQuery(bbox=bbox, geometry_predicate=mask, properties=[]))
        return list(batch.fids)

    layer = filters.FilterLayer(
        table=store.table(stored), geometry_column=info.geometry_name,
        fid_column=info.dataset.fid_column or "fid", type_name=info.name,
        native_crs=_native_crs(info), default_srs=out_srs, spatial_fids=spatial_fids,
        field_types={f.name: f.type for f in info.fields})
    selection = filters.Selection()
    if plan_query.ids is not None:
        selection = selection.and_(filters.Selection(fids=filters.parse_fids(plan_query.ids, info.name)))
    if plan_query.bbox:
        selection = selection.and_(_bbox_selection(plan_query.bbox, info, layer, version))
    if plan_query.fes is not None:
        selection = selection.and_(filters.compile_filter(filters.parse_fes(plan_query.fes), layer))
    if plan_query.cql:
        selection = selection.and_(filters.compile_filter(filters.parse_cql(plan_query.cql), layer))
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
        out_srs = gml.parse_srs("EPSG:4326")
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
    return StreamingResponse(gml.write_collection(collection), media_type=_gml_media(gml_version))


def _gml_media(version: str) -> str:
    return {gml.GML32: "application/gml+xml; version=3.2", gml.GML31: "text/xml; subtype=gml/3.1.1",
            gml.GML2: "text/xml; subtype=gml/2.1.2"}[version]


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
    return StreamingResponse(gml.write_collection(collection), media_type=_gml_media(version))


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

