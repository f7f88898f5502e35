"""cartotheca.tasks.jobs: job name → domain function; the one bridge from the engine to the catalogue."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from cartotheca.catalogue import permission_specs
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, Principal, principal_for
from cartotheca.db.models import Resource, User
from cartotheca.errors import InvalidInput, NotFound
from cartotheca.tasks.engine import Job, JobContext


def _resource(ctx: JobContext) -> Resource:
    resource_id = ctx.execution.resource_id or ctx.params.get("resource_id")
    resource = ctx.session.scalar(
        select(Resource).where(Resource.id == resource_id).options(*catalogue.LOAD_OPTIONS)
    ) if resource_id else None
    if resource is None:
        raise NotFound(f"resource {resource_id} no longer exists")
    return resource


def _principal(ctx: JobContext) -> Principal:
    user = ctx.session.get(User, ctx.execution.user_id) if ctx.execution.user_id else None
    if user is None:
        raise InvalidInput("the user who started this execution no longer exists")
    anonymous_id, registered_id = internal_group_ids(ctx.session, ctx.settings)
    return principal_for(ctx.session, user, InternalGroups(anonymous_id, registered_id), "job")


def _summary(ctx: JobContext, resource: Resource) -> dict[str, Any]:
    site = ctx.settings.site_base
    return {
        "output": {"uuid": resource.uuid},
        "resources": [{"id": resource.id,
                       "detail_url": f"/catalogue/#/{resource.resource_type}/{resource.id}"}],
        "detail_url": [f"{site}/catalogue/#/{resource.resource_type}/{resource.id}"],
    }


def set_permissions(ctx: JobContext) -> dict[str, Any]:
    resource = _resource(ctx)
    ctx.step("apply permissions")
    spec = permission_specs.Spec.from_input(ctx.params.get("spec", {}))
    permission_specs.apply(ctx.session, resource, spec, ctx.params.get("mode", "replace"))
    return {"output": {"uuid": resource.uuid}}


def remove_permissions(ctx: JobContext) -> dict[str, Any]:
    resource = _resource(ctx)
    ctx.step("remove permissions")
    permission_specs.apply(ctx.session, resource, permission_specs.Spec(), "remove")
    return {"output": {"uuid": resource.uuid}}


def delete(ctx: JobContext) -> dict[str, Any]:
    resource = _resource(ctx)
    uuid = resource.uuid
    ctx.step("delete resource")
    deleted = catalogue.delete_resources(ctx.session, _principal(ctx), [resource])
    return {"output": {"uuid": uuid, "deleted": deleted}}


def update(ctx: JobContext) -> dict[str, Any]:
    resource = _resource(ctx)
    principal = _principal(ctx)
    ctx.step("update metadata")
    values = dict(ctx.params.get("vals") or {})
    for key in ("keywords", "regions"):
        if ctx.params.get(key) is not None:
            values[key] = ctx.params[key]
    catalogue.patch_resource(ctx.session, principal, ctx.settings, resource, values)
    return _summary(ctx, resource)


def copy(ctx: JobContext) -> dict[str, Any]:
    source = _resource(ctx)
    principal = _principal(ctx)
    ctx.step("copy resource")
    clone = catalogue.copy_resource(ctx.session, principal, ctx.settings, source,
                                    ctx.params.get("defaults") or {})
    return _summary(ctx, clone)


def create(ctx: JobContext) -> dict[str, Any]:
    principal = _principal(ctx)
    ctx.step("create resource")
    defaults = dict(ctx.params.get("defaults") or {})
    defaults.pop("owner", None)  # the owner is the requester
    resource = catalogue.create_resource(ctx.session, principal, ctx.settings, defaults,
                                         resource_type=ctx.params["resource_type"],
                                         uuid=ctx.params.get("uuid"))
    ctx.execution.resource_id = resource.id
    return _summary(ctx, resource)


def ingest(ctx: JobContext) -> dict[str, Any]:
    return create(ctx)


JOBS: dict[str, Job] = {
    "set_permissions": set_permissions,
    "remove_permissions": remove_permissions,
    "delete": delete,
    "update": update,
    "copy": copy,
    "create": create,
    "ingest": ingest,
}
