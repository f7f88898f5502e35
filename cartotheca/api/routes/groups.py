"""cartotheca.api.routes.groups: group profiles, their members, managers and resources."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, StaffDep, list_context, read_body
from cartotheca.api.responses import JSON, no_content
from cartotheca.api.routes.resources import resource_list_response
from cartotheca.api.schemas.common import envelope
from cartotheca.api.schemas.groups import group_record
from cartotheca.api.schemas.users import user_record
from cartotheca.catalogue import groups as catalogue
from cartotheca.catalogue import resources
from cartotheca.catalogue.groups import GroupFields
from cartotheca.db.models import Resource

BodyDep = Annotated[Any, Depends(read_body)]
GroupId = Annotated[str, Path(description="integer id of the group profile")]

router = APIRouter(prefix="/api/v2/groups", tags=["groups"])


def _unwrapped(body: Any) -> Any:
    """GeoNode clients may wrap the fields as ``{"group_profile": {...}}``."""
    if isinstance(body, dict) and set(body) == {"group_profile"} and isinstance(body["group_profile"], dict):
        return body["group_profile"]
    return body


def _one(profile, settings, status: int = 200) -> JSON:
    return JSON({"group_profile": group_record(profile, siteurl.base(settings))}, status_code=status)


@router.get("", summary="Group profiles visible to the requester")
def list_groups(request: Request, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    listing = catalogue.list_groups(list_context(request, db, principal))
    items = [group_record(p, siteurl.base(settings)) for p in listing.rows]
    return JSON(envelope(request, "group_profiles", items, total=listing.total,
                         page=listing.page, page_size=listing.page_size))


@router.post("", status_code=201, summary="Create a group (staff)")
def create(db: DbDep, principal: PrincipalDep, settings: SettingsDep, body: BodyDep) -> JSON:
    catalogue.may_create(principal)  # refused before the body is judged
    fields = GroupFields.model_validate(_unwrapped(body), context={"new": True})
    profile = catalogue.create_group(db, principal, fields)
    db.commit()
    return _one(profile, settings, 201)


@router.delete("", status_code=204, summary="Delete many groups (staff)")
def delete_many(db: DbDep, principal: StaffDep, body: BodyDep):
    profiles = catalogue.profiles_by_ids(db, resources.bulk_ids(body, "group_profiles"))
    catalogue.delete_groups(db, principal, profiles)
    db.commit()
    return no_content()


@router.get("/{group_id}", summary="One group profile")
def detail(group_id: GroupId, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    return _one(catalogue.get_group(db, principal, group_id), settings)


@router.put("/{group_id}", summary="Update a group (staff)")
def put(group_id: GroupId, db: DbDep, principal: PrincipalDep, settings: SettingsDep,
        body: BodyDep) -> JSON:
    profile = catalogue.get_group(db, principal, group_id)
    catalogue.may_update(principal, profile, managers_may=False)
    fields = GroupFields.model_validate(_unwrapped(body))
    catalogue.update_group(db, principal, profile, fields, managers_may=False)
    db.commit()
    return _one(profile, settings)


@router.patch("/{group_id}", summary="Partially update a group (staff or its managers)")
def patch(group_id: GroupId, db: DbDep, principal: PrincipalDep, settings: SettingsDep,
          body: BodyDep) -> JSON:
    profile = catalogue.get_group(db, principal, group_id)
    catalogue.may_update(principal, profile, managers_may=True)
    fields = GroupFields.model_validate(_unwrapped(body))
    catalogue.update_group(db, principal, profile, fields, managers_may=True)
    db.commit()
    return _one(profile, settings)


@router.delete("/{group_id}", status_code=204, summary="Delete a group (staff)")
def delete(group_id: GroupId, db: DbDep, principal: PrincipalDep):
    profile = catalogue.get_group(db, principal, group_id)
    catalogue.delete_groups(db, principal, [profile])
    db.commit()
    return no_content()


def _users(group_id: str, db, principal, settings, *, managers_only: bool) -> JSON:
    profile = catalogue.get_group(db, principal, group_id)
    users = catalogue.group_users(db, principal, profile, managers_only=managers_only)
    return JSON([user_record(u, principal, siteurl.base(settings)) for u in users])


@router.get("/{group_id}/members", summary="Members and managers (bare array)")
def members(group_id: GroupId, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    return _users(group_id, db, principal, settings, managers_only=False)


@router.get("/{group_id}/managers", summary="Managers (bare array)")
def managers(group_id: GroupId, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    return _users(group_id, db, principal, settings, managers_only=True)


@router.get("/{group_id}/resources", summary="Resources of the group")
def group_resources(group_id: GroupId, request: Request, db: DbDep, principal: PrincipalDep,
                    settings: SettingsDep) -> JSON:
    profile = catalogue.get_group(db, principal, group_id)
    return resource_list_response(request, db, principal, settings,
                                  [Resource.group_id == profile.group_id])
