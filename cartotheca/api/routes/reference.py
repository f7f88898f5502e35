"""cartotheca.api.routes.reference: categories, keywords, tkeywords and regions (GET only, public)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, list_context, list_query_params
from cartotheca.api.responses import JSON
from cartotheca.api.schemas.common import envelope
from cartotheca.api.schemas.reference import reference_records
from cartotheca.catalogue import reference
from cartotheca.catalogue.reference import ReferenceCollection

IdPath = Annotated[str, Path(description="integer id")]


def with_resources_params(
    _common: Annotated[None, Depends(list_query_params)],
    with_resources: Annotated[str | None, Query(description="true: only items in use")] = None,
) -> None:
    """Categories and regions also take ``with_resources=true|false``."""


def register(router: APIRouter, collection: ReferenceCollection) -> None:
    name = collection.name
    documented = with_resources_params if collection.with_resources else list_query_params

    @router.get(f"/api/v2/{name}", summary=f"List {name}", tags=[name],
                dependencies=[Depends(documented)])
    def list_items(request: Request, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
        page = reference.list_reference(list_context(request, db, principal), collection)
        items = reference_records(name, page, siteurl.base(settings))
        return JSON(envelope(request, name, items, total=page.total, page=page.page,
                             page_size=page.page_size))

    @router.get(f"/api/v2/{name}/{{item_id}}", summary=f"One of {name}", tags=[name])
    def detail(item_id: IdPath, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
        page = reference.get_reference(db, principal, settings, collection, item_id)
        return JSON({name: reference_records(name, page, siteurl.base(settings))[0]})


router = APIRouter()
for _collection in reference.COLLECTIONS.values():
    register(router, _collection)
