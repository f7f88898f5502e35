"""cartotheca.ows.wms: the Web Map Service (1.1.1 and 1.3.0) over the catalogue's datasets.

GetCapabilities lists what the requester may view; GetMap, GetFeatureInfo and GetLegendGraphic
resolve each layer through ``catalogue.datasets.get_dataset`` (view permission) and draw with
``render``. Every client error is a ServiceExceptionReport with the code the standard names
(1.3.0 says InvalidCRS where 1.1.1 says InvalidSRS); nothing the client sends ends in a 500.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from starlette.responses import JSONResponse, Response

from cartotheca import timeutil
from cartotheca.catalogue.datasets import get_dataset_to_draw, visible_datasets
from cartotheca.db.models import DatasetAttribute
from cartotheca.errors import (
    InvalidInput,
    NotFound,
    OWSException,
)
from cartotheca.ows import capabilities, featureinfo, legend, render
from cartotheca.ows.crs import CRSInfo, parse_crs
from cartotheca.ows.request import OWSRequest
from cartotheca.styling import sld as sldlib

# FORMAT values (lower case, spaces removed) → the media type answered with
FORMAT_ALIASES = {"png": "image/png", "png32": "image/png", "png8": render.PNG8, "image/png8": render.PNG8,
                  "image/png;mode=8bit": render.PNG8, "jpeg": "image/jpeg", "jpg": "image/jpeg",
                  "pdf": "application/pdf", "webp": "image/webp", "image/png;mode=32bit": "image/png"}
DEFAULT_PIXEL_TOLERANCE = 5
MAX_FEATURE_COUNT = 1000


def handle(req: OWSRequest) -> Response:
    version = negotiate_version(req)
    operation = req.operation.lower()
    if not operation:
        raise OWSException("MissingParameterValue", "Parameter REQUEST is required", locator="request")
    if operation == "getcapabilities":
        return get_capabilities(req, version)
    if operation == "getmap":
        return get_map(req, version)
    if operation == "getfeatureinfo":
        return get_feature_info(req, version)
    if operation == "getlegendgraphic":
        return get_legend_graphic(req, version)
    raise OWSException("OperationNotSupported", f"Request {req.operation} is not supported by this WMS",
                       locator="request")


def negotiate_version(req: OWSRequest) -> str:
    """1.3.0 unless the client asks for an earlier version; without VERSION a GetMap that
    names SRS (not CRS) is a 1.1.1 request."""
    value = req.get("VERSION") or req.get("WMTVER")
    if value is None:
        if req.operation.lower() != "getcapabilities" and req.get("SRS") and not req.get("CRS"):
            return "1.1.1"
        return "1.3.0"
    parts = tuple(int(p) for p in re.findall(r"\d+", value)[:3])
    return "1.3.0" if parts >= (1, 3) else "1.1.1"


# -- GetCapabilities --------------------------------------------------------------------------

def get_capabilities(req: OWSRequest, version: str) -> Response:
    rows = visible_datasets(req.session, req.principal, req.settings)
    infos = capabilities.layer_infos(req.session, req.settings, rows)
    body = capabilities.capabilities(version, req.service_url, req.settings, infos)
    media_type = "text/xml" if version == "1.3.0" or req.get("FORMAT") == "text/xml" \
        else "application/vnd.ogc.wms_xml"
    return Response(body, media_type=media_type)


# -- shared request parts ---------------------------------------------------------------------

@dataclass
class View:
    bbox: tuple[float, float, float, float]  # x/y order in crs units
    crs: CRSInfo
    width: int
    height: int


def parse_view(req: OWSRequest, version: str) -> View:
    crs_param, crs_code = ("CRS", "InvalidCRS") if version == "1.3.0" else ("SRS", "InvalidSRS")
    crs_value = req.get(crs_param) or req.get("SRS" if crs_param == "CRS" else "CRS")
    if crs_value is None:
        raise OWSException("MissingParameterValue", f"Parameter {crs_param} is required",
                           locator=crs_param.lower())
    try:
        crs = parse_crs(crs_value)
    except InvalidInput as exc:
        raise OWSException(crs_code, exc.message, locator=crs_param.lower()) from None
    bbox = _bbox(req.require("BBOX"))
    if version == "1.3.0" and crs.lat_first:
        bbox = (bbox[1], bbox[0], bbox[3], bbox[2])
    width, height = _size(req, "WIDTH"), _size(req, "HEIGHT")
    return View(bbox, crs, width, height)


def _bbox(value: str) -> tuple[float, float, float, float]:
    try:
        numbers = [float(v) for v in value.split(",")[:4]]
    except ValueError:
        numbers = []
    if len(numbers) != 4 or not all(abs(n) < float("inf") for n in numbers):
        raise OWSException("InvalidParameterValue", "BBOX must be minx,miny,maxx,maxy", locator="bbox")
    if not (numbers[2] > numbers[0] and numbers[3] > numbers[1]):
        raise OWSException("InvalidParameterValue", "BBOX minimum must be below its maximum", locator="bbox")
    return numbers[0], numbers[1], numbers[2], numbers[3]


def _size(req: OWSRequest, name: str, default: int | None = None) -> int:
    value = req.get(name)
    if value is None:
        if default is not None:
            return default
        raise OWSException("MissingParameterValue", f"Parameter {name} is required", locator=name.lower())
    try:
        number = int(value)
    except ValueError:
        raise OWSException("InvalidParameterValue", f"{name} must be an integer",
                           locator=name.lower()) from None
    limit = req.settings.OWS_MAX_IMAGE_SIZE
    if not 0 < number <= limit:
        raise OWSException("InvalidParameterValue", f"{name} must be between 1 and {limit}",
                           locator=name.lower())
    return number


def resolve_layer(req: OWSRequest, name: str, locator: str = "layers") -> tuple[Any, Any]:
    resource, dataset, _ = find_layer(req, name, locator)
    return resource, dataset


def find_layer(req: OWSRequest, name: str, locator: str = "layers") -> tuple[Any, Any, str | None]:
    """(resource, dataset, its default style's SLD or None) of a layer the requester may view."""
    try:
        return get_dataset_to_draw(req.session, req.principal, req.settings, name)
    except NotFound:
        raise OWSException("LayerNotDefined", f"Layer {name} is not defined", locator=locator) from None


def _names(value: str | None) -> list[str]:
    return [n.strip() for n in value.split(",")] if value else []


def layer_time(req: OWSRequest, resource: Any, dataset: Any) -> str | None:
    """The TIME value to draw a time-enabled layer at: the request's, or the latest."""
    if not dataset.has_time or not dataset.time_attribute:
        return None
    raw = req.params.get("TIME")
    if raw is not None and not raw.strip():
        raise OWSException("MissingDimensionValue", "TIME is empty", locator="time")
    if raw is None or raw.strip().lower() in ("current", "present", "now"):
        values = render.time_values(req.settings, resource, dataset)
        if not values:
            raise OWSException("MissingDimensionValue",
                               f"Layer {dataset.name} has no time values; give TIME", locator="time")
        return values[-1]
    try:
        timeutil.parse_time(raw)
    except timeutil.InvalidTime as exc:
        raise OWSException("InvalidDimensionValue", exc.message, locator="time") from None
    return raw


_DEFAULT_WORKSPACE = "\0default"


def _sld_body_layers(text: str) -> dict[tuple[str, str], str]:
    """SLD_BODY per layer, keyed (workspace, name); a bare name gets a placeholder workspace."""
    out = {}
    for name, body in sldlib.split_layers(text).items():
        workspace, sep, layer = name.strip().partition(":")
        out[(workspace, layer) if sep else (_DEFAULT_WORKSPACE, workspace)] = body
    return out


def layer_sld(req: OWSRequest, dataset: Any, style_name: str | None,
              sld_layers: dict[tuple[str, str], str] | None) -> str | None:
    """The SLD to draw ``dataset`` with: SLD_BODY's, a named style, or None for its default."""
    if sld_layers:
        body = sld_layers.get((dataset.workspace, dataset.name))
        if body is None:
            body = sld_layers.get((_DEFAULT_WORKSPACE, dataset.name))
        if body is not None and body.startswith("named:"):
            style_name = body[len("named:"):] or style_name
        elif body is not None:
            sldlib.first_user_style(body)  # a broken SLD_BODY is the client's error
            return body
    if not style_name:
        return None
    try:
        return render.dataset_sld(dataset, style_name)
    except render.UnknownStyle:
        raise OWSException("StyleNotDefined", f"Style {style_name} is not defined for layer "
                           f"{dataset.workspace}:{dataset.name}", locator="styles") from None


def map_layers(req: OWSRequest, names: list[str], styles: list[str]) -> list[render.LayerSpec]:
    sld_body = req.get("SLD_BODY")
    sld_layers = _sld_body_layers(sld_body) if sld_body else None
    if not names and sld_layers:
        names = [f"{w}:{n}" if w != _DEFAULT_WORKSPACE else n for w, n in sld_layers]
    if not names:
        raise OWSException("MissingParameterValue", "Parameter LAYERS is required", locator="layers")
    if styles and len(styles) != len(names) and any(styles):
        raise OWSException("StyleNotDefined", "STYLES must name one style per layer (or be empty)",
                           locator="styles")
    specs = []
    for index, name in enumerate(names):
        resource, dataset, default_style = find_layer(req, name)
        style_name = styles[index] if index < len(styles) else None
        sld = layer_sld(req, dataset, style_name or None, sld_layers) or default_style
        specs.append(render.LayerSpec(resource, dataset, sld=sld, time=layer_time(req, resource, dataset)))
    return specs


# -- GetMap -----------------------------------------------------------------------------------

def get_map(req: OWSRequest, version: str) -> Response:
    view = parse_view(req, version)
    image_format = _image_format(req.get("FORMAT") or "image/png")
    transparent = (req.get("TRANSPARENT") or "FALSE").strip().upper() == "TRUE"
    bgcolor = _bgcolor(req.get("BGCOLOR"))
    specs = map_layers(req, _names(req.get("LAYERS")), _names(req.params.get("STYLES")))
    try:
        data = render.render_image(req.settings, specs, view.bbox, view.crs.code, view.width, view.height,
                                   image_format=image_format, transparent=transparent, bgcolor=bgcolor)
    except timeutil.InvalidTime as exc:
        raise OWSException("InvalidDimensionValue", exc.message, locator="time") from None
    except render.RenderError as exc:
        raise OWSException("NoApplicableCode", exc.message) from None
    return Response(data, media_type=image_format)


def _normal_format(value: str) -> str:
    normal = value.strip().lower().replace(" ", "")
    return FORMAT_ALIASES.get(normal, normal)


def _image_format(value: str) -> str:
    normal = _normal_format(value)
    if normal not in render.available_formats():
        raise OWSException("InvalidFormat", f"Format {value} is not supported; use one of "
                           + ", ".join(render.available_formats()), locator="format")
    return normal


def _bgcolor(value: str | None) -> str:
    if value is None:
        return "#ffffff"
    match = re.fullmatch(r"(?:0x|#)?([0-9a-fA-F]{6})", value.strip())
    if not match:
        raise OWSException("InvalidParameterValue", "BGCOLOR must be 0xRRGGBB", locator="bgcolor")
    return f"#{match.group(1).lower()}"


# -- GetFeatureInfo ---------------------------------------------------------------------------

def get_feature_info(req: OWSRequest, version: str) -> Response:
    view = parse_view(req, version)
    names = _names(req.get("QUERY_LAYERS"))
    if not names:
        raise OWSException("MissingParameterValue", "Parameter QUERY_LAYERS is required",
                           locator="query_layers")
    info_format = (req.get("INFO_FORMAT") or "text/plain").strip()
    if info_format.lower().split(";")[0] not in featureinfo.FORMATS:
        raise OWSException("InvalidFormat", f"INFO_FORMAT {info_format} is not supported",
                           locator="info_format")
    i = _pixel(req, ("I", "X") if version == "1.3.0" else ("X", "I"), view.width, version)
    j = _pixel(req, ("J", "Y") if version == "1.3.0" else ("Y", "J"), view.height, version)
    count = _int(req.get("FEATURE_COUNT"), 1, "FEATURE_COUNT", 1, MAX_FEATURE_COUNT)
    tolerance = _int(req.get("BUFFER"), DEFAULT_PIXEL_TOLERANCE, "BUFFER", 0, 100)
    minx, miny, maxx, maxy = view.bbox
    px, py = (maxx - minx) / view.width, (maxy - miny) / view.height
    x, y = minx + (i + 0.5) * px, maxy - (j + 0.5) * py
    reach = max(tolerance, 0.5)  # BUFFER=0 is the clicked pixel itself, not a box of no area
    area = (x - reach * px, y - reach * py, x + reach * px, y + reach * py)
    results = []
    for name in names:
        resource, dataset = resolve_layer(req, name, locator="query_layers")
        if dataset.storage == "cog":
            results.append(featureinfo.query_raster(req.settings, resource, dataset, x, y, view.crs))
            continue
        hidden = set(req.session.scalars(select(DatasetAttribute.attribute).where(
            DatasetAttribute.dataset_id == dataset.resource_id, DatasetAttribute.visible.is_(False))))
        results.append(featureinfo.query_vector(req.settings, resource, dataset, area, view.crs, count,
                                                layer_time(req, resource, dataset), hidden))
    body, media_type = featureinfo.encode(results, info_format, req.settings)
    return Response(body, media_type=media_type)


def _pixel(req: OWSRequest, names: tuple[str, str], limit: int, version: str) -> int:
    value = req.get(names[0]) or req.get(names[1])
    if value is None:
        raise OWSException("MissingParameterValue", f"Parameter {names[0]} is required",
                           locator=names[0].lower())
    try:
        number = int(float(value))
    except (ValueError, OverflowError):  # also "nan" and "inf"
        number = -1
    if not 0 <= number < limit:
        raise OWSException("InvalidPoint" if version == "1.3.0" else "InvalidParameterValue",
                           f"{names[0]} must be a pixel of the map (0 to {limit - 1})",
                           locator=names[0].lower())
    return number


def _int(value: str | None, default: int, name: str, low: int, high: int) -> int:
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise OWSException("InvalidParameterValue", f"{name} must be an integer",
                           locator=name.lower()) from None
    return max(low, min(number, high))


# -- GetLegendGraphic -------------------------------------------------------------------------

def get_legend_graphic(req: OWSRequest, version: str) -> Response:
    name = req.get("LAYER") or (_names(req.get("LAYERS")) or [None])[0]
    if not name:
        raise OWSException("MissingParameterValue", "Parameter LAYER is required", locator="layer")
    resource, dataset = resolve_layer(req, name, locator="layer")
    image_format = _normal_format(req.get("FORMAT") or "image/png")
    if image_format not in legend.ENCODERS and image_format != legend.JSON:
        raise OWSException("InvalidFormat", f"Legend format {image_format} is not supported",
                           locator="format")
    sld_body = req.get("SLD_BODY")
    sld_layers = _sld_body_layers(sld_body) if sld_body else None
    text = layer_sld(req, dataset, req.get("STYLE"), sld_layers) or render.dataset_sld(dataset)
    scale = req.get("SCALE")
    try:
        scale_value = float(scale) if scale is not None else None
    except ValueError:
        raise OWSException("InvalidParameterValue", "SCALE must be a number", locator="scale") from None
    if image_format == legend.JSON:
        return JSONResponse(legend.legend_json(
            sldlib.first_user_style(text), layer_name=resource.alternate or name, title=resource.title,
            rule_name=req.get("RULE"), scale=scale_value))
    try:
        data = legend.legend_image(
            sldlib.first_user_style(text), width=_size(req, "WIDTH", 20), height=_size(req, "HEIGHT", 20),
            rule_name=req.get("RULE"), scale=scale_value, image_format=image_format,
            transparent=(req.get("TRANSPARENT") or "TRUE").upper() != "FALSE",
            title=resource.title)
    except RuntimeError as exc:
        raise OWSException("NoApplicableCode", f"The legend could not be drawn: {exc}") from None
    return Response(data, media_type=image_format)

