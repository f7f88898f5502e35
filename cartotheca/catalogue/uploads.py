"""cartotheca.catalogue.uploads: upload records, their states, and the files staged for an import.

An upload record (spec §2.5) is created with its execution when the files have been received,
moves READY → RUNNING → PROCESSED (or INVALID with the reason) as the ingest job works, and
keeps the staged files (``catalogue.staging``) only until the import ends. State changes made
while the job runs are written in their own short transactions, so a client polling the record
sees them at once.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from cartotheca.catalogue import publishing, query, staging
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query import Field, FieldMap, ListContext, Listing
from cartotheca.catalogue.resources import parse_id
from cartotheca.catalogue.staging import StagedPart
from cartotheca.db.base import utcnow
from cartotheca.db.models import ExecutionRequest, Upload
from cartotheca.errors import Conflict, InvalidInput, NotAuthenticated, NotFound
from cartotheca.geodata import archives, ingest, sources
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.ingest")

READY, RUNNING, PENDING, WAITING = "READY", "RUNNING", "PENDING", "WAITING"
INCOMPLETE, COMPLETE, INVALID, PROCESSED = "INCOMPLETE", "COMPLETE", "INVALID", "PROCESSED"
STATES = (READY, RUNNING, PENDING, WAITING, INCOMPLETE, COMPLETE, INVALID, PROCESSED)
OPEN_STATES = (READY, RUNNING, PENDING, WAITING)
# GeoNode's progress per state (compat §9); PROCESSED is 100 only once complete.
PROGRESS = {READY: 0.0, INVALID: 0.0, INCOMPLETE: 0.0, PENDING: 33.0, WAITING: 50.0,
            RUNNING: 80.0, COMPLETE: 80.0}

U = Upload
UPLOAD_FIELDS = FieldMap(
    fields={
        "id": Field(U.id, kind=int), "pk": Field(U.id, kind=int), "name": Field(U.name),
        "state": Field(U.state), "complete": Field(U.complete, kind=bool, nullable=False),
        "user": Field(U.user_id, kind=int), "date": Field(U.date, kind=dt.datetime),
        "create_date": Field(U.create_date, kind=dt.datetime),
        "import_id": Field(U.id, kind=int), "resource": Field(U.resource_id, kind=int),
    },
    search_fields={"name": U.name, "title": U.title},
    default_search_fields=("name", "title"),
    default_sort=(U.create_date.desc(),),
    tiebreak=U.id,
)


def progress_of(state: str, complete: bool) -> float:
    if state == PROCESSED:
        return 100.0 if complete else 80.0
    return PROGRESS.get(state, 0.0)


# -- creating and changing ------------------------------------------------------------------


def create_upload(session: Session, principal: Principal, *, name: str, title: str | None,
                  files: list[dict[str, str]], size: int) -> Upload:
    upload = Upload(user_id=principal.id, name=name[:255], title=(title or name)[:255], state=READY,
                    complete=False, files=files, size=size)
    session.add(upload)
    session.flush()
    return upload


def set_state(bind: Engine, upload_id: int, state: str, **values: Any) -> None:
    """Change a running upload's state in its own committed transaction (visible at once)."""
    with Session(bind=bind) as session:
        session.execute(update(Upload).where(Upload.id == upload_id)
                        .values(state=state, date=utcnow(), **values))
        session.commit()


def mark_invalid(bind: Engine, upload_id: int, reason: str) -> None:
    set_state(bind, upload_id, INVALID, complete=False, error=reason[:4000])


def mark_processed(upload: Upload, resource, srid: str | None) -> None:
    """Inside the job's transaction: the upload and its dataset become visible together."""
    upload.state = PROCESSED
    upload.complete = True
    upload.date = utcnow()
    upload.error = None
    if resource is not None:
        upload.resource_id = resource.id
        upload.bbox = [resource.bbox_x0, resource.bbox_y0, resource.bbox_x1, resource.bbox_y1]
        upload.srid = srid


# -- reading --------------------------------------------------------------------------------


def _base(principal: Principal):
    if principal.id is None:
        raise NotAuthenticated()
    stmt = select(Upload, ExecutionRequest).outerjoin(
        ExecutionRequest, ExecutionRequest.exec_id == Upload.exec_id)
    if not principal.is_staff:
        stmt = stmt.where(Upload.user_id == principal.id)
    return stmt


def list_uploads(ctx: ListContext) -> Listing:
    """The requester's uploads (staff: everyone's), with their executions."""
    stmt = _base(ctx.principal)
    # The page is of ids; each upload is then read with its execution (a join, not a load).
    listing = query.page(ctx.session, stmt.with_only_columns(Upload.id), ctx.query, UPLOAD_FIELDS)
    ids = list(listing.rows)
    rows = {}
    if ids:
        rows = {u.id: (u, e) for u, e in ctx.session.execute(stmt.where(Upload.id.in_(ids)))}
    listing.rows = [rows[i] for i in ids if i in rows]
    return listing


def get_upload(session: Session, principal: Principal, raw_id: Any) -> tuple[Upload, ExecutionRequest | None]:
    upload_id = parse_id(raw_id)  # past BIGINT the driver would raise: not found, like any other
    row = session.execute(_base(principal).where(Upload.id == upload_id)).first()
    if row is None:
        raise NotFound()
    return row[0], row[1]


def effective_state(upload: Upload, execution: ExecutionRequest | None) -> tuple[str, str | None]:
    """The state to show: an execution that failed without the job recording it (a worker
    lost for good) makes the upload INVALID with the engine's reason."""
    if execution is not None and execution.status == "failed" and upload.state in OPEN_STATES:
        return INVALID, upload.error or execution.log
    return upload.state, upload.error


def check_update(current: Mapping[str, Any], body: Any) -> None:
    """Upload records are written by the import only: a PUT/PATCH may echo fields unchanged."""
    if not isinstance(body, Mapping):
        raise InvalidInput("Expected a JSON object")
    data = body.get("upload", body) if set(body) == {"upload"} else body
    for key, value in data.items():
        if key not in current:
            raise InvalidInput(f"{key}: unknown field")
        if current[key] != value:
            raise InvalidInput(f"{key}: this field is read-only and cannot be changed")


def delete_upload(session: Session, settings: Settings, upload: Upload,
                  execution: ExecutionRequest | None) -> None:
    """Forget an upload that has ended; its staged files go with it (the dataset stays)."""
    if execution is not None and execution.status in ("ready", "running"):
        raise Conflict("The upload is still being imported")
    token = (execution.input_params or {}).get("staging") if execution is not None else None
    session.delete(upload)
    session.flush()
    if token:
        staging.for_upload(settings, token).remove()


# -- abandoned imports ----------------------------------------------------------------------


def sweep_abandoned(session: Session, settings: Settings) -> int:
    """Clean imports whose execution ended without the job cleaning up (its worker was killed
    and not retried): undo what their journal says was stored, remove the staged files and
    record the upload as INVALID. Cheap when there is nothing to do (one indexed query)."""
    rows = session.execute(
        select(Upload, ExecutionRequest).join(ExecutionRequest, ExecutionRequest.exec_id == Upload.exec_id)
        .where(Upload.state.in_(OPEN_STATES), ExecutionRequest.status == "failed")
    ).all()
    for upload, execution in rows:
        token = (execution.input_params or {}).get("staging")
        if token:
            staged = staging.for_upload(settings, token)
            staged.journal().undo(settings)
            staged.remove()
        _record_abandoned(upload, execution.log or "the import was interrupted")
    if rows:
        session.commit()
    return len(rows)


def mark_abandoned(session: Session, upload_id: int, reason: str) -> None:
    """In the caller's transaction: an upload whose import was given up for good (its worker
    lost, no attempt left) is INVALID with the reason, unless it had already ended."""
    upload = session.get(Upload, upload_id)
    if upload is not None and upload.state in OPEN_STATES:
        _record_abandoned(upload, reason)


def _record_abandoned(upload: Upload, reason: str) -> None:
    upload.state = INVALID
    upload.complete = False
    upload.error = upload.error or reason
    upload.date = utcnow()


# -- starting an import ---------------------------------------------------------------------

TEXT_OPTIONS = ("charset", "time", "layer_title", "title", "overwrite_existing_layer", "resource_pk",
                "skip_existing_layers", "permissions", "name")


def begin_upload(session: Session, settings: Settings, principal: Principal, fields: Mapping[str, str],
                 files: Mapping[str, StagedPart], token: str, size: int) -> tuple[Upload, dict[str, Any]]:
    """Check everything that can be checked before the data is read (form, options, XML and
    SLD, an archive's directory) and record the upload; returns it with the inputs of its
    import execution. Nothing is recorded when a check fails."""
    if principal.id is None:
        raise NotAuthenticated()
    kind = ingest.check_form({name: part.name for name, part in files.items()})
    options = {k: v for k, v in fields.items() if k in TEXT_OPTIONS}
    for name, key in (("sld_file", "sld"), ("xml_file", "xml")):
        if name in files:
            options[key] = files[name].read_xml(name)
    parsed = ingest.IngestOptions.from_mapping(options)
    publishing.check_options(session, settings, parsed)
    base = files["base_file"]
    if kind == "archive":
        base.check_archive(archives.ArchiveLimits.from_settings(settings))
    stem = base.name.rsplit(".", 1)[0]
    upload = create_upload(session, principal, name=parsed.name or sources.sanitize_name(stem),
                           title=parsed.title or stem,
                           files=[{"name": stem, "slug": p.name, "file": f"{token}/{p.relative}"}
                                  for p in files.values()],
                           size=size)
    stored_options = {k: v for k, v in options.items() if k not in ("sld", "xml")}
    params = {"upload_id": upload.id, "staging": token,
              "files": {name: part.relative for name, part in files.items()},
              "options": stored_options, "action": "upload"}
    return upload, params
