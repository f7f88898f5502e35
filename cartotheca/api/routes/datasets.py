"""cartotheca.api.routes.datasets: the dataset collection and what hangs off one dataset.

``/api/v2/datasets`` is the resource collection restricted to datasets, with GeoNode's dataset
extras in each record (``DatasetRoutes``). The fixed sub-paths (maplayers, maps, metadata) are
registered before the generic ``{id}/{field_name}`` route so they win; this router is included
before the resources router for the same reason.
"""

from __future__ import annotations

import html
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Annotated, Any, ClassVar

from fastapi import APIRouter, Request
from fastapi import Path as PathParam
from starlette.responses import HTMLResponse

from cartotheca import siteurl, xmlsafe
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, UserDep
from cartotheca.api.multipart import TooLarge, stage_multipart
from cartotheca.api.responses import JSON
from cartotheca.api.routes.resources import RELATED_FIELDS, ResourceRoutes
from cartotheca.api.schemas.datasets import dataset_extras
from cartotheca.api.schemas.resources import RecordContext, records
from cartotheca.catalogue import datasets as catalogue_datasets
from cartotheca.catalogue import iso_metadata, links
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.datasets import DATASET_FIELDS
from cartotheca.catalogue.query import Listing, check_utf8, page_items, parse_page, query_lists
from cartotheca.errors import InvalidInput

IdPath = Annotated[str, PathParam(description="integer id of the dataset")]
METADATA_FIELD = "metadata_file"


class DatasetRoutes(ResourceRoutes):
    """The resource routes over datasets, each record completed with its dataset row."""

    related_fields: ClassVar[tuple[str, ...]] = RELATED_FIELDS + (
        "attribute_set", "styles", "default_style")

    def records(self, db, listing: Listing, ctx: RecordContext, *,
                detail: bool = False) -> list[dict[str, Any]]:
        rows = catalogue_datasets.load_datasets(db, [r.id for r in listing.rows], attributes=detail)
        out = []
        for resource, record in zip(listing.rows, records(listing, ctx), strict=True):
            record.update(dataset_extras(resource, rows.get(resource.id), ctx.site, detail=detail))
            out.append(record)
        return out

    def apply_patch(self, db, principal, settings, row, body, current=None) -> None:
        dataset = catalogue_datasets.load_datasets(db, [row.id], attributes=True).get(row.id)
        catalogue_datasets.patch_dataset(db, principal, settings, row, dataset, body, current)

    def related_key(self, field_name: str) -> str:
        # dynamic-rest answers a relation under its serializer's plural name (geonodectl reads it)
        return {"attribute_set": "attributes"}.get(field_name, field_name)


router = APIRouter()


def _dataset(db, principal, settings, dataset_id: str):
    listing = catalogue.get_resource(db, principal, settings, dataset_id, resource_type=("dataset",))
    return listing.rows[0]


def _array_page(request: Request, items: list[dict[str, Any]], search_keys: tuple[str, ...],
                settings) -> list[dict[str, Any]]:
    """``page``, ``page_size`` and ``search`` over a related list; GeoNode answers these with a
    bare array, so the array is cut and filtered, not wrapped in an envelope."""
    check_utf8(request.scope.get("query_string", b""))
    params = query_lists(request.query_params.multi_items())
    search = (params.get("search") or [""])[0].strip().lower()
    if search:
        items = [i for i in items if any(search in str(i.get(k) or "").lower() for k in search_keys)]
    page = parse_page(params, default_size=settings.API_LIMIT_PER_PAGE,
                      search_size=settings.DEFAULT_SEARCH_SIZE, max_size=settings.API_MAX_PAGE_SIZE)
    if page.size is None or ("page" not in params and "page_size" not in params):
        return items
    return list(page_items(items, page)[0])


@router.get("/api/v2/datasets/{dataset_id}/maplayers", tags=["datasets"],
            summary="Map layers that show the dataset")
def dataset_maplayers(request: Request, dataset_id: IdPath, db: DbDep, principal: PrincipalDep,
                      settings: SettingsDep) -> JSON:
    resource = _dataset(db, principal, settings, dataset_id)
    items = catalogue_datasets.map_layers_of(db, principal, settings, resource)
    return JSON(_array_page(request, items, ("name",), settings))


@router.get("/api/v2/datasets/{dataset_id}/maps", tags=["datasets"], summary="Maps that use the dataset")
def dataset_maps(request: Request, dataset_id: IdPath, db: DbDep, principal: PrincipalDep,
                 settings: SettingsDep) -> JSON:
    resource = _dataset(db, principal, settings, dataset_id)
    items = catalogue_datasets.maps_of(db, principal, settings, resource)
    return JSON(_array_page(request, items, ("title",), settings))


@router.put("/api/v2/datasets/{dataset_id}/metadata", tags=["datasets"],
            summary="Replace the dataset's metadata from an ISO 19115 XML file")
async def dataset_metadata(request: Request, dataset_id: IdPath, db: DbDep, principal: UserDep,
                           settings: SettingsDep) -> JSON:
    resource = _dataset(db, principal, settings, dataset_id)
    catalogue.require(db, principal, resource, perms.CHANGE_METADATA)
    data = await _read_file(request, settings, METADATA_FIELD, xmlsafe.MAX_XML_BYTES)
    try:
        root = xmlsafe.parse(data, METADATA_FIELD)
        iso_metadata.check_identifier(root, resource.uuid)
        iso_metadata.apply_iso_metadata(db, resource, root)
    except InvalidInput as exc:
        db.rollback()
        raise InvalidInput(exc.message, code="invalid_metadata_exception") from None
    db.commit()
    return JSON({"success": True, "message": ["Metadata successfully updated"]})


async def _read_file(request: Request, settings, name: str, limit: int) -> bytes:
    """The bytes of the multipart file field ``name``, refused beyond ``limit`` while reading."""
    folder = Path(tempfile.gettempdir()) / f"cartotheca-form-{uuid.uuid4().hex}"
    try:
        try:
            form = await stage_multipart(request, folder, limit)
        except TooLarge:
            raise InvalidInput(f"{name} must not exceed {limit // (1024 * 1024)} MB") from None
        if name not in form.files:
            raise InvalidInput(f"Field {name} is required", code="missing_metadata_exception")
        return form.path(name).read_bytes()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@router.get("/datasets/{alternate}/embed", include_in_schema=False)
def dataset_embed(alternate: str, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> HTMLResponse:
    """GeoNode's ``embed_url``: a page showing the dataset's map (a WMS image over its extent)."""
    resource, _dataset_row = catalogue_datasets.get_dataset(db, principal, settings, alternate)
    image = links.wms_getmap_url(siteurl.url(settings), resource, "image/png")
    title = _escape(resource.title)
    page = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title>"
            "<style>body{margin:0}img{max-width:100%;height:auto;display:block}</style></head>"
            f"<body><img src=\"{_escape(image)}\" alt=\"{title}\"></body></html>")
    return HTMLResponse(page)


def _escape(text: str) -> str:
    return html.escape(text or "", quote=True)


router.include_router(DatasetRoutes("datasets", "datasets", "dataset", types=("dataset",),
                                    can_create=False, can_delete=False,
                                    fields=DATASET_FIELDS).router())
