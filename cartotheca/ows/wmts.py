"""cartotheca.ows.wmts: the Web Map Tile Service 1.0.0 (KVP) over the catalogue's datasets.

Every dataset the requester may view is a layer in WebMercatorQuad and WorldCRS84Quad, as PNG
(and as Mapbox vector tiles for vector data). GetTile draws with ``ows.tiles``, the code behind
the XYZ routes; the capabilities advertise those routes as the RESTful ResourceURL, so clients
that prefer REST fetch the very same tiles.
"""

from __future__ import annotations

import math
import urllib.parse
from functools import lru_cache
from typing import Any

import pyproj
from lxml import etree
from starlette.responses import Response

from cartotheca import siteurl, xmlsafe
from cartotheca.catalogue.datasets import get_dataset, visible_datasets
from cartotheca.catalogue.service_metadata import service_metadata
from cartotheca.errors import (
    CartothecaError,
    NotFound,
    OWSException,
)
from cartotheca.ows import service_identity, tiles
from cartotheca.ows.request import OWSRequest

WMTS_NS = "http://www.opengis.net/wmts/1.0"
OWS_NS = "http://www.opengis.net/ows/1.1"
XLINK = "http://www.w3.org/1999/xlink"
GML_NS = "http://www.opengis.net/gml"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
VERSION = "1.0.0"
SUPPORTED_CRS = {"WebMercatorQuad": "urn:ogc:def:crs:EPSG::3857",
                 "WorldCRS84Quad": "urn:ogc:def:crs:OGC:1.3:CRS84"}
# WorldCRS84Quad (two tiles at level 0) matches no well-known scale set
WELL_KNOWN_SCALE_SETS = {"WebMercatorQuad": "urn:ogc:def:wkss:OGC:1.0:GoogleMapsCompatible"}
MERCATOR_MAX_LAT = 85.0511287798
EXTENSIONS = {tiles.PNG: "png", tiles.MVT: "pbf"}
_TO_MERCATOR = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)


def handle(req: OWSRequest) -> Response:
    operation = req.operation.lower()
    if not operation:
        raise OWSException("MissingParameterValue", "Parameter REQUEST is required", locator="request")
    if operation == "getcapabilities":
        return get_capabilities(req)
    _check_version(req)
    if operation == "gettile":
        return get_tile(req)
    raise OWSException("OperationNotSupported", f"Request {req.operation} is not supported by this WMTS",
                       locator="request")


def _check_version(req: OWSRequest) -> None:
    version = req.get("VERSION")
    if version is not None and version != VERSION:
        raise OWSException("VersionNegotiationFailed", f"WMTS version {version} is not supported; use 1.0.0",
                           locator="version")


# -- GetTile -----------------------------------------------------------------------------------

def get_tile(req: OWSRequest) -> Response:
    layer = req.require("LAYER")
    tms_id = req.require("TILEMATRIXSET")
    matrix = req.require("TILEMATRIX")
    row, col = _integer(req, "TILEROW"), _integer(req, "TILECOL")
    media_type = _format(req.get("FORMAT"))
    if tms_id not in tiles.TILE_MATRIX_SETS:
        raise OWSException("InvalidParameterValue", f"Unknown TileMatrixSet {tms_id}",
                           locator="tilematrixset")
    tms = tiles.tile_matrix_set(tms_id)
    z = _zoom(tms, matrix)
    try:
        resource, dataset = get_dataset(req.session, req.principal, req.settings, layer)
    except NotFound:
        raise OWSException("InvalidParameterValue", f"Unknown layer {layer}", locator="layer") from None
    _check_in_range(resource, tms, z, row, col)
    if media_type not in tiles.formats_for(dataset):
        raise OWSException("InvalidParameterValue", f"Layer {layer} has no {media_type} tiles",
                           locator="format")
    style = req.get("STYLE")
    if style in ("default", dataset.name, resource.alternate):
        style = None
    job = tiles.plan_tile(req.settings, resource, dataset, tms_id, z, col, row, media_type, style)
    body = tiles.draw_tile(req.settings, job)
    headers = {"ETag": job.etag}
    if not body:
        return Response(status_code=204, media_type=media_type, headers=headers)
    return Response(body, media_type=media_type, headers=headers)


def _integer(req: OWSRequest, name: str) -> int:
    text = req.require(name)
    try:
        return int(text)
    except ValueError:
        raise OWSException("InvalidParameterValue", f"{name} must be an integer",
                           locator=name.lower()) from None


def _format(value: str | None) -> str:
    try:
        return tiles.parse_format(value)
    except CartothecaError as exc:
        raise OWSException("InvalidParameterValue", exc.message, locator="format") from None


def _zoom(tms: Any, identifier: str) -> int:
    # Some clients prefix the matrix with its set ("EPSG:3857:5"); the level is the last part.
    text = identifier.rsplit(":", 1)[-1]
    try:
        z = int(text)
    except ValueError:
        z = -1
    if not tms.minzoom <= z <= tms.maxzoom:
        raise OWSException("InvalidParameterValue", f"Unknown TileMatrix {identifier}", locator="tilematrix")
    return z


def _check_in_range(resource: Any, tms: Any, z: int, row: int, col: int) -> None:
    """TileOutOfRange outside the tile matrix or the limits the capabilities advertise."""
    try:
        tiles.check_tile(tms, z, col, row)
    except tiles.TileOutOfRange as exc:
        locator = "tilerow" if not 0 <= row < tms.matrix(z).matrixHeight else "tilecol"
        raise OWSException("TileOutOfRange", exc.message, locator=locator) from None
    limits = layer_limits(resource, tms, z)
    if limits is None:
        return
    min_row, max_row, min_col, max_col = limits
    if not min_row <= row <= max_row:
        raise OWSException("TileOutOfRange", f"Tile row {row} is outside the layer's rows {min_row}.."
                           f"{max_row} at matrix {z}", locator="tilerow")
    if not min_col <= col <= max_col:
        raise OWSException("TileOutOfRange", f"Tile column {col} is outside the layer's columns "
                           f"{min_col}..{max_col} at matrix {z}", locator="tilecol")


def layer_limits(resource: Any, tms: Any, z: int) -> tuple[int, int, int, int] | None:
    """(min row, max row, min col, max col) of the tiles over the dataset's lon/lat extent."""
    box = _tms_box(resource, tms)
    return None if box is None else _limits(box, _matrix_geometry(tms.id, z))


def _tms_box(resource: Any, tms: Any) -> tuple[float, float, float, float] | None:
    """The dataset's lon/lat extent in the tile matrix set's CRS (clamped to its domain)."""
    if resource.ll_minx is None:
        return None
    west, east = max(resource.ll_minx, -180.0), min(resource.ll_maxx, 180.0)
    limit = MERCATOR_MAX_LAT if tms.id == "WebMercatorQuad" else 90.0
    south, north = max(resource.ll_miny, -limit), min(resource.ll_maxy, limit)
    if west > east or south > north:
        return None
    if tms.id == "WebMercatorQuad":
        (west, east), (south, north) = _TO_MERCATOR.transform([west, east], [south, north])
    return west, south, east, north


@lru_cache(maxsize=128)
def _matrix_geometry(tms_id: str, z: int) -> tuple[float, float, float, float, int, int]:
    """Top-left corner, tile width and height in CRS units, and matrix size of one level."""
    matrix = tiles.tile_matrix_set(tms_id).matrix(z)
    x0, y0 = matrix.pointOfOrigin
    return (x0, y0, matrix.cellSize * matrix.tileWidth, matrix.cellSize * matrix.tileHeight,
            matrix.matrixWidth, matrix.matrixHeight)


def _limits(box: tuple[float, float, float, float],
            geometry: tuple[float, float, float, float, int, int]) -> tuple[int, int, int, int]:
    west, south, east, north = box
    x0, y0, span_x, span_y, width, height = geometry
    # An east or south edge exactly on a tile boundary does not reach into the next tile.
    min_col, max_col = _floor((west - x0) / span_x), _ceil((east - x0) / span_x) - 1
    min_row, max_row = _floor((y0 - north) / span_y), _ceil((y0 - south) / span_y) - 1
    max_col, max_row = max(max_col, min_col), max(max_row, min_row)
    return (min(max(min_row, 0), height - 1), min(max(max_row, 0), height - 1),
            min(max(min_col, 0), width - 1), min(max(max_col, 0), width - 1))


def _floor(value: float) -> int:
    # Tile edges computed in floating point land a hair off their integer (180 / 2**18 ...).
    nearest = round(value)
    return nearest if abs(value - nearest) < 1e-6 else math.floor(value)


def _ceil(value: float) -> int:
    nearest = round(value)
    return nearest if abs(value - nearest) < 1e-6 else math.ceil(value)


# -- GetCapabilities ---------------------------------------------------------------------------

def get_capabilities(req: OWSRequest) -> Response:
    rows = visible_datasets(req.session, req.principal, req.settings)
    body = capabilities(req.service_url, req.settings, rows)
    return Response(body, media_type="application/xml")


def _el(parent: etree._Element, tag: str, text: str | None = None, ns: str = WMTS_NS,
        **attrs: str) -> etree._Element:
    return xmlsafe.sub_element(parent, f"{{{ns}}}{tag}", text, attrs)


def _ows(parent: etree._Element, tag: str, text: str | None = None, **attrs: str) -> etree._Element:
    return _el(parent, tag, text, ns=OWS_NS, **attrs)


def _num(value: float) -> str:
    return repr(float(value)) if abs(value) >= 1e-4 or value == 0 else f"{value:.12g}"


def capabilities(service_url: str, settings: Any, rows: list[tuple[Any, Any]]) -> bytes:
    root = etree.Element(f"{{{WMTS_NS}}}Capabilities", version=VERSION, nsmap={
        None: WMTS_NS, "ows": OWS_NS, "xlink": XLINK, "gml": GML_NS, "xsi": XSI})
    root.set(f"{{{XSI}}}schemaLocation",
             f"{WMTS_NS} http://schemas.opengis.net/wmts/1.0/wmtsGetCapabilities_response.xsd")
    meta = service_metadata(settings, "WMTS")
    service_identity.ows_identification(root, OWS_NS, meta, "OGC WMTS", [VERSION])
    service_identity.ows_provider(root, OWS_NS, meta)
    _operations(root, service_url)
    contents = _el(root, "Contents")
    for resource, dataset in rows:
        _layer(contents, settings, resource, dataset)
    for tms_id in tiles.TILE_MATRIX_SETS:
        _tile_matrix_set(contents, tiles.tile_matrix_set(tms_id))
    query = urllib.parse.urlencode({"SERVICE": "WMTS", "REQUEST": "GetCapabilities", "VERSION": VERSION})
    _el(root, "ServiceMetadataURL").set(f"{{{XLINK}}}href", f"{service_url}?{query}")
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def _operations(root: etree._Element, service_url: str) -> None:
    metadata = _ows(root, "OperationsMetadata")
    for name in ("GetCapabilities", "GetTile"):
        operation = _ows(metadata, "Operation", name=name)
        get = _ows(_ows(_ows(operation, "DCP"), "HTTP"), "Get")
        get.set(f"{{{XLINK}}}href", f"{service_url}?")
        constraint = _ows(get, "Constraint", name="GetEncoding")
        _ows(_ows(constraint, "AllowedValues"), "Value", "KVP")


def _layer(contents: etree._Element, settings: Any, resource: Any, dataset: Any) -> None:
    alternate = resource.alternate or f"{dataset.workspace}:{dataset.name}"
    layer = _el(contents, "Layer")
    _ows(layer, "Title", resource.title or dataset.name)
    if resource.abstract:
        _ows(layer, "Abstract", resource.abstract)
    if resource.ll_minx is not None:
        box = _ows(layer, "WGS84BoundingBox", crs="urn:ogc:def:crs:OGC:2:84")
        _ows(box, "LowerCorner", f"{_num(resource.ll_minx)} {_num(resource.ll_miny)}")
        _ows(box, "UpperCorner", f"{_num(resource.ll_maxx)} {_num(resource.ll_maxy)}")
    _ows(layer, "Identifier", alternate)
    style = _el(layer, "Style", isDefault="true")
    _ows(style, "Identifier", "default")
    formats = tiles.formats_for(dataset)
    for media_type in formats:
        _el(layer, "Format", media_type)
    for tms_id in tiles.TILE_MATRIX_SETS:
        _tile_matrix_set_link(layer, resource, tiles.tile_matrix_set(tms_id))
    base = f"{siteurl.base(settings)}/tiles/{urllib.parse.quote(alternate, safe=':')}"
    for media_type in formats:
        template = f"{base}/{{TileMatrixSet}}/{{TileMatrix}}/{{TileCol}}/{{TileRow}}.{EXTENSIONS[media_type]}"
        _el(layer, "ResourceURL", format=media_type, resourceType="tile", template=template)


def _tile_matrix_set_link(layer: etree._Element, resource: Any, tms: Any) -> None:
    link = _el(layer, "TileMatrixSetLink")
    _el(link, "TileMatrixSet", tms.id)
    box = _tms_box(resource, tms)
    if box is None:
        return
    limits = _el(link, "TileMatrixSetLimits")
    for z in range(tms.minzoom, tms.maxzoom + 1):
        found = _limits(box, _matrix_geometry(tms.id, z))
        entry = _el(limits, "TileMatrixLimits")
        _el(entry, "TileMatrix", str(z))
        for tag, value in zip(("MinTileRow", "MaxTileRow", "MinTileCol", "MaxTileCol"), found, strict=True):
            _el(entry, tag, str(value))


def _tile_matrix_set(contents: etree._Element, tms: Any) -> None:
    node = _el(contents, "TileMatrixSet")
    _ows(node, "Identifier", tms.id)
    _ows(node, "SupportedCRS", SUPPORTED_CRS[tms.id])
    if tms.id in WELL_KNOWN_SCALE_SETS:
        _el(node, "WellKnownScaleSet", WELL_KNOWN_SCALE_SETS[tms.id])
    for z in range(tms.minzoom, tms.maxzoom + 1):
        matrix = tms.matrix(z)
        entry = _el(node, "TileMatrix")
        _ows(entry, "Identifier", str(z))
        _el(entry, "ScaleDenominator", repr(float(matrix.scaleDenominator)))
        x, y = matrix.pointOfOrigin
        _el(entry, "TopLeftCorner", f"{_num(x)} {_num(y)}")
        _el(entry, "TileWidth", str(matrix.tileWidth))
        _el(entry, "TileHeight", str(matrix.tileHeight))
        _el(entry, "MatrixWidth", str(matrix.matrixWidth))
        _el(entry, "MatrixHeight", str(matrix.matrixHeight))
