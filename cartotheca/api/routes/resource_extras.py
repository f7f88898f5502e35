"""cartotheca.api.routes.resource_extras: linked resources, extra metadata and ratings of any resource.

Served under ``resources/{id}/`` and under each typed collection (``documents/{id}/``,
``datasets/{id}/`` ...), where the id must be of that type. This router is included before the
collections so these fixed sub-paths win over their ``{id}/{field_name}`` route.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi import Path as PathParam

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, UserDep, read_body
from cartotheca.api.responses import JSON, no_content
from cartotheca.api.schemas.resource_extras import linked_body
from cartotheca.catalogue import extra_metadata, linked_resources, ratings
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.query import check_utf8, query_lists

BodyDep = Annotated[Any, Depends(read_body)]
IdPath = Annotated[str, PathParam(description="integer id of the resource")]
COLLECTIONS: dict[str, Sequence[str] | None] = {
    "resources": None,
    "datasets": ("dataset",),
    "documents": ("document",),
    "maps": ("map",),
    "geoapps": ("geostory", "dashboard"),
    "geostories": ("geostory",),
}
NOT_FILTERS = frozenset({"format", "page", "page_size"})

router = APIRouter()


def _params(request: Request) -> dict[str, list[str]]:
    check_utf8(request.scope.get("query_string", b""))
    return query_lists(request.query_params.multi_items())


def register(collection: str, types: Sequence[str] | None) -> None:
    base = f"/api/v2/{collection}/{{resource_id}}"

    def load(db, principal, settings, resource_id: str):
        return catalogue.get_resource(db, principal, settings, resource_id, resource_type=types).rows[0]

    @router.get(f"{base}/linked_resources", tags=[collection],
                summary="Resources this one links to and that link to it (those the requester may view)")
    def get_linked(request: Request, resource_id: IdPath, db: DbDep, principal: PrincipalDep,
                   settings: SettingsDep) -> JSON:
        resource = load(db, principal, settings, resource_id)
        found = linked_resources.linked(db, principal, settings, resource, _params(request))
        return JSON(linked_body(found, siteurl.base(settings)))

    def change(resource_id, db, principal, settings, body, remove: bool) -> JSON:
        resource = load(db, principal, settings, resource_id)
        outcome = linked_resources.change_links(db, principal, settings, resource, body, remove=remove)
        db.commit()
        failed = bool(outcome.error)
        message = "Some error has occurred during the saving" if failed else "Resources updated successfully"
        return JSON({"success": outcome.success, "error": outcome.error, "message": message},
                    status_code=400 if failed else 200)

    @router.post(f"{base}/linked_resources", tags=[collection], summary="Link to other resources")
    def add_links(resource_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
                  body: BodyDep) -> JSON:
        return change(resource_id, db, principal, settings, body, remove=False)

    @router.delete(f"{base}/linked_resources", tags=[collection], summary="Remove links to other resources")
    def remove_links(resource_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
                     body: BodyDep) -> JSON:
        return change(resource_id, db, principal, settings, body, remove=True)

    @router.get(f"{base}/extra_metadata", tags=[collection],
                summary="Extra metadata items (query parameters filter on their keys)")
    def get_extra(request: Request, resource_id: IdPath, db: DbDep, principal: PrincipalDep,
                  settings: SettingsDep) -> JSON:
        resource = load(db, principal, settings, resource_id)
        filters = [(k, v) for k, v in request.query_params.multi_items() if k not in NOT_FILTERS]
        return JSON(extra_metadata.list_items(db, resource, filters))

    @router.post(f"{base}/extra_metadata", tags=[collection], summary="Add extra metadata items")
    def add_extra(resource_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
                  body: BodyDep) -> JSON:
        resource = load(db, principal, settings, resource_id)
        items = extra_metadata.add_items(db, principal, settings, resource, body)
        db.commit()
        return JSON(items)

    @router.put(f"{base}/extra_metadata", tags=[collection], summary="Update extra metadata items by id")
    def update_extra(resource_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
                     body: BodyDep) -> JSON:
        resource = load(db, principal, settings, resource_id)
        items = extra_metadata.update_items(db, principal, settings, resource, body)
        db.commit()
        return JSON(items)

    @router.delete(f"{base}/extra_metadata", status_code=204, tags=[collection],
                   summary="Delete extra metadata items (body: a list of ids)")
    def delete_extra(resource_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
                     body: BodyDep):
        resource = load(db, principal, settings, resource_id)
        extra_metadata.delete_items(db, principal, resource, body)
        db.commit()
        return no_content()

    @router.get(f"{base}/ratings", tags=[collection],
                summary="The requester's rating and the overall rating")
    def get_ratings(resource_id: IdPath, db: DbDep, principal: PrincipalDep,
                    settings: SettingsDep) -> JSON:
        resource = load(db, principal, settings, resource_id)
        return JSON(ratings.summary(db, principal, resource))

    @router.post(f"{base}/ratings", tags=[collection], summary="Rate the resource from 1 to 5")
    def rate(resource_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
             body: BodyDep) -> JSON:
        resource = load(db, principal, settings, resource_id)
        answer = ratings.rate(db, principal, resource, body)
        db.commit()
        return JSON(answer)


for _collection, _types in COLLECTIONS.items():
    register(_collection, _types)
