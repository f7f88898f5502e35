"""cartotheca.ows.capabilities: WMS 1.1.1 and 1.3.0 capabilities of the datasets a requester sees.

Built from stored metadata only (titles, extents, CRS, styles, keywords: three queries whatever
the number of layers); time-enabled layers add their TIME values, read once per dataset version
and cached. Operation URLs are the absolute public ``service_url``, since clients such as QGIS
send their next requests to exactly the URL advertised here.
"""

from __future__ import annotations

import math
import urllib.parse
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import pyproj
from lxml import etree
from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca import siteurl, xmlsafe
from cartotheca.catalogue.service_metadata import ANY_EPSG_NOTE, ServiceMetadata, service_metadata
from cartotheca.db.models import Keyword, Style
from cartotheca.db.models.resources import resource_keywords
from cartotheca.errors import InvalidInput
from cartotheca.ows import legend, render, service_identity
from cartotheca.ows.crs import parse_crs
from cartotheca.styling import sld as sldlib

WMS_NS = "http://www.opengis.net/wms"
XLINK = "http://www.w3.org/1999/xlink"
SLD_NS = "http://www.opengis.net/sld"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
FEATURE_INFO_FORMATS = ["text/plain", "text/html", "application/json", "application/vnd.ogc.gml"]
MERCATOR_MAX_LAT = 85.0511287798
LEGEND_FORMATS = ["image/png", "image/jpeg", legend.JSON]
LEGEND_SWATCH = 20  # GetLegendGraphic's default WIDTH and HEIGHT, the size LegendURL announces


@dataclass
class LayerInfo:
    resource: Any
    dataset: Any
    keywords: list[str]
    styles: list[tuple[str, str, str]]  # (name, title, SLD), default first
    times: list[str]


def layer_infos(session: Session, settings: Any, rows: list[tuple[Any, Any]]) -> list[LayerInfo]:
    ids = [resource.id for resource, _ in rows]
    keywords: dict[int, list[str]] = defaultdict(list)
    styles: dict[int, list[tuple[str, str, str]]] = defaultdict(list)
    if ids:
        for resource_id, name in session.execute(
                select(resource_keywords.c.resource_id, Keyword.name)
                .join(Keyword, Keyword.id == resource_keywords.c.keyword_id)
                .where(resource_keywords.c.resource_id.in_(ids)).order_by(Keyword.name)):
            keywords[resource_id].append(name)
        for dataset_id, name, title, body in session.execute(
                select(Style.dataset_id, Style.name, Style.sld_title, Style.sld_body)
                .where(Style.dataset_id.in_(ids)).order_by(Style.is_default.desc(), Style.id)):
            styles[dataset_id].append((name, title or name, body))
    infos = []
    for resource, dataset in rows:
        times = render.time_values(settings, resource, dataset) if dataset.has_time else []
        infos.append(LayerInfo(resource, dataset, keywords[resource.id], styles[resource.id]
                               or [(dataset.name, "Default", render.generated_sld(dataset))], times))
    return infos


def capabilities(version: str, service_url: str, settings: Any, layers: list[LayerInfo]) -> bytes:
    if version == "1.1.1":
        return _Writer111(service_url, settings).document(layers)
    return _Writer130(service_url, settings).document(layers)


def _geographic_extent(resource: Any) -> tuple[float, float, float, float]:
    if resource.ll_minx is None:
        return -180.0, -90.0, 180.0, 90.0
    return resource.ll_minx, resource.ll_miny, resource.ll_maxx, resource.ll_maxy


def _mercator_extent(ll: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    minx, miny, maxx, maxy = ll
    miny, maxy = max(miny, -MERCATOR_MAX_LAT), min(maxy, MERCATOR_MAX_LAT)
    x0, y0 = render.transform_point(minx, miny, "EPSG:4326", "EPSG:3857")
    x1, y1 = render.transform_point(maxx, maxy, "EPSG:4326", "EPSG:3857")
    return x0, y0, x1, y1


@lru_cache(maxsize=64)
def _area_of_use(code: str) -> tuple[float, float, float, float] | None:
    area = pyproj.CRS.from_user_input(code).area_of_use
    return (area.west, area.south, area.east, area.north) if area else None


def _projected_extent(ll: tuple[float, float, float, float], code: str
                      ) -> tuple[float, float, float, float] | None:
    """The geographic extent in ``code``'s units, x/y order; clipped to where the CRS is
    defined, None when the extent lies outside it."""
    if code == "EPSG:4326":
        return ll
    if code == "EPSG:3857":
        return _mercator_extent(ll)
    minx, miny, maxx, maxy = ll
    area = _area_of_use(code)
    if area is not None and area[0] <= area[2]:  # an area across the antimeridian is not clipped
        minx, miny = max(minx, area[0]), max(miny, area[1])
        maxx, maxy = min(maxx, area[2]), min(maxy, area[3])
        if minx > maxx or miny > maxy:
            return None
    box = _to_crs(code).transform_bounds(minx, miny, maxx, maxy, densify_pts=21)
    return box if all(math.isfinite(v) for v in box) else None


@lru_cache(maxsize=64)
def _to_crs(code: str) -> pyproj.Transformer:
    return pyproj.Transformer.from_crs("EPSG:4326", code, always_xy=True)


def _lat_first(code: str) -> bool:
    try:
        return parse_crs(code).lat_first
    except InvalidInput:  # an EPSG code PROJ no longer knows: list it, x/y order
        return False


def _native(info: LayerInfo, advertised: list[str]) -> tuple[str, tuple[float, float, float, float]] | None:
    resource, dataset = info.resource, info.dataset
    if not dataset.native_srid or resource.bbox_x0 is None:
        return None
    code = f"EPSG:{dataset.native_srid}"
    if code in advertised:
        return None
    return code, (resource.bbox_x0, resource.bbox_y0, resource.bbox_x1, resource.bbox_y1)


@lru_cache(maxsize=256)
def _legend_size(sld: str, title: str | None) -> tuple[int, int]:
    """The size of the image GetLegendGraphic draws for the style with its default swatch."""
    try:
        style = sldlib.first_user_style(sld)
    except InvalidInput:  # a broken stored style: its legend request reports the error
        return LEGEND_SWATCH, LEGEND_SWATCH
    return legend.legend_size(style, width=LEGEND_SWATCH, height=LEGEND_SWATCH, title=title)


def _union(boxes: list[tuple[float, float, float, float]]) -> tuple[float, float, float, float]:
    if not boxes:
        return -180.0, -90.0, 180.0, 90.0
    return (min(b[0] for b in boxes), min(b[1] for b in boxes),
            max(b[2] for b in boxes), max(b[3] for b in boxes))


def _fmt(value: float) -> str:
    return f"{value:.10g}"


class _Writer:
    version = ""
    ns = ""

    def __init__(self, service_url: str, settings: Any):
        self.url = service_url
        self.settings = settings
        self.meta: ServiceMetadata = service_metadata(settings, "WMS")
        self.advertised: list[str] = settings.WMS_ADVERTISED_CRS

    def el(self, parent: etree._Element, tag: str, text: str | None = None, **attrs: str) -> etree._Element:
        return xmlsafe.sub_element(parent, f"{{{self.ns}}}{tag}" if self.ns else tag, text, attrs)

    def link(self, parent: etree._Element, href: str) -> etree._Element:
        node = self.el(parent, "OnlineResource")
        node.set(f"{{{XLINK}}}type", "simple")
        node.set(f"{{{XLINK}}}href", href)
        return node

    def operation(self, parent: etree._Element, name: str, formats: list[str],
                  post: bool = False, tag: str | None = None) -> None:
        op = etree.SubElement(parent, tag) if tag else self.el(parent, name)
        for fmt in formats:
            self.el(op, "Format", fmt)
        http = self.el(self.el(op, "DCPType"), "HTTP")
        self.link(self.el(http, "Get"), f"{self.url}?")
        if post:
            self.link(self.el(http, "Post"), self.url)

    def service(self, root: etree._Element, name: str) -> None:
        service = self.el(root, "Service")
        self.el(service, "Name", name)
        self.el(service, "Title", self.meta.title)
        self.el(service, "Abstract", self.meta.abstract)
        service_identity.wms_keywords(service, self.ns, self.meta)
        self.link(service, f"{siteurl.base(self.settings)}/")
        service_identity.wms_contact_information(service, self.ns, self.meta)
        self.el(service, "Fees", self.meta.fees)
        self.el(service, "AccessConstraints", self.meta.access_constraints)
        if self.version == "1.3.0":
            self.el(service, "MaxWidth", str(self.settings.OWS_MAX_IMAGE_SIZE))
            self.el(service, "MaxHeight", str(self.settings.OWS_MAX_IMAGE_SIZE))

    def legend_url(self, info: LayerInfo, style: str) -> str:
        query = urllib.parse.urlencode({
            "SERVICE": "WMS", "VERSION": self.version, "REQUEST": "GetLegendGraphic",
            "FORMAT": "image/png", "LAYER": info.resource.alternate or
            f"{info.dataset.workspace}:{info.dataset.name}", "STYLE": style})
        return f"{self.url}?{query}"

    def styles(self, layer: etree._Element, info: LayerInfo) -> None:
        for name, title, sld in info.styles:
            style = self.el(layer, "Style")
            self.el(style, "Name", name)
            self.el(style, "Title", title)
            width, height = _legend_size(sld, info.resource.title)
            legend_url = self.el(style, "LegendURL", width=str(width), height=str(height))
            self.el(legend_url, "Format", "image/png")
            self.link(legend_url, self.legend_url(info, name))

    def identity(self, layer: etree._Element, info: LayerInfo) -> None:
        resource, dataset = info.resource, info.dataset
        self.el(layer, "Name", resource.alternate or f"{dataset.workspace}:{dataset.name}")
        self.el(layer, "Title", resource.title or dataset.name)
        self.el(layer, "Abstract", resource.abstract or "")
        if info.keywords:
            keywords = self.el(layer, "KeywordList")
            for word in info.keywords:
                self.el(keywords, "Keyword", word)

    def request_section(self, capability: etree._Element) -> None:
        raise NotImplementedError

    def document(self, layers: list[LayerInfo]) -> bytes:
        raise NotImplementedError


class _Writer130(_Writer):
    version = "1.3.0"
    ns = WMS_NS

    def document(self, layers: list[LayerInfo]) -> bytes:
        root = etree.Element(f"{{{WMS_NS}}}WMS_Capabilities", nsmap={
            None: WMS_NS, "xlink": XLINK, "sld": SLD_NS, "xsi": XSI}, version="1.3.0")
        root.set(f"{{{XSI}}}schemaLocation",
                 f"{WMS_NS} http://schemas.opengis.net/wms/1.3.0/capabilities_1_3_0.xsd "
                 f"{SLD_NS} http://schemas.opengis.net/sld/1.1.0/sld_capabilities.xsd")
        self.service(root, "WMS")
        capability = self.el(root, "Capability")
        request = self.el(capability, "Request")
        self.operation(request, "GetCapabilities", ["text/xml"], post=True)
        self.operation(request, "GetMap", render.available_formats())
        self.operation(request, "GetFeatureInfo", FEATURE_INFO_FORMATS)
        self.operation(request, "GetLegendGraphic", LEGEND_FORMATS, tag=f"{{{SLD_NS}}}GetLegendGraphic")
        exception = self.el(capability, "Exception")
        self.el(exception, "Format", "XML")
        top = self.el(capability, "Layer")
        self.el(top, "Title", self.meta.title)
        self.el(top, "Abstract", ANY_EPSG_NOTE)
        for code in [*self.advertised, "CRS:84"]:
            self.el(top, "CRS", code)
        lls = [_geographic_extent(info.resource) for info in layers]
        self.geographic(top, _union(lls))
        for info, ll in zip(layers, lls, strict=True):
            self.layer(top, info, ll)
        return etree.tostring(root, xml_declaration=True, encoding="UTF-8")

    def geographic(self, layer: etree._Element, ll: tuple[float, float, float, float]) -> None:
        box = self.el(layer, "EX_GeographicBoundingBox")
        for tag, value in zip(("westBoundLongitude", "eastBoundLongitude", "southBoundLatitude",
                               "northBoundLatitude"), (ll[0], ll[2], ll[1], ll[3]), strict=True):
            self.el(box, tag, _fmt(value))
        self.bbox(layer, "CRS:84", ll)
        for code in self.advertised:
            extent = _projected_extent(ll, code)
            if extent is not None:
                self.bbox(layer, code, extent)

    def bbox(self, layer: etree._Element, crs: str, box: tuple[float, float, float, float]) -> None:
        """A BoundingBox from an x/y-order box, in the CRS's own axis order as 1.3.0 wants."""
        if crs != "CRS:84" and _lat_first(crs):
            box = (box[1], box[0], box[3], box[2])
        self.el(layer, "BoundingBox", CRS=crs, minx=_fmt(box[0]), miny=_fmt(box[1]),
                maxx=_fmt(box[2]), maxy=_fmt(box[3]))

    def layer(self, parent: etree._Element, info: LayerInfo, ll: tuple) -> None:
        layer = self.el(parent, "Layer", queryable="1", opaque="0")
        self.identity(layer, info)
        native = _native(info, self.advertised)
        if native:
            self.el(layer, "CRS", native[0])
        self.geographic(layer, ll)
        if native:
            self.bbox(layer, *native)
        if info.times:
            self.el(layer, "Dimension", ",".join(info.times), name="time", units="ISO8601",
                    default=info.times[-1], nearestValue="0")
        self.styles(layer, info)


class _Writer111(_Writer):
    version = "1.1.1"

    def document(self, layers: list[LayerInfo]) -> bytes:
        root = etree.Element("WMT_MS_Capabilities", version="1.1.1", nsmap={"xlink": XLINK})
        self.service(root, "OGC:WMS")
        capability = self.el(root, "Capability")
        request = self.el(capability, "Request")
        self.operation(request, "GetCapabilities", ["application/vnd.ogc.wms_xml"], post=True)
        self.operation(request, "GetMap", render.available_formats())
        self.operation(request, "GetFeatureInfo", FEATURE_INFO_FORMATS)
        self.operation(request, "GetLegendGraphic", LEGEND_FORMATS)
        exception = self.el(capability, "Exception")
        self.el(exception, "Format", "application/vnd.ogc.se_xml")
        top = self.el(capability, "Layer")
        self.el(top, "Title", self.meta.title)
        self.el(top, "Abstract", ANY_EPSG_NOTE)
        for code in self.advertised:
            self.el(top, "SRS", code)
        lls = [_geographic_extent(info.resource) for info in layers]
        self.latlon(top, _union(lls))
        for info, ll in zip(layers, lls, strict=True):
            self.layer(top, info, ll)
        return etree.tostring(root, xml_declaration=True, encoding="UTF-8")

    def latlon(self, layer: etree._Element, ll: tuple) -> None:
        self.el(layer, "LatLonBoundingBox", minx=_fmt(ll[0]), miny=_fmt(ll[1]),
                maxx=_fmt(ll[2]), maxy=_fmt(ll[3]))
        for code in self.advertised:  # 1.1.1: x/y order whatever the CRS's axes
            extent = _projected_extent(ll, code)
            if extent is not None:
                self.bbox(layer, code, extent)

    def bbox(self, layer: etree._Element, srs: str, box: tuple) -> None:
        self.el(layer, "BoundingBox", SRS=srs, minx=_fmt(box[0]), miny=_fmt(box[1]),
                maxx=_fmt(box[2]), maxy=_fmt(box[3]))

    def layer(self, parent: etree._Element, info: LayerInfo, ll: tuple) -> None:
        layer = self.el(parent, "Layer", queryable="1", opaque="0")
        self.identity(layer, info)
        native = _native(info, self.advertised)
        if native:
            self.el(layer, "SRS", native[0])
        self.latlon(layer, ll)
        if native:
            self.bbox(layer, native[0], native[1])
        if info.times:
            self.el(layer, "Dimension", name="time", units="ISO8601")
            self.el(layer, "Extent", ",".join(info.times), name="time", default=info.times[-1],
                    nearestValue="0")
        self.styles(layer, info)
