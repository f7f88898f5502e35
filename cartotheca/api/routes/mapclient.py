"""cartotheca.api.routes.mapclient: ``/mapclient/rest/resources/`` and ``/mapclient/rest/users/``.

The web map client's REST endpoints (MapStore's adapter in GeoNode): only authenticated users,
each creating, reading, changing and deleting their own data; POST answers 201, DELETE 204.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi import Path as PathParam

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, SettingsDep, UserDep, list_context, read_body
from cartotheca.api.responses import JSON, no_content
from cartotheca.api.schemas.common import envelope
from cartotheca.api.schemas.mapclient import resource_record, user_record
from cartotheca.catalogue import accounts, mapclient, user_listing
from cartotheca.catalogue.query import to_bool

BodyDep = Annotated[Any, Depends(read_body)]
IdPath = Annotated[str, PathParam(description="integer id")]

router = APIRouter(prefix="/mapclient/rest", tags=["mapclient"])


def _full(request: Request) -> bool:
    return to_bool(request.query_params.get("full", "false"))


# -- resources ----------------------------------------------------------------------------------


@router.get("/resources", summary="The requester's client map resources")
def list_resources(request: Request, db: DbDep, principal: UserDep) -> JSON:
    listing = mapclient.list_resources(list_context(request, db, principal))
    items = [resource_record(r, principal.user.username, full=_full(request)) for r in listing.rows]
    return JSON(envelope(request, "resources", items, total=listing.total, page=listing.page,
                         page_size=listing.page_size))


@router.post("/resources", status_code=201, summary="Save a client map resource")
def create_resource(db: DbDep, principal: UserDep, settings: SettingsDep, body: BodyDep) -> JSON:
    row = mapclient.create_resource(db, principal, settings, body)
    db.commit()
    return JSON(resource_record(row, principal.user.username, full=True), status_code=201)


@router.get("/resources/{resource_id}", summary="One of the requester's client map resources")
def get_resource(request: Request, resource_id: IdPath, db: DbDep, principal: UserDep) -> JSON:
    row = mapclient.get_resource(db, principal, resource_id)
    return JSON(resource_record(row, principal.user.username, full=_full(request)))


def _update(resource_id: str, db, principal, settings, body, partial: bool) -> JSON:
    row = mapclient.get_resource(db, principal, resource_id)
    mapclient.update_resource(db, principal, settings, row, body, partial=partial)
    db.commit()
    return JSON(resource_record(row, principal.user.username, full=True))


@router.put("/resources/{resource_id}", summary="Replace a client map resource")
def put_resource(resource_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
                 body: BodyDep) -> JSON:
    return _update(resource_id, db, principal, settings, body, partial=False)


@router.patch("/resources/{resource_id}", summary="Change a client map resource")
def patch_resource(resource_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
                   body: BodyDep) -> JSON:
    return _update(resource_id, db, principal, settings, body, partial=True)


@router.delete("/resources/{resource_id}", status_code=204, summary="Delete a client map resource")
def delete_resource(resource_id: IdPath, db: DbDep, principal: UserDep):
    row = mapclient.get_resource(db, principal, resource_id)
    mapclient.delete_resource(db, principal, row)
    db.commit()
    return no_content()


# -- users --------------------------------------------------------------------------------------


@router.get("/users", summary="Users (administrators see all, others only themselves)")
def list_users(request: Request, db: DbDep, principal: UserDep, settings: SettingsDep) -> JSON:
    listing = user_listing.list_users(list_context(request, db, principal))
    items = [user_record(u, siteurl.base(settings)) for u in listing.rows]
    return JSON(envelope(request, "users", items, total=listing.total, page=listing.page,
                         page_size=listing.page_size))


@router.post("/users", status_code=201, summary="Create a user (staff; anyone while sign-up is open)")
def create_user(db: DbDep, principal: UserDep, settings: SettingsDep, body: BodyDep) -> JSON:
    user = accounts.register_user(db, principal, settings, body)
    db.commit()
    return JSON(user_record(user, siteurl.base(settings)), status_code=201)


@router.get("/users/{user_id}", summary="One user (oneself, or anyone for administrators)")
def get_user(user_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep) -> JSON:
    return JSON(user_record(user_listing.get_user(db, principal, user_id), siteurl.base(settings)))


def _update_user(user_id: str, db, principal, settings, body) -> JSON:
    user = user_listing.get_user(db, principal, user_id)
    accounts.update_user(db, principal, settings, user, body)
    db.commit()
    return JSON(user_record(user, siteurl.base(settings)))


@router.put("/users/{user_id}", summary="Update a user")
def put_user(user_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
             body: BodyDep) -> JSON:
    return _update_user(user_id, db, principal, settings, body)


@router.patch("/users/{user_id}", summary="Partially update a user")
def patch_user(user_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep,
               body: BodyDep) -> JSON:
    return _update_user(user_id, db, principal, settings, body)


@router.delete("/users/{user_id}", status_code=204, summary="Delete a user (the deletion rules apply)")
def delete_user(user_id: IdPath, db: DbDep, principal: UserDep, settings: SettingsDep):
    user = user_listing.get_user(db, principal, user_id)
    accounts.delete_users(db, principal, settings, [user])
    db.commit()
    return no_content()
