"""cartotheca.api.routes.downloads: a dataset's download_url and its desktop-viewer link.

``/datasets/{alternate}/dataset_download`` streams the default download (vector: zipped
shapefile, raster: GeoTIFF) to holders of the download permission. ``desktop.kml`` is a KML
NetworkLink for Google Earth and other desktop viewers: on each stop of the view it asks for
an overlay, a GroundOverlay of a WMS map of exactly that view.
"""

from __future__ import annotations

import urllib.parse
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from starlette.responses import Response, StreamingResponse

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, get_principal, settings_of
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.datasets import get_dataset
from cartotheca.errors import InvalidInput
from cartotheca.geodata import export
from cartotheca.settings import Settings
from cartotheca.xmlsafe import escape

router = APIRouter(tags=["downloads"])
Db = DbDep
Who = Annotated[Principal, Depends(get_principal)]
Conf = Annotated[Settings, Depends(settings_of)]
KML_TYPE = "application/vnd.google-earth.kml+xml"


def _disposition(filename: str) -> dict[str, str]:
    quoted = urllib.parse.quote(filename)
    ascii_name = filename.encode("ascii", "replace").decode().replace('"', "_")
    return {"Content-Disposition": f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quoted}"}


@router.get("/datasets/{alternate}/dataset_download")
def dataset_download(alternate: str, db: Db, principal: Who, settings: Conf) -> Response:
    _, dataset = get_dataset(db, principal, settings, alternate, codename=perms.DOWNLOAD)
    download = export.dataset_download(db, settings, dataset)
    headers = _disposition(download.filename)
    if download.size is not None:
        headers["Content-Length"] = str(download.size)
    return StreamingResponse(download.chunks, media_type=download.media_type, headers=headers)


def _wms_url(settings: Settings, alternate: str, bbox: tuple[float, ...], width: int, height: int) -> str:
    params = {"service": "WMS", "version": "1.1.1", "request": "GetMap", "layers": alternate,
              "styles": "", "srs": "EPSG:4326", "bbox": ",".join(repr(v) for v in bbox),
              "width": width, "height": height, "format": "image/png", "transparent": "true"}
    return f"{siteurl.base(settings)}/ows?{urllib.parse.urlencode(params)}"


def _bbox(text: str) -> tuple[float, float, float, float]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 4 or values[0] >= values[2] or values[1] >= values[3]:
        raise InvalidInput("BBOX: expected west,south,east,north")
    return values


def _kml(body: str) -> Response:
    return Response('<?xml version="1.0" encoding="UTF-8"?>\n'
                    f'<kml xmlns="http://www.opengis.net/kml/2.2">{body}</kml>', media_type=KML_TYPE)


@router.get("/datasets/{alternate}/desktop.kml")
def desktop_kml(alternate: str, db: Db, principal: Who, settings: Conf,
                bbox: Annotated[str | None, Query(alias="BBOX")] = None,
                width: Annotated[int, Query(alias="WIDTH", ge=1, le=4096)] = 1024,
                height: Annotated[int, Query(alias="HEIGHT", ge=1, le=4096)] = 1024) -> Response:
    resource, dataset = get_dataset(db, principal, settings, alternate)
    name = f"{dataset.workspace}:{dataset.name}"
    title = escape(resource.title or dataset.name)
    if bbox is not None:  # the viewer's refresh: one overlay of the current view
        west, south, east, north = _bbox(bbox)
        href = escape(_wms_url(settings, name, (west, south, east, north), width, height))
        return _kml(f"<GroundOverlay><name>{title}</name><Icon><href>{href}</href></Icon>"
                    f"<LatLonBox><north>{north!r}</north><south>{south!r}</south><east>{east!r}</east>"
                    f"<west>{west!r}</west></LatLonBox></GroundOverlay>")
    link = escape(f"{siteurl.base(settings)}/datasets/{urllib.parse.quote(name)}/desktop.kml")
    view = "BBOX=[bboxWest],[bboxSouth],[bboxEast],[bboxNorth]&WIDTH=[horizPixels]&HEIGHT=[vertPixels]"
    region = ""
    if resource.ll_minx is not None:
        region = (f"<Region><LatLonAltBox><north>{resource.ll_maxy!r}</north><south>{resource.ll_miny!r}"
                  f"</south><east>{resource.ll_maxx!r}</east><west>{resource.ll_minx!r}</west>"
                  "</LatLonAltBox></Region>")
    return _kml(f"<Document><name>{title}</name><NetworkLink><name>{title}</name><open>1</open>"
                f"{region}<Link><href>{link}</href><viewRefreshMode>onStop</viewRefreshMode>"
                f"<viewRefreshTime>1</viewRefreshTime><viewFormat>{escape(view)}</viewFormat></Link>"
                "</NetworkLink></Document>")
