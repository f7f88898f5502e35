"""cartotheca.tasks.jobs: job name → domain function; the one bridge from the engine to the catalogue."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from cartotheca import siteurl
from cartotheca.catalogue import (
    events,
    permission_specs,
    publishing,
    resource_files,
    resource_lifecycle,
    staging,
    thumbnails,
    uploads,
)
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, Principal, principal_for
from cartotheca.catalogue.harvesting import runs as harvesting
from cartotheca.catalogue.kinds import Kinds
from cartotheca.catalogue.query.resource_list import LOAD_OPTIONS
from cartotheca.db.models import Resource, Upload, User
from cartotheca.db.session import on_commit
from cartotheca.errors import CartothecaError, InvalidInput, NotFound
from cartotheca.geodata.ingest import IngestOptions
from cartotheca.management.jobs import run_job as management_command
from cartotheca.settings import Settings
from cartotheca.tasks.engine import Engine, Job, JobContext


def _kinds(ctx: JobContext) -> Kinds:
    """The resource kinds the composition root gave the engine."""
    if not isinstance(ctx.services, Kinds):
        raise CartothecaError("the task engine was built without the resource kinds")
    return ctx.services


def _resource(ctx: JobContext) -> Resource:
    resource_id = ctx.execution.resource_id or ctx.params.get("resource_id")
    resource = ctx.session.scalar(
        select(Resource).where(Resource.id == resource_id).options(*LOAD_OPTIONS)
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


def _actor(ctx: JobContext) -> User | None:
    return ctx.session.get(User, ctx.execution.user_id) if ctx.execution.user_id else None


def _summary(ctx: JobContext, resource: Resource) -> dict[str, Any]:
    site = siteurl.base(ctx.settings)
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
    events.record(ctx.session, events.PERMISSIONS_CHANGED, resource=resource, actor=_actor(ctx))
    return {"output": {"uuid": resource.uuid}}


def remove_permissions(ctx: JobContext) -> dict[str, Any]:
    resource = _resource(ctx)
    ctx.step("remove permissions")
    permission_specs.apply(ctx.session, resource, permission_specs.Spec(), "remove")
    events.record(ctx.session, events.PERMISSIONS_CHANGED, resource=resource, actor=_actor(ctx))
    return {"output": {"uuid": resource.uuid}}


def delete(ctx: JobContext) -> dict[str, Any]:
    resource = _resource(ctx)
    uuid = resource.uuid
    ctx.step("delete resource")
    deleted = resource_lifecycle.delete_resources(ctx.session, _principal(ctx), ctx.settings, [resource],
                                                  kinds=_kinds(ctx))
    return {"output": {"uuid": uuid, "deleted": deleted}}


def update(ctx: JobContext) -> dict[str, Any]:
    resource = _resource(ctx)
    principal = _principal(ctx)
    ctx.step("update metadata")
    values = dict(ctx.params.get("vals") or {})
    for key in ("keywords", "regions"):
        if ctx.params.get(key) is not None:
            values[key] = ctx.params[key]
    resource_lifecycle.patch_resource(ctx.session, principal, ctx.settings, resource, values)
    return _summary(ctx, resource)


def copy(ctx: JobContext) -> dict[str, Any]:
    source = _resource(ctx)
    principal = _principal(ctx)
    ctx.step("copy resource")
    clone = resource_lifecycle.copy_resource(ctx.session, principal, ctx.settings, source,
                                             ctx.params.get("defaults") or {}, kinds=_kinds(ctx),
                                             key=ctx.execution.exec_id.replace("-", ""),
                                             on_stored=ctx.on_failure)
    return _summary(ctx, clone)


def create(ctx: JobContext) -> dict[str, Any]:
    principal = _principal(ctx)
    ctx.step("create resource")
    defaults = dict(ctx.params.get("defaults") or {})
    defaults.pop("owner", None)  # the owner is the requester
    resource = resource_lifecycle.create_resource(ctx.session, principal, ctx.settings, defaults,
                                                  resource_type=ctx.params["resource_type"],
                                                  uuid=ctx.params.get("uuid"))
    ctx.execution.resource_id = resource.id
    return _summary(ctx, resource)


def ingest(ctx: JobContext) -> dict[str, Any]:
    return create(ctx)


def import_upload(ctx: JobContext) -> dict[str, Any]:
    """Publish the files of an upload (the dataset upload endpoint's execution).

    Retries are safe: the journal beside the staged files says what a killed attempt had begun
    to store, and that is removed before starting again; each attempt reads the files from a
    clean folder (with an object store, a fresh local copy of the staged objects). Staged files
    are removed once the import ends either way (after the commit on success, so a retry still
    finds them).
    """
    upload_id = ctx.params["upload_id"]
    staged = staging.for_upload(ctx.settings, ctx.params["staging"])
    bind = ctx.database()
    failure: dict[str, str] = {}

    def failed() -> None:
        uploads.mark_invalid(bind, upload_id, failure.get("reason") or "the import failed")
        staged.remove()

    ctx.on_failure(failed)
    uploads.set_state(bind, upload_id, uploads.RUNNING, exec_id=ctx.execution.exec_id)
    try:
        principal = _principal(ctx)
        folder = staged.fetch(ctx.params["files"].values())
        files = {field: folder / name for field, name in ctx.params["files"].items()}
        kinds = _kinds(ctx)
        resources = publishing.publish_files(
            ctx.session, ctx.settings, principal, files, _upload_options(ctx.params["options"], files),
            drawer=kinds.thumbnails, dropped=kinds.dropped,
            key=ctx.execution.exec_id.replace("-", ""), workdir=folder / "work",
            progress=lambda step, _pct: ctx.step(step), on_stored=ctx.on_failure,
            journal=staged.journal(),
            defer_thumbnail=lambda resource: ctx.follow_up(
                "dataset_thumbnail", "thumbnail", {"resource_id": resource.id}, resource.id),
        )
        ctx.step("finishing")
        upload = ctx.session.get_one(Upload, upload_id)
        first = resources[0] if resources else None
        uploads.mark_processed(upload, first, first.srid if first else None)
        ctx.execution.resource_id = first.id if first else None
    except Exception as exc:
        failure["reason"] = (exc.message if isinstance(exc, CartothecaError)
                             else f"{type(exc).__name__}: {exc}")
        raise
    on_commit(ctx.session, staged.remove)
    return _upload_summary(ctx, resources)


def abandon_import(session: Session, settings: Settings, params: dict[str, Any], reason: str) -> None:
    """The recovery gave an import up for good: undo what its journal says was stored, remove
    the staged files and, in the recovery's transaction, make the upload INVALID."""
    staged = staging.for_upload(settings, params["staging"])
    staged.journal().undo(settings)
    staged.remove()
    uploads.mark_abandoned(session, params["upload_id"], reason)


def _upload_options(options: dict[str, Any], files: dict[str, Any]) -> IngestOptions:
    """The form's options; the SLD and ISO XML are read from their staged files."""
    values = dict(options)
    for field, key in (("sld_file", "sld"), ("xml_file", "xml")):
        if field in files:
            values[key] = files[field]
    return IngestOptions.from_mapping(values)


def _upload_summary(ctx: JobContext, resources: list[Resource]) -> dict[str, Any]:
    site = siteurl.base(ctx.settings)
    return {
        "resources": [{"id": r.id, "detail_url": f"/catalogue/#/dataset/{r.id}"} for r in resources],
        "detail_url": [f"{site}/catalogue/#/dataset/{r.id}" for r in resources],
        "output": {"uuids": [r.uuid for r in resources]},
    }


def harvester_check_availability(ctx: JobContext) -> dict[str, Any]:
    ctx.step("check availability")
    return harvesting.check_availability(ctx.session, ctx.settings, ctx.params["harvester_id"])


def harvester_refresh(ctx: JobContext) -> dict[str, Any]:
    """Commits as it goes (see catalogue.harvesting.runs), like every harvester action."""
    ctx.step("list remote resources")
    return harvesting.refresh(ctx.session, ctx.settings, ctx.params["harvester_id"],
                              ctx.params.get("session_id"), ctx.step)


def harvester_harvest(ctx: JobContext) -> dict[str, Any]:
    ctx.step("list remote resources")
    return harvesting.harvest(ctx.session, ctx.settings, ctx.params["harvester_id"],
                              ctx.params.get("session_id"), ctx.step)


def apply_resource_file(ctx: JobContext) -> dict[str, Any]:
    """Apply the checked style or ISO metadata file of an upload action to its dataset."""
    ctx.step("apply style" if ctx.params["action"] == resource_files.STYLE_UPLOAD else "apply metadata")
    resource = resource_files.apply(ctx.session, ctx.settings, _principal(ctx), ctx.params)
    if ctx.params["action"] == resource_files.STYLE_UPLOAD:
        ctx.follow_up("dataset_thumbnail", "thumbnail", {"resource_id": resource.id}, resource.id)
    return _summary(ctx, resource)


def dataset_thumbnail(ctx: JobContext) -> dict[str, Any]:
    """Draw the thumbnail of a large layer the import published without one."""
    resource = ctx.session.get(Resource, ctx.params["resource_id"])
    if resource is None:
        return {"output": {"thumbnail": None, "reason": "the resource was deleted"}}
    ctx.step("thumbnail")
    drawn = thumbnails.draw_dataset_thumbnail(ctx.session, ctx.settings, _kinds(ctx).thumbnails, resource)
    return {"output": {"thumbnail": resource.thumbnail_url if drawn else None}}


JOBS: dict[str, Job] = {
    "set_permissions": set_permissions,
    "remove_permissions": remove_permissions,
    "delete": delete,
    "update": update,
    "copy": copy,
    "create": create,
    "ingest": ingest,
    "import_upload": import_upload,
    "dataset_thumbnail": dataset_thumbnail,
    "apply_resource_file": apply_resource_file,
    "management_command": management_command,
    "harvester_check_availability": harvester_check_availability,
    "harvester_refresh": harvester_refresh,
    "harvester_harvest": harvester_harvest,
}

# What the recovery records when it gives an execution of these jobs up for good.
ABANDONED = {"import_upload": abandon_import}


def build_engine(settings: Settings, sessions: sessionmaker[Session], kinds: Kinds | None = None) -> Engine:
    """The engine with this job table and the resource ``kinds`` its jobs use: the one the app,
    the CLI and the Celery worker run."""
    return Engine(settings, sessions, JOBS, ABANDONED, kinds)
