"""cartotheca.api.routes.tiles: XYZ tiles of datasets (PNG for all, Mapbox vector tiles for vector data).

``/tiles/{alternate}/{z}/{x}/{y}.png|.pbf|.mvt`` is WebMercatorQuad; WMTS clients following the
advertised ResourceURL use ``/tiles/{alternate}/{TileMatrixSet}/{z}/{x}/{y}.png``. The routes are
synchronous, so FastAPI runs them (reading and encoding) in its thread pool.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from sqlalchemy.orm import Session
from starlette.responses import Response

from cartotheca.api.deps import get_db, get_principal, get_settings
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.datasets import get_dataset
from cartotheca.ows import tiles
from cartotheca.settings import Settings

router = APIRouter(tags=["tiles"])

Db = Annotated[Session, Depends(get_db)]
Who = Annotated[Principal, Depends(get_principal)]
Conf = Annotated[Settings, Depends(get_settings)]


@router.get("/tiles/{alternate}/{z:int}/{x:int}/{y:int}.{ext}")
def xyz_tile(alternate: str, z: int, x: int, y: int, ext: str, request: Request, db: Db,
             principal: Who, settings: Conf, style: str | None = None) -> Response:
    return _tile(request, db, principal, settings, alternate, tiles.DEFAULT_TMS, z, x, y, ext, style)


@router.get("/tiles/{alternate}/{tms}/{z:int}/{x:int}/{y:int}.{ext}")
def tms_tile(alternate: str, tms: str, z: int, x: int, y: int, ext: str, request: Request, db: Db,
             principal: Who, settings: Conf, style: str | None = None) -> Response:
    return _tile(request, db, principal, settings, alternate, tms, z, x, y, ext, style)


def _tile(request: Request, db: Session, principal: Principal, settings: Settings, alternate: str,
          tms: str, z: int, x: int, y: int, ext: str, style: str | None) -> Response:
    media_type = tiles.parse_extension(ext)
    tiles.check_tile(tiles.tile_matrix_set(tms), z, x, y)
    resource, dataset = get_dataset(db, principal, settings, alternate)
    job = tiles.plan_tile(settings, resource, dataset, tms, z, x, y, media_type, style)
    headers = {
        "ETag": job.etag,
        # Tiles of non-public data must not land in shared caches.
        "Cache-Control": f"{'private' if principal.user is not None else 'public'}, "
                         f"max-age={settings.TILE_MAX_AGE}",
    }
    if _matches(request.headers.get("if-none-match"), job.etag):
        return Response(status_code=304, headers=headers)
    body = tiles.draw_tile(settings, job)
    if not body:
        return Response(status_code=204, headers=headers, media_type=media_type)
    return Response(body, media_type=media_type, headers=headers)


def _matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    tags = {tag.strip().removeprefix("W/") for tag in header.split(",")}
    return "*" in tags or etag in tags
