"""cartotheca.api.routes.tiles: XYZ tiles of datasets (PNG for all, Mapbox vector tiles for vector data).

``/tiles/{alternate}/{z}/{x}/{y}.png|.pbf|.mvt`` is WebMercatorQuad; WMTS clients following the
advertised ResourceURL use ``/tiles/{alternate}/{TileMatrixSet}/{z}/{x}/{y}.png``. The lookup,
the permission check and the drawing run in one trip to the thread pool, with the database
session released before the tile is drawn.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from cartotheca.api.bulkhead import Overloaded
from cartotheca.api.deps import app_state, get_settings, heavy_work, principal_of
from cartotheca.catalogue.datasets import get_dataset_to_draw
from cartotheca.ows import tiles

router = APIRouter(tags=["tiles"], include_in_schema=False)  # map-server paths, not API v2


@router.get("/tiles/{alternate}/{z:int}/{x:int}/{y:int}.{ext}")
async def xyz_tile(alternate: str, z: int, x: int, y: int, ext: str, request: Request,
                   style: str | None = None) -> Response:
    return await _drawn(request, alternate, tiles.DEFAULT_TMS, z, x, y, ext, style)


@router.get("/tiles/{alternate}/{tms}/{z:int}/{x:int}/{y:int}.{ext}")
async def tms_tile(alternate: str, tms: str, z: int, x: int, y: int, ext: str, request: Request,
                   style: str | None = None) -> Response:
    return await _drawn(request, alternate, tms, z, x, y, ext, style)


async def _drawn(request: Request, *args) -> Response:
    try:
        async with heavy_work(request):
            return await run_in_threadpool(_tile, request, *args)
    except Overloaded:
        retry_after = str(get_settings(request).OVERLOAD_RETRY_AFTER)
        return Response("The map server is busy; try again shortly.\n", status_code=503,
                        media_type="text/plain", headers={"Retry-After": retry_after})


def _tile(request: Request, alternate: str, tms: str, z: int, x: int, y: int, ext: str,
          style: str | None) -> Response:
    # A tile costs a few milliseconds, so the thread hops of separate sync dependencies would show.
    media_type = tiles.parse_extension(ext)
    tiles.check_tile(tiles.tile_matrix_set(tms), z, x, y)
    settings = get_settings(request)
    with app_state(request).sessions() as db:
        principal = principal_of(request, db)
        resource, dataset, default_sld = get_dataset_to_draw(db, principal, settings, alternate)
        job = tiles.plan_tile(settings, resource, dataset, tms, z, x, y, media_type, style,
                              default_sld=default_sld)
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
