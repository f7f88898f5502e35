"""cartotheca.api.routes.upload_limits: ``upload-size-limits`` and ``upload-parallelism-limits``.

Looked up by slug; everyone reads, staff create or change with POST on the collection; PUT,
PATCH and DELETE are not offered (405), as in GeoNode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter, Depends, Request

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, StaffDep, read_body
from cartotheca.api.responses import JSON
from cartotheca.api.schemas.common import envelope
from cartotheca.api.schemas.upload_limits import (
    PARALLELISM_PATH,
    SIZE_PATH,
    parallelism_limit_record,
    size_limit_record,
)
from cartotheca.catalogue import query
from cartotheca.catalogue import upload_limits as limits
from cartotheca.errors import MethodNotAllowed

router = APIRouter(tags=["upload limits"])
NOT_OFFERED = ["PUT", "PATCH", "DELETE"]


def _page(request: Request, key: str, items: Sequence[Any], record: Callable[[Any], dict],
          settings) -> dict[str, Any]:
    """A few rows: paged in memory, in the same envelope as every list."""
    params = query.query_lists(request.query_params.multi_items())
    page = query.parse_page(params, default_size=settings.API_LIMIT_PER_PAGE,
                            search_size=settings.API_LIMIT_PER_PAGE, max_size=settings.API_MAX_PAGE_SIZE)
    chunk, number = query.page_items(items, page)
    return envelope(request, key, [record(item) for item in chunk], total=len(items), page=number,
                    page_size=page.size)


def _not_allowed(request: Request) -> None:
    raise MethodNotAllowed(f'Method "{request.method}" not allowed.')


# -- size limits -----------------------------------------------------------------------------


@router.get(f"/api/v2/{SIZE_PATH}", summary="Upload size limits")
def list_size_limits(request: Request, db: DbDep, _: PrincipalDep, settings: SettingsDep) -> JSON:
    items = limits.size_limits(db, settings)
    return JSON(_page(request, SIZE_PATH, items, lambda x: size_limit_record(x, siteurl.base(settings)),
                      settings))


@router.post(f"/api/v2/{SIZE_PATH}", summary="Create or change a size limit (staff)")
def save_size_limit(db: DbDep, _: StaffDep, settings: SettingsDep, body=Depends(read_body)) -> JSON:
    limit, created = limits.save_size_limit(db, settings, body)
    db.commit()
    return JSON({"upload-size-limit": size_limit_record(limit, siteurl.base(settings))},
                status_code=201 if created else 200)


@router.get(f"/api/v2/{SIZE_PATH}/{{slug}}", summary="One upload size limit")
def get_size_limit(slug: str, db: DbDep, _: PrincipalDep, settings: SettingsDep) -> JSON:
    limit = limits.get_size_limit(db, settings, slug)
    return JSON({"upload-size-limit": size_limit_record(limit, siteurl.base(settings))})


router.add_api_route(f"/api/v2/{SIZE_PATH}", _not_allowed, methods=NOT_OFFERED, include_in_schema=False)
router.add_api_route(f"/api/v2/{SIZE_PATH}/{{slug}}", _not_allowed, methods=["POST", *NOT_OFFERED],
                     include_in_schema=False)


# -- parallelism limits ----------------------------------------------------------------------


@router.get(f"/api/v2/{PARALLELISM_PATH}", summary="Upload parallelism limits")
def list_parallelism_limits(request: Request, db: DbDep, _: PrincipalDep, settings: SettingsDep) -> JSON:
    items = limits.parallelism_limits(db)
    return JSON(_page(request, PARALLELISM_PATH, items,
                      lambda x: parallelism_limit_record(x, siteurl.base(settings)), settings))


@router.post(f"/api/v2/{PARALLELISM_PATH}", summary="Create or change a parallelism limit (staff)")
def save_parallelism_limit(db: DbDep, _: StaffDep, settings: SettingsDep, body=Depends(read_body)) -> JSON:
    limit, created = limits.save_parallelism_limit(db, body)
    db.commit()
    return JSON({"upload-parallelism-limit": parallelism_limit_record(limit, siteurl.base(settings))},
                status_code=201 if created else 200)


@router.get(f"/api/v2/{PARALLELISM_PATH}/{{slug}}", summary="One upload parallelism limit")
def get_parallelism_limit(slug: str, db: DbDep, _: PrincipalDep, settings: SettingsDep) -> JSON:
    limit = limits.get_parallelism_limit(db, slug)
    return JSON({"upload-parallelism-limit": parallelism_limit_record(limit, siteurl.base(settings))})


router.add_api_route(f"/api/v2/{PARALLELISM_PATH}", _not_allowed, methods=NOT_OFFERED,
                     include_in_schema=False)
router.add_api_route(f"/api/v2/{PARALLELISM_PATH}/{{slug}}", _not_allowed, methods=["POST", *NOT_OFFERED],
                     include_in_schema=False)
