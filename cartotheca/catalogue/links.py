"""cartotheca.catalogue.links: the links of a resource record (metadata, OWS, downloads, tiles).

GeoNode stores these as ``Link`` rows written when a layer is published; here they are derived
from the resource row alone each time a record is serialised, so a page of records costs no
extra statement and the URLs follow the site URL (``cartotheca.siteurl``: SITEURL, or the
request's own base) when it changes. Every URL is one the service answers itself: OWS
requests go to ``{site}ows``, downloads to ``datasets/{alternate}/...``,
tiles to ``tiles/{alternate}/...``, map images to ``maps/{id}/image.{png,jpg,pdf}``, metadata
to the catalogue's CSW record view.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote, urlencode

# Longest side of the map images the image links ask for (GeoNode asks 550 pixels high).
IMAGE_SIZE = 550

# name, extension, WFS outputFormat (GeoNode puts the outputFormat in ``mime``)
WFS_FORMATS = (
    ("Zipped Shapefile", "zip", "SHAPE-ZIP"),
    ("GML 2.0", "gml", "text/xml; subtype=gml/2.1.2"),
    ("GML 3.1.1", "gml", "text/xml; subtype=gml/3.1.1"),
    ("CSV", "csv", "csv"),
    ("Excel", "excel", "excel"),
    ("GeoJSON", "json", "application/json"),
    ("KML", "kml", "application/vnd.google-earth.kml+xml"),
)
WMS_FORMATS = (
    ("JPEG", "jpg", "image/jpeg"),
    ("PDF", "pdf", "application/pdf"),
    ("PNG", "png", "image/png"),
)
# name, CSW outputSchema; "ISO with XSL" is served separately (showmetadata/xsl/{id}).
METADATA_SCHEMAS = (
    ("Atom", "http://www.w3.org/2005/Atom"),
    ("DIF", "http://gcmd.gsfc.nasa.gov/Aboutus/xml/dif/"),
    ("Dublin Core", "http://www.opengis.net/cat/csw/2.0.2"),
    ("ebRIM", "urn:oasis:names:tc:ebxml-regrep:xsd:rim:3.0"),
    ("FGDC", "http://www.opengis.net/cat/csw/csdgm"),
    ("ISO", "http://www.isotc211.org/2005/gmd"),
)
KML_MIME = "application/vnd.google-earth.kml+xml"
VECTOR_TILE_MIME = "application/vnd.mapbox-vector-tile"


@dataclass(frozen=True)
class Link:
    """One entry of a record's ``links`` (GeoNode's Link: extension, link_type, name, mime, url)."""

    extension: str
    link_type: str
    name: str
    mime: str
    url: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def _site(site: str) -> str:
    return site if site.endswith("/") else site + "/"


def is_dataset(resource: Any) -> bool:
    return resource.resource_type == "dataset" and bool(resource.alternate)


def is_vector(resource: Any) -> bool:
    return resource.subtype in ("vector", "vector_time")


def download_url(site: str, resource: Any) -> str | None:
    """The synchronous download in the default format (vector: zipped shapefile; raster: GeoTIFF;
    document: the original file)."""
    if resource.resource_type == "document":
        return f"{_site(site)}documents/{resource.id}/download"
    if not is_dataset(resource):
        return None
    return f"{_site(site)}datasets/{quote(resource.alternate, safe=':')}/dataset_download"


def embed_url(site: str, resource: Any) -> str | None:
    if resource.resource_type == "map":
        return f"{_site(site)}maps/{resource.id}/embed"
    if not is_dataset(resource):
        return None
    return f"{_site(site)}datasets/{quote(resource.alternate, safe=':')}/embed"


def desktop_url(site: str, resource: Any) -> str:
    return f"{_site(site)}datasets/{quote(resource.alternate, safe=':')}/desktop.kml"


def ows_url(site: str) -> str:
    return f"{_site(site)}ows"


def resource_links(site: str, resource: Any) -> list[Link]:
    """Every link of ``resource``: metadata records for all types, and for a dataset its OWS
    endpoints, downloads of spec §8 for its kind, map images, tiles and legend."""
    links = metadata_links(site, resource)
    if is_dataset(resource):
        links += dataset_links(site, resource)
    elif resource.resource_type == "map":
        links += map_links(site, resource)
    links += remote_links(resource)
    thumbnail = thumbnail_url(site, resource)
    if thumbnail:
        links.append(Link("png", "image", "Thumbnail", "image/png", thumbnail))
    return links


def remote_links(resource: Any) -> list[Link]:
    """A harvested resource's links on its remote (its OWS endpoint, downloads), kept by the
    harvester in ``blob["remote"]``; the data is not here, so no local link is made for it."""
    if resource.sourcetype != "REMOTE" or not isinstance(resource.blob, dict):
        return []
    remote = resource.blob.get("remote")
    items = remote.get("links") if isinstance(remote, dict) else None
    fields = ("extension", "link_type", "name", "mime", "url")
    return [Link(*(str(item.get(f) or "") for f in fields)) for item in items or []
            if isinstance(item, dict) and item.get("url")]


def remote_ows_url(resource: Any) -> str | None:
    """The OWS endpoint a harvested dataset is served from (None for every other resource)."""
    if resource.sourcetype != "REMOTE" or not isinstance(resource.blob, dict):
        return None
    remote = resource.blob.get("remote")
    url = remote.get("ows_url") if isinstance(remote, dict) else None
    return url if isinstance(url, str) and url else None


def rebased(site: str, value: Any, stored_base: str) -> Any:
    """``value`` (a string, or lists and dicts of them) with every URL under ``stored_base``
    moved under ``site``. Work done without a request (execution workers) writes URLs under
    SITEURL's value; they are addressed to the site URL of the request reading them."""
    if isinstance(value, str):
        if value.startswith(stored_base) and _site(site) != stored_base:
            return _site(site) + value[len(stored_base):]
        return value
    if isinstance(value, list):
        return [rebased(site, item, stored_base) for item in value]
    if isinstance(value, dict):
        return {key: rebased(site, item, stored_base) for key, item in value.items()}
    return value


def thumbnail_url(site: str, resource: Any) -> str | None:
    """The thumbnail's absolute URL. A thumbnail stored here is addressed under the current
    site URL (the stored URL may predate a change of SITEURL, or have been written without a
    request); relative values are joined to the site URL and external ones are passed
    through, as GeoNode does."""
    value = resource.thumbnail_url
    if not value:
        return None
    own = f"thumbnails/{resource.uuid}.png"
    if value == own or value.endswith("/" + own):
        return _site(site) + own
    if not value.lower().startswith(("http://", "https://")):
        return _site(site) + value.lstrip("/")
    return value


def metadata_links(site: str, resource: Any) -> list[Link]:
    base = f"{_site(site)}catalogue/csw?"
    links = [
        Link("xml", "metadata", name, "text/xml", base + urlencode({
            "request": "GetRecordById", "service": "CSW", "version": "2.0.2", "id": resource.uuid,
            "outputschema": schema, "elementsetname": "full"}))
        for name, schema in METADATA_SCHEMAS
    ]
    links.append(Link("xml", "metadata", "ISO with XSL", "text/xml",
                      f"{_site(site)}showmetadata/xsl/{resource.id}"))
    return links


def dataset_links(site: str, resource: Any) -> list[Link]:
    vector = is_vector(resource)
    alternate = resource.alternate
    path = quote(alternate, safe=":")
    root = _site(site)
    original = ("zip", "application/zip") if vector else ("tif", "image/tiff")
    links = [Link(original[0], "original", "Original Dataset", original[1], download_url(site, resource))]
    if vector:
        links += [Link(ext, "data", name, fmt, wfs_getfeature_url(site, resource, fmt))
                  for name, ext, fmt in WFS_FORMATS]
        links.append(Link("kml", "data", "View in Google Earth", KML_MIME, desktop_url(site, resource)))
    else:
        links.append(Link("tif", "data", "GeoTIFF", "image/tiff", wcs_getcoverage_url(site, resource)))
    links += [Link(ext, "image", name, mime, wms_getmap_url(site, resource, mime))
              for name, ext, mime in WMS_FORMATS]
    links.append(Link("tiles", "image", "Tiles", "image/png", f"{root}tiles/{path}/{{z}}/{{x}}/{{y}}.png"))
    if vector:
        links.append(Link("pbf", "data", "Vector Tiles", VECTOR_TILE_MIME,
                          f"{root}tiles/{path}/{{z}}/{{x}}/{{y}}.pbf"))
    links.append(Link("png", "image", "Legend", "image/png", legend_url(site, resource)))
    workspace = alternate.split(":", 1)[0] if ":" in alternate else ""
    services = ["WMS", "WFS" if vector else "WCS", "WMTS"]
    links += [Link("html", f"OGC:{service}", f"OGC {service}: {workspace} Service", "text/html",
                   ows_url(site)) for service in services]
    return links


def map_image_url(site: str, resource: Any, extension: str) -> str:
    return f"{_site(site)}maps/{resource.id}/image.{extension}"


def map_links(site: str, resource: Any) -> list[Link]:
    """A map's images (one composite render of its layers), served by the maps routes."""
    return [Link(ext, "image", name, mime, map_image_url(site, resource, ext))
            for name, ext, mime in WMS_FORMATS]


def native_view(resource: Any) -> tuple[tuple[float, float, float, float], str]:
    """The box image links ask for: the native box in ``srid``, or the lon/lat box when the
    native one is missing; a box with no width or height is widened so WMS accepts it."""
    if resource.bbox_x0 is not None and resource.srid:
        box = (resource.bbox_x0, resource.bbox_y0, resource.bbox_x1, resource.bbox_y1)
        srs = resource.srid
    elif resource.ll_minx is not None:
        box = (resource.ll_minx, resource.ll_miny, resource.ll_maxx, resource.ll_maxy)
        srs = "EPSG:4326"
    else:
        box, srs = (-180.0, -90.0, 180.0, 90.0), "EPSG:4326"
    minx, miny, maxx, maxy = (float(v) for v in box)
    pad = max(maxx - minx, maxy - miny) * 0.05 or 0.01
    if maxx <= minx:
        minx, maxx = minx - pad, maxx + pad
    if maxy <= miny:
        miny, maxy = miny - pad, maxy + pad
    return (minx, miny, maxx, maxy), srs


def image_size(box: tuple[float, float, float, float]) -> tuple[int, int]:
    """Width and height with the box's aspect, the longer side ``IMAGE_SIZE`` pixels."""
    dx, dy = box[2] - box[0], box[3] - box[1]
    if dx >= dy:
        return IMAGE_SIZE, max(1, round(IMAGE_SIZE * dy / dx))
    return max(1, round(IMAGE_SIZE * dx / dy)), IMAGE_SIZE


def wms_getmap_url(site: str, resource: Any, mime: str) -> str:
    box, srs = native_view(resource)
    width, height = image_size(box)
    return ows_url(site) + "?" + urlencode({
        "service": "WMS", "version": "1.1.1", "request": "GetMap", "layers": resource.alternate,
        "styles": "", "bbox": ",".join(repr(v) for v in box), "srs": srs, "width": width,
        "height": height, "format": mime,
    })


def wfs_getfeature_url(site: str, resource: Any, output_format: str) -> str:
    return ows_url(site) + "?" + urlencode({
        "service": "WFS", "version": "1.0.0", "request": "GetFeature", "typename": resource.alternate,
        "outputFormat": output_format, "srs": resource.srid or "EPSG:4326",
    })


def wcs_getcoverage_url(site: str, resource: Any) -> str:
    # WCS 2.0 coverage ids cannot hold ":", so GeoNode and GeoServer write workspace__name.
    return ows_url(site) + "?" + urlencode({
        "service": "WCS", "version": "2.0.1", "request": "GetCoverage",
        "coverageid": resource.alternate.replace(":", "__", 1), "format": "image/tiff",
    })


def legend_url(site: str, resource: Any) -> str:
    return ows_url(site) + "?" + urlencode({
        "service": "WMS", "version": "1.3.0", "request": "GetLegendGraphic", "format": "image/png",
        "width": 20, "height": 20, "layer": resource.alternate,
    })


def capabilities_url(site: str) -> str:
    return ows_url(site) + "?" + urlencode({"service": "WMS", "version": "1.3.0",
                                            "request": "GetCapabilities"})
