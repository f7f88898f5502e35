"""cartotheca.api.routes.users: users, their groups and resources, ownership transfer, owners."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request

from cartotheca import siteurl
from cartotheca.api.deps import (
    DbDep,
    PrincipalDep,
    SettingsDep,
    StaffDep,
    UserDep,
    list_context,
    read_body,
)
from cartotheca.api.responses import JSON, no_content
from cartotheca.api.routes.resources import resource_list_response
from cartotheca.api.schemas.common import envelope
from cartotheca.api.schemas.groups import group_record, owner_record
from cartotheca.api.schemas.users import user_record
from cartotheca.catalogue import accounts, user_listing
from cartotheca.catalogue import resources as catalogue
from cartotheca.db.models import Resource

BodyDep = Annotated[Any, Depends(read_body)]
UserId = Annotated[str, Path(description="integer id of the user")]

router = APIRouter(prefix="/api/v2", tags=["users"])


def _one(user, principal, settings) -> JSON:
    return JSON({"user": user_record(user, principal, siteurl.base(settings))})


@router.get("/users", summary="Users (administrators see all, others only themselves)")
def list_users(request: Request, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    listing = user_listing.list_users(list_context(request, db, principal))
    items = [user_record(u, principal, siteurl.base(settings)) for u in listing.rows]
    return JSON(envelope(request, "users", items, total=listing.total, page=listing.page,
                         page_size=listing.page_size))


@router.post("/users", summary="Create a user (staff; anyone while sign-up is open)")
def create_user(db: DbDep, principal: PrincipalDep, settings: SettingsDep, body: BodyDep) -> JSON:
    if isinstance(body, dict) and set(body) == {"user"} and isinstance(body["user"], dict):
        body = body["user"]
    user = accounts.register_user(db, principal, settings, body)
    db.commit()
    return _one(user, principal, settings)


@router.delete("/users", status_code=204, summary="Delete many users (staff)")
def delete_users(db: DbDep, principal: StaffDep, settings: SettingsDep, body: BodyDep):
    users = accounts.users_by_ids(db, catalogue.bulk_ids(body, "users"))
    accounts.delete_users(db, principal, settings, users)
    db.commit()
    return no_content()


@router.get("/users/{user_id}", summary="One user")
def detail(user_id: UserId, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    return _one(user_listing.get_user(db, principal, user_id), principal, settings)


def _write(user_id: str, db, principal, settings, body) -> JSON:
    if isinstance(body, dict) and set(body) == {"user"} and isinstance(body["user"], dict):
        body = body["user"]
    user = accounts.update_user(db, principal, settings, user_listing.get_user(db, principal, user_id), body)
    db.commit()
    return _one(user, principal, settings)


@router.patch("/users/{user_id}", summary="Partially update a user")
def patch(user_id: UserId, db: DbDep, principal: PrincipalDep, settings: SettingsDep,
          body: BodyDep) -> JSON:
    return _write(user_id, db, principal, settings, body)


@router.put("/users/{user_id}", summary="Update a user (same as PATCH)")
def put(user_id: UserId, db: DbDep, principal: PrincipalDep, settings: SettingsDep,
        body: BodyDep) -> JSON:
    return _write(user_id, db, principal, settings, body)


@router.delete("/users/{user_id}", summary="Delete a user (USER_DELETION_RULES first)")
def delete(user_id: UserId, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    user = user_listing.get_user(db, principal, user_id)
    accounts.delete_users(db, principal, settings, [user])
    db.commit()
    return JSON("User deleted sucessfully")  # sic: GeoNode's exact body


@router.get("/users/{user_id}/groups", summary="Group profiles of a user (bare array)")
def groups(user_id: UserId, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    user = user_listing.get_user(db, principal, user_id)
    return JSON([group_record(g, siteurl.base(settings)) for g in user_listing.user_groups(db, user)])


@router.get("/users/{user_id}/resources", summary="Resources owned by a user")
def resources(user_id: UserId, request: Request, db: DbDep, principal: PrincipalDep,
              settings: SettingsDep) -> JSON:
    user = user_listing.get_user(db, principal, user_id)
    return resource_list_response(request, db, principal, settings,
                                  [Resource.owner_id == user.id])


@router.post("/users/{user_id}/transfer_resources", summary="Give a user's resources to another")
def transfer_resources(user_id: UserId, db: DbDep, principal: UserDep, body: BodyDep) -> JSON:
    user = user_listing.get_user(db, principal, user_id)
    accounts.transfer_resources(db, principal, user, body)
    db.commit()
    return JSON("Resources transfered successfully")  # sic: GeoNode's exact body


@router.post("/users/{user_id}/remove_from_group_manager", summary="Stop managing groups")
def remove_from_group_manager(user_id: UserId, db: DbDep, principal: UserDep,
                              body: BodyDep) -> JSON:
    user = user_listing.get_user(db, principal, user_id)
    titles = accounts.remove_from_group_manager(db, principal, user, body)
    db.commit()
    return JSON({"success": f"User removed as a group manager from : {', '.join(titles)}"})


@router.get("/owners", summary="Users owning at least one resource the requester can see",
            tags=["owners"])
def owners(request: Request, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    listing, counts = user_listing.list_owners(list_context(request, db, principal))
    items = [owner_record(u, counts.get(u.id, 0), siteurl.base(settings)) for u in listing.rows]
    return JSON(envelope(request, "owners", items, total=listing.total, page=listing.page,
                         page_size=listing.page_size))


@router.get("/owners/{user_id}", summary="One owner", tags=["owners"])
def owner(user_id: UserId, request: Request, db: DbDep, principal: PrincipalDep,
          settings: SettingsDep) -> JSON:
    user, count = user_listing.get_owner(list_context(request, db, principal), user_id)
    # Meta.name is already plural in GeoNode, so the detail key is "owners" too.
    return JSON({"owners": owner_record(user, count, siteurl.base(settings))})
