"""cartotheca.api.routes.resource_operations: permissions and the asynchronous resource operations.

Each operation is validated completely here (a 400 or 403 before anything starts), then
submitted to the execution engine, which answers with the start object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Path, Request

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, UserDep, app_state, read_body
from cartotheca.api.responses import JSON
from cartotheca.api.schemas.executions import start_object
from cartotheca.api.schemas.permission_specs import compact_body
from cartotheca.catalogue import events, permission_specs, resource_lifecycle
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.permission_specs import CompactSpec, NamedSpec
from cartotheca.catalogue.resource_writer import resolve_regions
from cartotheca.catalogue.resources import RESOURCE_TYPES
from cartotheca.db.models import Resource
from cartotheca.errors import InvalidInput, NotAuthenticated, NotFound

router = APIRouter(prefix="/api/v2/resources", tags=["resources"])
BodyDep = Annotated[Any, Depends(read_body)]
IdPath = Annotated[str, Path(description="integer id of the resource")]


def _load(db, principal, settings, resource_id: str, codename: str) -> Resource:
    """The resource, if the requester may see it and holds ``codename`` on it."""
    if principal.id is None:
        # Anonymous callers are never allowed these operations; answer before revealing anything.
        catalogue.parse_id(resource_id)
        raise NotAuthenticated()
    resource = catalogue.load_for_write(db, principal, settings, resource_id)
    catalogue.require(db, principal, resource, codename)
    return resource


def _start(request: Request, db, principal, *, func_name: str, action: str,
           params: dict[str, Any], resource: Resource | None = None, name: str | None = None) -> JSON:
    state = app_state(request)
    execution = state.tasks.submit(
        db, user_id=principal.id, func_name=func_name, action=action, input_params=params,
        resource_id=resource.id if resource else None, source="resource_service",
        name=name or (resource.title if resource else None),
    )
    db.commit()
    state.tasks.dispatch(execution.exec_id)
    return JSON(start_object(siteurl.base(state.settings), execution))


def _json_value(body: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """Form-encoded bodies carry JSON values as strings (``vals={"title": "x"}``)."""
    value = body.get(key, default)
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            raise InvalidInput(f"{key}: not valid JSON") from None
    return value


# -- permissions --------------------------------------------------------------------------


@router.get("/{resource_id}/permissions", summary="Users and groups with permissions")
def get_permissions(resource_id: IdPath, db: DbDep, principal: PrincipalDep,
                    settings: SettingsDep) -> JSON:
    resource = _load(db, principal, settings, resource_id, perms.CHANGE_PERMISSIONS)
    users, groups = permission_specs.describe(db, settings, resource)
    return JSON(compact_body(users, groups, siteurl.base(settings),
                             settings.REGISTERED_MEMBERS_GROUP_NAME))


def _permissions_change(request, resource_id, db, principal, settings, body, mode: str) -> JSON:
    resource = _load(db, principal, settings, resource_id, perms.CHANGE_PERMISSIONS)
    if mode == "remove":
        spec, created = permission_specs.Spec(), False
    else:
        compact = CompactSpec.model_validate(body)
        spec = permission_specs.compact_spec(db, settings, resource, compact)
        created = bool(compact.created)
    params = {"uuid": resource.uuid, "resource_id": resource.id, "mode": mode,
              "spec": spec.as_input(), "owner": resource.owner.username, "created": created}
    func_name = "remove_permissions" if mode == "remove" else "set_permissions"
    return _start(request, db, principal, func_name=func_name, action="permissions",
                  params=params, resource=resource)


@router.put("/{resource_id}/permissions", summary="Replace the permissions (asynchronous)")
def put_permissions(request: Request, resource_id: IdPath, db: DbDep, principal: PrincipalDep,
                    settings: SettingsDep, body: BodyDep) -> JSON:
    return _permissions_change(request, resource_id, db, principal, settings, body, "replace")


@router.patch("/{resource_id}/permissions", summary="Merge into the permissions (asynchronous)")
def patch_permissions(request: Request, resource_id: IdPath, db: DbDep, principal: PrincipalDep,
                      settings: SettingsDep, body: BodyDep) -> JSON:
    return _permissions_change(request, resource_id, db, principal, settings, body, "merge")


@router.delete("/{resource_id}/permissions", summary="Remove the permissions (asynchronous)")
def delete_permissions(request: Request, resource_id: IdPath, db: DbDep, principal: PrincipalDep,
                       settings: SettingsDep) -> JSON:
    return _permissions_change(request, resource_id, db, principal, settings, {}, "remove")


@router.get("/{resource_id}/get_perms", summary="Permission names per user and group")
def get_perms(resource_id: IdPath, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    resource = _load(db, principal, settings, resource_id, perms.CHANGE_PERMISSIONS)
    return JSON(permission_specs.mapping(db, settings, resource))


@router.put("/{resource_id}/set_perms", summary="Set permission names per user and group")
def set_perms(resource_id: IdPath, db: DbDep, principal: PrincipalDep, settings: SettingsDep,
              body: BodyDep) -> JSON:
    resource = _load(db, principal, settings, resource_id, perms.CHANGE_PERMISSIONS)
    spec = permission_specs.named_spec(db, settings, resource, NamedSpec.model_validate(body))
    permission_specs.apply(db, resource, spec, "replace")
    events.record(db, events.PERMISSIONS_CHANGED, resource=resource, actor=principal)
    db.commit()
    return JSON(body)


# -- asynchronous operations --------------------------------------------------------------


@router.delete("/{resource_id}/delete", summary="Delete a resource (asynchronous)")
def delete_resource(request: Request, resource_id: IdPath, db: DbDep, principal: PrincipalDep,
                    settings: SettingsDep) -> JSON:
    resource = _load(db, principal, settings, resource_id, perms.DELETE)
    return _start(request, db, principal, func_name="delete", action="delete",
                  params={"uuid": resource.uuid, "resource_id": resource.id}, resource=resource)


@router.put("/{resource_id}/copy", summary="Copy a resource (asynchronous)")
def copy_resource(request: Request, resource_id: IdPath, db: DbDep, principal: PrincipalDep,
                  settings: SettingsDep, body: BodyDep) -> JSON:
    resource = _load(db, principal, settings, resource_id, perms.VIEW)
    if resource.resource_type in perms.DOWNLOADABLE_TYPES:
        catalogue.require(db, principal, resource, perms.DOWNLOAD)
    if not resource.is_copyable:
        raise InvalidInput("Resource can not be cloned.")
    defaults = _json_value(body, "defaults", {}) if isinstance(body, Mapping) else {}
    if not isinstance(defaults, Mapping):
        raise InvalidInput("defaults: expected a JSON object")
    # The trial run checks the input; the data is copied by the execution only.
    kinds = app_state(request).kinds
    _validate(db, lambda: resource_lifecycle.copy_resource(db, principal, settings, resource, defaults,
                                                           kinds=kinds, copy_data=False))
    return _start(request, db, principal, func_name="copy", action="copy",
                  params={"uuid": resource.uuid, "resource_id": resource.id,
                          "defaults": dict(defaults)}, resource=resource)


@router.put("/{resource_id}/update", summary="Update a resource's metadata (asynchronous)")
def update_resource(request: Request, resource_id: IdPath, db: DbDep, principal: PrincipalDep,
                    settings: SettingsDep, body: BodyDep) -> JSON:
    resource = _load(db, principal, settings, resource_id, perms.CHANGE)
    if not isinstance(body, Mapping):
        raise InvalidInput("Expected an object with vals, keywords, regions ...")
    vals = _json_value(body, "vals", {}) or {}
    keywords = _json_value(body, "keywords")
    if not isinstance(vals, Mapping):
        raise InvalidInput("vals: expected a JSON object of fields")
    regions, keywords = _update_regions(db, _json_value(body, "regions"), keywords)
    values = dict(vals)
    if keywords is not None:
        values["keywords"] = keywords
    if regions is not None:
        values["regions"] = regions
    _validate(db, lambda: resource_lifecycle.patch_resource(db, principal, settings, resource, values))
    return _start(request, db, principal, func_name="update", action="update",
                  params={"uuid": resource.uuid, "resource_id": resource.id, "vals": dict(vals),
                          "keywords": keywords, "regions": regions,
                          "notify": bool(body.get("notify", False))},
                  resource=resource)


def _update_regions(db, regions: Any, keywords: Any) -> tuple[list[str] | None, Any]:
    """GeoNode's update operation: regions named by code or name replace the resource's when
    any is known (an empty list leaves them), and names that are no region become keywords."""
    if regions is None:
        return None, keywords
    if not isinstance(regions, list) or not all(isinstance(r, (str, int)) and not isinstance(r, bool)
                                                for r in regions):
        raise InvalidInput("regions: expected a list of region codes or names")
    found, unknown = resolve_regions(db, regions)
    if unknown:
        if keywords is not None and not isinstance(keywords, list):
            raise InvalidInput("keywords: expected a list")
        keywords = [*(keywords or []), *unknown]
    return ([r.code for r in found] or None), keywords


def _create_like(request, resource_type, db, principal, settings, body, func_name) -> JSON:
    if resource_type not in RESOURCE_TYPES:
        raise NotFound(f"Unknown resource type: {resource_type}")
    if not isinstance(body, Mapping):
        raise InvalidInput("Expected an object with uuid and defaults")
    defaults = _json_value(body, "defaults", {}) or {}
    if not isinstance(defaults, Mapping):
        raise InvalidInput("defaults: expected a JSON object")
    uuid = body.get("uuid")
    clean = {k: v for k, v in defaults.items() if k != "owner"}
    _validate(db, lambda: resource_lifecycle.create_resource(db, principal, settings, clean,
                                                             resource_type=resource_type, uuid=uuid))
    return _start(request, db, principal, func_name=func_name, action=func_name,
                  params={"uuid": uuid, "resource_type": resource_type, "defaults": dict(defaults)},
                  name=str(defaults.get("title") or resource_type))


@router.post("/create/{resource_type}", summary="Create a resource (asynchronous)")
def create_resource(request: Request, resource_type: str, db: DbDep, principal: UserDep,
                    settings: SettingsDep, body: BodyDep) -> JSON:
    return _create_like(request, resource_type, db, principal, settings, body, "create")


@router.post("/ingest/{resource_type}", summary="Ingest a resource (asynchronous)")
def ingest_resource(request: Request, resource_type: str, db: DbDep, principal: UserDep,
                    settings: SettingsDep, body: BodyDep) -> JSON:
    return _create_like(request, resource_type, db, principal, settings, body, "ingest")


def _validate(db, attempt) -> None:
    """Run the operation's domain code once and roll it back: every input error shows now."""
    try:
        attempt()
    finally:
        db.rollback()
