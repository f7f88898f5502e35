"""cartotheca.api.routes.uploads: the dataset upload endpoint and the upload records.

An upload is received part by part into its staging (a folder of ``UPLOAD_DIR``, or the object
store's ``uploads/<token>/``: see ``catalogue.staging``), checked as far as possible without
reading the data (a 400 before anything exists), recorded, and imported by an execution whose
start object is the answer. The upload size and parallelism limits
(``upload-size-limits``, ``upload-parallelism-limits``) are checked before the body is read;
an oversized body is refused without reading the rest of it.
"""

from __future__ import annotations

import uuid as uuid_mod
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, UserDep, app_state, list_context, read_body
from cartotheca.api.errors import error_response
from cartotheca.api.multipart import (
    StagedForm,
    TooLarge,
    check_declared_size,
    discard,
    drain,
    stage_multipart,
)
from cartotheca.api.responses import JSON, no_content
from cartotheca.api.schemas.common import envelope
from cartotheca.api.schemas.executions import start_object
from cartotheca.api.schemas.uploads import final_step, upload_record
from cartotheca.catalogue import resource_files, staging, upload_limits, uploads
from cartotheca.db.models import Resource
from cartotheca.errors import LimitExceeded, NotFound

router = APIRouter(tags=["uploads"])


@router.post("/api/v2/uploads/upload", summary="Upload a dataset (multipart; asynchronous import)")
async def upload_dataset(request: Request, db: DbDep, principal: UserDep, settings: SettingsDep) -> Response:
    sessions = app_state(request).sessions
    limit = await run_in_threadpool(upload_limits.dataset_upload_size, db, settings)
    try:
        check_declared_size(request, limit)
        slot = await run_in_threadpool(upload_limits.acquire_upload_slot, sessions, principal.id)
    except TooLarge as exc:
        return _refusal(exc, hang_up=True)
    except LimitExceeded as exc:
        # Too many uploads under way: read the (size-bounded) body so the client sees the answer.
        return _refusal(exc, hang_up=not await drain(request, 0, limit))
    token = uuid_mod.uuid4().hex
    staged = staging.for_upload(settings, token)
    try:
        form = await stage_multipart(request, staged, limit, hang_up=True)
        body = await run_in_threadpool(_start, request, db, principal, settings, form, token, slot)
    except TooLarge as exc:
        return _refusal(exc, hang_up=True)
    except BaseException:
        await discard(staged)
        raise
    finally:
        await run_in_threadpool(_release, sessions, slot)
    return JSON(body)


@router.put("/api/v2/uploads/upload", summary="Upload a dataset (the same as POST)")
async def upload_dataset_put(request: Request, db: DbDep, principal: UserDep,
                             settings: SettingsDep) -> Response:
    return await upload_dataset(request, db, principal, settings)


def _refusal(exc: LimitExceeded, *, hang_up: bool) -> Response:
    """The error answer; ``hang_up`` closes the connection so the unread body is never received."""
    response = error_response(400, exc.messages, exc.code)
    if hang_up:
        response.headers["Connection"] = "close"
    return response


def _release(sessions, slot: int) -> None:
    with sessions() as session:
        upload_limits.release_upload_slot(session, slot)
        session.commit()


def _start(request: Request, db, principal, settings, form: StagedForm, token: str, slot: int) -> dict:
    files = form.parts()
    if resource_files.is_resource_file_action(form.fields):
        return _start_resource_file(request, db, principal, settings, form, files, slot)
    uploads.sweep_abandoned(db, settings)
    upload, params = uploads.begin_upload(db, settings, principal, form.fields, files, token, form.total)
    tasks = app_state(request).tasks
    execution = tasks.submit(db, user_id=principal.id, func_name="import_upload", action="import",
                             input_params=params, source="upload_workflow",
                             name=files["base_file"].name)
    upload.exec_id = execution.exec_id
    # The upload record replaces the slot in one commit: it is counted once, never missed.
    upload_limits.release_upload_slot(db, slot)
    db.commit()
    tasks.dispatch(execution.exec_id)
    return start_object(siteurl.base(settings), execution)


def _start_resource_file(request: Request, db, principal, settings, form: StagedForm, files,
                         slot: int) -> dict:
    """A style or metadata file for a published dataset: checked now, applied by an execution;
    the staged file is not needed after the check (its text travels in the execution's inputs)."""
    try:
        params = resource_files.check(db, settings, principal, form.fields, files)
    finally:
        form.staging.remove()
    tasks = app_state(request).tasks
    execution = tasks.submit(db, user_id=principal.id, func_name="apply_resource_file",
                             action=params["action"], input_params=params, source="upload_workflow",
                             resource_id=params["resource_id"], name=params["file_name"])
    upload_limits.release_upload_slot(db, slot)
    db.commit()
    tasks.dispatch(execution.exec_id)
    return start_object(siteurl.base(settings), execution)


@router.get("/api/v2/uploads", summary="Uploads and the state of their import")
def list_uploads(request: Request, db: DbDep, principal: UserDep, settings: SettingsDep) -> JSON:
    listing = uploads.list_uploads(list_context(request, db, principal))
    items = [upload_record(u, e, siteurl.base(settings)) for u, e in listing.rows]
    return JSON(envelope(request, "uploads", items, total=listing.total, page=listing.page,
                         page_size=listing.page_size))


@router.get("/api/v2/uploads/{upload_id}", summary="One upload record")
def get_upload(upload_id: str, db: DbDep, principal: UserDep, settings: SettingsDep) -> JSON:
    upload, execution = uploads.get_upload(db, principal, upload_id)
    return JSON({"upload": upload_record(upload, execution, siteurl.base(settings))})


@router.patch("/api/v2/uploads/{upload_id}", summary="Upload records are read-only; unchanged fields pass")
def patch_upload(upload_id: str, db: DbDep, principal: UserDep, settings: SettingsDep,
                 body=Depends(read_body)) -> JSON:
    upload, execution = uploads.get_upload(db, principal, upload_id)
    record = upload_record(upload, execution, siteurl.base(settings))
    uploads.check_update(record, body)
    return JSON({"upload": record})


@router.put("/api/v2/uploads/{upload_id}", summary="Upload records are read-only (as PATCH)")
def put_upload(upload_id: str, db: DbDep, principal: UserDep, settings: SettingsDep,
               body=Depends(read_body)) -> JSON:
    return patch_upload(upload_id, db, principal, settings, body)


@router.delete("/api/v2/uploads/{upload_id}", status_code=204, summary="Forget an upload")
def delete_upload(upload_id: str, db: DbDep, principal: UserDep, settings: SettingsDep):
    upload, execution = uploads.get_upload(db, principal, upload_id)
    uploads.delete_upload(db, settings, upload, execution)
    db.commit()
    return no_content()


@router.get("/api/v2/uploads/{upload_id}/{field_name}", summary="One field of an upload record")
def upload_field(upload_id: str, field_name: str, db: DbDep, principal: UserDep,
                 settings: SettingsDep) -> JSON:
    upload, execution = uploads.get_upload(db, principal, upload_id)
    record = upload_record(upload, execution, siteurl.base(settings))
    if field_name not in record:
        raise NotFound(f"Unknown field {field_name}")
    return JSON({field_name: record[field_name]})


FinalId = Annotated[str, Query(alias="id", description="the upload's import_id")]


@router.put("/upload/final", summary="Legacy status check of an upload")
def upload_final(db: DbDep, principal: PrincipalDep, settings: SettingsDep, upload_id: FinalId) -> JSON:
    upload, execution = uploads.get_upload(db, principal, upload_id)
    resource = db.get(Resource, upload.resource_id) if upload.resource_id else None
    return JSON(final_step(upload, execution, resource, siteurl.base(settings)))


@router.get("/upload/final", summary="Legacy status check of an upload (as PUT)")
def upload_final_get(db: DbDep, principal: PrincipalDep, settings: SettingsDep, upload_id: FinalId) -> JSON:
    return upload_final(db, principal, settings, upload_id)
