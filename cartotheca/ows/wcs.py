"""cartotheca.ows.wcs: the Web Coverage Service 2.0.1 (KVP and XML POST) over raster datasets.

Coverages are the raster datasets the requester may view, named GeoServer-style
``workspace__name`` (the alternate ``workspace:name`` is accepted too). GetCoverage needs the
download permission and answers a GeoTIFF cut by ``ows.coverage``: trims and slices on the axes
DescribeCoverage advertises (or the grid axes i/j), the CRS extension (SUBSETTINGCRS,
OUTPUTCRS), scaling, range subsetting and interpolation.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

from lxml import etree
from starlette.responses import Response, StreamingResponse

from cartotheca import xmlsafe
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.datasets import get_dataset, visible_datasets
from cartotheca.catalogue.service_metadata import service_metadata
from cartotheca.errors import (
    NotFound,
    OWSException,
)
from cartotheca.geodata.storage.stores import raster_store
from cartotheca.ows import coverage, coverage_geotiff, service_identity
from cartotheca.ows.coverage import CoverageRequest, Grid, Scaling, Subset
from cartotheca.ows.request import OWSRequest
from cartotheca.xmlsafe import child_text, first_child, local_name

VERSION = "2.0.1"
ACCEPTED_VERSIONS = ("2.0.1", "2.0.0")
WCS_NS = "http://www.opengis.net/wcs/2.0"
OWS_NS = "http://www.opengis.net/ows/2.0"
GML_NS = "http://www.opengis.net/gml/3.2"
GMLCOV_NS = "http://www.opengis.net/gmlcov/1.0"
SWE_NS = "http://www.opengis.net/swe/2.0"
XLINK = "http://www.w3.org/1999/xlink"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
CRS_NS = "http://www.opengis.net/wcs/crs/1.0"
INT_NS = "http://www.opengis.net/wcs/interpolation/1.0"
NSMAP = {"wcs": WCS_NS, "ows": OWS_NS, "gml": GML_NS, "gmlcov": GMLCOV_NS, "swe": SWE_NS,
         "xlink": XLINK, "xsi": XSI}
GEOTIFF = "image/tiff"
FORMAT_ALIASES = {"image/tiff", "image/geotiff", "geotiff", "tiff", "image/tiff;application=geotiff",
                  "image/tiff; application=geotiff"}
PROFILES = [
    "http://www.opengis.net/spec/WCS/2.0/conf/core",
    "http://www.opengis.net/spec/WCS_protocol-binding_get-kvp/1.0/conf/get-kvp",
    "http://www.opengis.net/spec/WCS_protocol-binding_post-xml/1.0/conf/post-xml",
    "http://www.opengis.net/spec/GMLCOV/1.0/conf/gml-coverage",
    "http://www.opengis.net/spec/WCS_geotiff-coverages/1.0/conf/geotiff-coverage",
    "http://www.opengis.net/spec/WCS_service-extension_crs/1.0/conf/crs",
    "http://www.opengis.net/spec/WCS_service-extension_scaling/1.0/conf/scaling",
    "http://www.opengis.net/spec/WCS_service-extension_range-subsetting/1.0/conf/record-subsetting",
    "http://www.opengis.net/spec/WCS_service-extension_interpolation/1.0/conf/interpolation",
]
ADVERTISED_CRS = (4326, 3857)  # any EPSG code works; these are listed
INTERPOLATIONS = ["nearest-neighbor", "linear", "cubic"]
NIL_REASON = "http://www.opengis.net/def/nil/OGC/0/unknown"
DATA_TYPE_URI = "http://www.opengis.net/def/dataType/OGC/0/"


def handle(req: OWSRequest) -> Response:
    operation = req.operation.lower()
    if not operation:
        raise OWSException("MissingParameterValue", "Parameter REQUEST is required", locator="request")
    if operation == "getcapabilities":
        _check_accept_versions(req)
        return get_capabilities(req)
    _check_version(req)
    if operation == "describecoverage":
        return describe_coverage(req)
    if operation == "getcoverage":
        return get_coverage(req)
    raise OWSException("OperationNotSupported", f"Request {req.operation} is not supported by this WCS",
                       locator="request")


def _check_version(req: OWSRequest) -> None:
    version = req.get("VERSION")
    if version is None:
        raise OWSException("MissingParameterValue", "Parameter VERSION is required", locator="version")
    if version not in ACCEPTED_VERSIONS:
        raise OWSException("InvalidParameterValue", f"WCS version {version} is not supported; use 2.0.1",
                           locator="version")


def _check_accept_versions(req: OWSRequest) -> None:
    accept = req.get("ACCEPTVERSIONS")
    if req.xml is not None:
        values = _texts(req.xml, "Version")
        accept = ",".join(values) if values else accept
    if accept and not any(v.strip() in ACCEPTED_VERSIONS for v in accept.split(",")):
        raise OWSException("VersionNegotiationFailed", f"None of {accept} is supported; use 2.0.1",
                           locator="acceptversions")


# -- naming coverages --------------------------------------------------------------------------

def coverage_id(dataset: Any) -> str:
    return f"{dataset.workspace}__{dataset.name}"


def _alternate(identifier: str) -> str:
    workspace, sep, name = identifier.partition("__")
    return f"{workspace}:{name}" if sep and ":" not in identifier else identifier


def _find(req: OWSRequest, identifier: str, codename: str = perms.VIEW) -> tuple[Any, Any]:
    try:
        resource, dataset = get_dataset(req.session, req.principal, req.settings, _alternate(identifier),
                                        codename=codename)
    except NotFound:
        raise OWSException("NoSuchCoverage", f"No coverage {identifier}", locator="coverageId") from None
    if dataset.storage != "cog":
        raise OWSException("NoSuchCoverage", f"{identifier} is not a coverage (it is vector data)",
                           locator="coverageId")
    return resource, dataset


def _grid(req: OWSRequest, dataset: Any) -> Grid:
    store = raster_store(req.settings)
    info = dataset.raster_info or {}
    try:
        store.version(dataset.location)
        with store.reading(dataset.location) as path:
            return coverage.read_grid(path, info.get("band_descriptions"))
    except NotFound:
        raise OWSException("NoApplicableCode", "The coverage's raster file is missing") from None


# -- XML helpers -------------------------------------------------------------------------------

def _el(parent: etree._Element, ns: str, tag: str, text: str | None = None, **attrs: str) -> etree._Element:
    return xmlsafe.sub_element(parent, f"{{{ns}}}{tag}", text, attrs)


def _num(value: float) -> str:
    return repr(float(value))


def _texts(root: Any, name: str) -> list[str]:
    return [(e.text or "").strip() for e in root.iter() if local_name(e) == name]


def _xml_response(root: etree._Element) -> Response:
    body = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
    return Response(body, media_type="application/xml")


# -- GetCapabilities ---------------------------------------------------------------------------

def get_capabilities(req: OWSRequest) -> Response:
    rows = [(resource, dataset) for resource, dataset
            in visible_datasets(req.session, req.principal, req.settings) if dataset.storage == "cog"]
    root = etree.Element(f"{{{WCS_NS}}}Capabilities", version=VERSION,
                         nsmap={**NSMAP, "crs": CRS_NS, "int": INT_NS})
    root.set(f"{{{XSI}}}schemaLocation", f"{WCS_NS} http://schemas.opengis.net/wcs/2.0/wcsAll.xsd")
    meta = service_metadata(req.settings, "WCS")
    service_identity.ows_identification(root, OWS_NS, meta, "OGC WCS", ACCEPTED_VERSIONS,
                                        profiles=PROFILES, code_space="OGC")
    service_identity.ows_provider(root, OWS_NS, meta)
    _operations(root, req.service_url)
    metadata = _el(root, WCS_NS, "ServiceMetadata")
    _el(metadata, WCS_NS, "formatSupported", GEOTIFF)
    extension = _el(metadata, WCS_NS, "Extension")
    interpolation = _el(extension, INT_NS, "InterpolationMetadata")
    for name in INTERPOLATIONS:
        _el(interpolation, INT_NS, "InterpolationSupported",
            f"http://www.opengis.net/def/interpolation/OGC/1/{name}")
    crs_metadata = _el(extension, CRS_NS, "CrsMetadata")
    for code in ADVERTISED_CRS:
        _el(crs_metadata, CRS_NS, "crsSupported", f"{coverage.EPSG_URI}{code}")
    contents = _el(root, WCS_NS, "Contents")
    for resource, dataset in rows:
        _summary(contents, resource, dataset)
    return _xml_response(root)


def _operations(root: etree._Element, service_url: str) -> None:
    metadata = _el(root, OWS_NS, "OperationsMetadata")
    for name in ("GetCapabilities", "DescribeCoverage", "GetCoverage"):
        operation = _el(metadata, OWS_NS, "Operation", name=name)
        http = _el(_el(operation, OWS_NS, "DCP"), OWS_NS, "HTTP")
        _el(http, OWS_NS, "Get").set(f"{{{XLINK}}}href", f"{service_url}?")
        _el(http, OWS_NS, "Post").set(f"{{{XLINK}}}href", service_url)


def _summary(contents: etree._Element, resource: Any, dataset: Any) -> None:
    summary = _el(contents, WCS_NS, "CoverageSummary")
    _el(summary, OWS_NS, "Title", resource.title or dataset.name)
    if resource.abstract:
        _el(summary, OWS_NS, "Abstract", resource.abstract)
    if resource.ll_minx is not None:
        box = _el(summary, OWS_NS, "WGS84BoundingBox")
        _el(box, OWS_NS, "LowerCorner", f"{_num(resource.ll_minx)} {_num(resource.ll_miny)}")
        _el(box, OWS_NS, "UpperCorner", f"{_num(resource.ll_maxx)} {_num(resource.ll_maxy)}")
    _el(summary, WCS_NS, "CoverageId", coverage_id(dataset))
    _el(summary, WCS_NS, "CoverageSubtype", "RectifiedGridCoverage")


# -- DescribeCoverage --------------------------------------------------------------------------

def describe_coverage(req: OWSRequest) -> Response:
    if req.xml is not None:
        identifiers = [t for t in _texts(req.xml, "CoverageId") if t]
    else:
        value = req.get("COVERAGEID") or req.get("COVERAGE") or req.get("IDENTIFIER")
        identifiers = [v.strip() for v in (value or "").split(",") if v.strip()]
    if not identifiers:
        raise OWSException("MissingParameterValue", "Parameter COVERAGEID is required", locator="coverageId")
    root = etree.Element(f"{{{WCS_NS}}}CoverageDescriptions", nsmap=NSMAP)
    root.set(f"{{{XSI}}}schemaLocation", f"{WCS_NS} http://schemas.opengis.net/wcs/2.0/wcsDescribeCoverage.xsd")
    for identifier in identifiers:
        _resource, dataset = _find(req, identifier)
        grid = _grid(req, dataset)
        _description(root, coverage_id(dataset), grid)
    return _xml_response(root)


def _description(root: etree._Element, identifier: str, grid: Grid) -> None:
    crs = grid.crs
    node = _el(root, WCS_NS, "CoverageDescription")
    node.set(f"{{{GML_NS}}}id", identifier)
    envelope = _el(_el(node, GML_NS, "boundedBy"), GML_NS, "Envelope", srsName=crs.uri,
                   axisLabels=" ".join(crs.labels), uomLabels=" ".join(crs.units), srsDimension="2")
    minx, miny, maxx, maxy = grid.bounds
    _el(envelope, GML_NS, "lowerCorner", " ".join(_num(v) for v in crs.ordered(minx, miny)))
    _el(envelope, GML_NS, "upperCorner", " ".join(_num(v) for v in crs.ordered(maxx, maxy)))
    _el(node, WCS_NS, "CoverageId", identifier)
    function = _el(_el(node, GML_NS, "coverageFunction"), GML_NS, "GridFunction")
    _el(function, GML_NS, "sequenceRule", "Linear", axisOrder="+1 +2")
    _el(function, GML_NS, "startPoint", "0 0")
    _domain(_el(node, GML_NS, "domainSet"), identifier, grid)
    _range_type(_el(node, GMLCOV_NS, "rangeType"), grid)
    parameters = _el(node, WCS_NS, "ServiceParameters")
    _el(parameters, WCS_NS, "CoverageSubtype", "RectifiedGridCoverage")
    _el(parameters, WCS_NS, "nativeFormat", GEOTIFF)


def _domain(domain: etree._Element, identifier: str, grid: Grid) -> None:
    crs, t = grid.crs, grid.transform
    rectified = _el(domain, GML_NS, "RectifiedGrid", dimension="2")
    rectified.set(f"{{{GML_NS}}}id", f"grid_{identifier}")
    envelope = _el(_el(rectified, GML_NS, "limits"), GML_NS, "GridEnvelope")
    _el(envelope, GML_NS, "low", "0 0")
    _el(envelope, GML_NS, "high", f"{grid.width - 1} {grid.height - 1}")
    _el(rectified, GML_NS, "axisLabels", "i j")
    point = _el(_el(rectified, GML_NS, "origin"), GML_NS, "Point", srsName=crs.uri)
    point.set(f"{{{GML_NS}}}id", f"origin_{identifier}")
    # GML grid points are pixel centres
    centre = t @ (0.5, 0.5)
    _el(point, GML_NS, "pos", " ".join(_num(v) for v in crs.ordered(*centre)))
    for dx, dy in ((t.a, t.d), (t.b, t.e)):  # i: one column; j: one row
        _el(rectified, GML_NS, "offsetVector", " ".join(_num(v) for v in crs.ordered(dx, dy)),
            srsName=crs.uri)


def _range_type(range_type: etree._Element, grid: Grid) -> None:
    record = _el(range_type, SWE_NS, "DataRecord")
    for index, name in enumerate(grid.band_names):
        dtype = grid.dtypes[index]
        field = _el(record, SWE_NS, "field", name=name)
        quantity = _el(field, SWE_NS, "Quantity",
                       definition=f"{DATA_TYPE_URI}{coverage.OGC_DATA_TYPES.get(dtype, dtype)}")
        _el(quantity, SWE_NS, "description", f"Band {index + 1} ({dtype})")
        if grid.nodata is not None:
            nil = _el(_el(quantity, SWE_NS, "nilValues"), SWE_NS, "NilValues")
            _el(nil, SWE_NS, "nilValue", _nodata_text(grid.nodata), reason=NIL_REASON)
        _el(quantity, SWE_NS, "uom", code="1")
        low, high = coverage.data_range(dtype)
        allowed = _el(_el(quantity, SWE_NS, "constraint"), SWE_NS, "AllowedValues")
        _el(allowed, SWE_NS, "interval", f"{_nodata_text(low)} {_nodata_text(high)}")


def _nodata_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# -- GetCoverage -------------------------------------------------------------------------------

def get_coverage(req: OWSRequest) -> Response:
    if req.xml is not None:
        identifier, fmt, request = _xml_coverage_request(req.xml)
    else:
        identifier, fmt, request = _kvp_coverage_request(req)
    if not identifier:
        raise OWSException("MissingParameterValue", "Parameter COVERAGEID is required", locator="coverageId")
    if fmt and fmt.strip().lower() not in FORMAT_ALIASES:
        raise OWSException("InvalidParameterValue", f"Format {fmt} is not supported; use {GEOTIFF}",
                           locator="format")
    _resource, dataset = _find(req, identifier, perms.DOWNLOAD)
    grid = _grid(req, dataset)
    out = coverage.plan(grid, request, req.settings.WCS_MAX_PIXELS)
    with raster_store(req.settings).reading(dataset.location) as path:
        target = coverage_geotiff.write_geotiff(path, grid, out)
    return _stream_file(target, f"{coverage_id(dataset)}.tif")


def _stream_file(target: str, filename: str) -> Response:
    """Stream a temporary file, already unlinked: the open handle keeps its data, and nothing
    stays on disk whether or not the client reads the response to its end."""
    handle = open(target, "rb")  # noqa: SIM115  (closed by the generator)
    os.unlink(target)
    size = os.fstat(handle.fileno()).st_size

    def chunks():
        with handle:
            while block := handle.read(1 << 20):
                yield block

    return StreamingResponse(chunks(), media_type=GEOTIFF, headers={
        "Content-Length": str(size), "Content-Disposition": f'attachment; filename="{filename}"'})


def _kvp_coverage_request(req: OWSRequest) -> tuple[str | None, str | None, CoverageRequest]:
    values = _all_values(req)
    request = CoverageRequest(
        subsets=[parse_subset(text) for text in values.get("SUBSET", [])],
        subsetting_crs=req.get("SUBSETTINGCRS"), output_crs=req.get("OUTPUTCRS"),
        scaling=_kvp_scaling(req), interpolation=req.get("INTERPOLATION"))
    bands = req.get("RANGESUBSET")
    if bands:
        request.bands = [b.strip() for b in bands.split(",") if b.strip()]
    identifier = req.get("COVERAGEID") or req.get("COVERAGE") or req.get("IDENTIFIER")
    return identifier, req.get("FORMAT"), request


def _all_values(req: OWSRequest) -> dict[str, list[str]]:
    """Every value of each KVP key: SUBSET repeats (one per axis)."""
    multi = req.extra.get("multi_params")
    if multi:
        return multi
    return {key: [value] for key, value in req.params.items()}


# axis [, crs] ( low [, high] )
SUBSET_RE = re.compile(
    r"^\s*([^,(\s]+)\s*(?:,\s*([^()]+?)\s*)?\(\s*([^,()]*?)\s*(?:,\s*([^,()]*?)\s*)?\)\s*$")


def parse_subset(text: str) -> Subset:
    """``axis(low,high)``, ``axis(point)`` or ``axis,crs(low,high)``; ``*`` leaves an end open."""
    match = SUBSET_RE.match(text)
    if not match:
        raise OWSException("InvalidSubsetting", f"SUBSET {text!r} is not axis(low,high) or axis(point)",
                           locator="subset")
    axis, crs, first, second = match.groups()
    if second is None:
        return Subset(axis, point=_bound(first, text, open_allowed=False), crs=crs)
    return Subset(axis, low=_bound(first, text), high=_bound(second, text), crs=crs)


def _bound(value: str, text: str, open_allowed: bool = True) -> float | None:
    value = value.strip().strip('"').strip("'")
    if value == "*" and open_allowed:
        return None
    try:
        return _finite(value)
    except ValueError:
        raise OWSException("InvalidSubsetting", f"SUBSET {text!r}: {value!r} is not a number",
                           locator="subset") from None


def _finite(text: str) -> float:
    """``float(text)`` refusing NaN and infinities with the ValueError of any other non-number:
    they pass every ``<`` and ``>`` check and fail only when the grid is computed."""
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(text)
    return number


AXIS_VALUES_RE = re.compile(r"([^,(\s]+)\s*\(\s*([^()]*)\)")


def _axis_values(text: str | None, name: str) -> list[tuple[str, list[str]]]:
    """``i(10),j(20)`` → [("i", ["10"]), ("j", ["20"])]; nothing for an absent parameter."""
    if not text:
        return []
    found = AXIS_VALUES_RE.findall(text)
    if not found:
        raise OWSException("InvalidParameterValue", f"{name} {text!r} is not axis(value),...",
                           locator=name.lower())
    return [(axis, [v.strip() for v in values.split(",")]) for axis, values in found]


def _kvp_scaling(req: OWSRequest) -> Scaling:
    scaling = Scaling()
    try:
        if req.get("SCALEFACTOR"):
            scaling.factor = _finite(req.get("SCALEFACTOR") or "")
        for axis, values in _axis_values(req.get("SCALEAXES"), "SCALEAXES"):
            scaling.axis_factors[axis] = _finite(values[0])
        for axis, values in _axis_values(req.get("SCALESIZE"), "SCALESIZE"):
            scaling.sizes[axis] = int(values[0])
        for axis, values in _axis_values(req.get("SCALEEXTENT"), "SCALEEXTENT"):
            scaling.extents[axis] = (int(values[0]), int(values[1]))
    except (ValueError, IndexError):
        raise OWSException("InvalidParameterValue", "Scaling values must be numbers",
                           locator="scaling") from None
    return scaling


def _xml_coverage_request(root: Any) -> tuple[str | None, str | None, CoverageRequest]:
    request = CoverageRequest()
    identifier = child_text(root, "CoverageId")
    fmt = child_text(root, "format")
    for element in root:
        name = local_name(element)
        if name in ("DimensionTrim", "DimensionSlice"):
            request.subsets.append(_xml_subset(element, name))
    extension = first_child(root, "Extension")
    if extension is not None:
        for element in extension.iter():
            _xml_extension(element, request)
    return identifier, fmt, request


def _xml_subset(element: Any, name: str) -> Subset:
    axis = child_text(element, "Dimension") or ""
    if name == "DimensionSlice":
        return Subset(axis, point=_bound(child_text(element, "SlicePoint") or "", axis, open_allowed=False))
    low, high = child_text(element, "TrimLow"), child_text(element, "TrimHigh")
    return Subset(axis, low=_bound(low, axis) if low else None, high=_bound(high, axis) if high else None)


def _xml_extension(element: Any, request: CoverageRequest) -> None:
    name = local_name(element)
    text = (element.text or "").strip()
    try:
        if name == "subsettingCrs":
            request.subsetting_crs = text
        elif name == "outputCrs":
            request.output_crs = text
        elif name == "globalInterpolation":
            request.interpolation = text
        elif name == "ScaleByFactor":
            request.scaling.factor = _finite(child_text(element, "scaleFactor") or "")
        elif name == "ScaleAxis":
            request.scaling.axis_factors[child_text(element, "axis") or ""] = _finite(
                child_text(element, "scaleFactor") or "")
        elif name == "TargetAxisSize":
            request.scaling.sizes[child_text(element, "axis") or ""] = int(
                _finite(child_text(element, "targetSize") or ""))
        elif name == "TargetAxisExtent":
            request.scaling.extents[child_text(element, "axis") or ""] = (
                int(_finite(child_text(element, "low") or "")),
                int(_finite(child_text(element, "high") or "")))
        elif name == "RangeComponent":
            request.bands = [*(request.bands or []), text]
        elif name == "RangeInterval":
            start, end = child_text(element, "startComponent"), child_text(element, "endComponent")
            request.bands = [*(request.bands or []), f"{start}:{end}"]
    except ValueError:
        raise OWSException("InvalidParameterValue", f"{name}: not a number", locator=name) from None
