"""cartotheca.catalogue.upload_limits: upload size and parallelism limits, and the per-user upload slots.

Limits are looked up by slug as in GeoNode. The defaults (``dataset_upload_size`` from
DEFAULT_MAX_UPLOAD_SIZE, ``document_upload_size`` from MAX_DOCUMENT_SIZE,
``default_max_parallel_uploads`` = 5) always exist: they are built from the settings unless an
administrator has stored another value, so they need no seeding and follow the settings.

The parallelism limit counts a user's open upload records plus the upload requests still being
received (slots). Taking a slot is one transaction that holds a per-user lock while it counts
and inserts (a row lock on the user on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite), so N+1
simultaneous requests against a limit of N get exactly one refusal.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session, sessionmaker

from cartotheca.catalogue.uploads import OPEN_STATES
from cartotheca.db.base import utcnow
from cartotheca.db.models import (
    ExecutionRequest,
    Upload,
    UploadParallelismLimit,
    UploadSizeLimit,
    UploadSlot,
    User,
)
from cartotheca.errors import InvalidInput, LimitExceeded, NotFound
from cartotheca.settings import Settings

DATASET_UPLOAD_SIZE = "dataset_upload_size"
DOCUMENT_UPLOAD_SIZE = "document_upload_size"
DEFAULT_MAX_PARALLEL_UPLOADS = "default_max_parallel_uploads"
DEFAULT_PARALLEL_UPLOADS = 5
MAX_PARALLEL_NUMBER = 32767  # GeoNode stores max_number as a positive small integer
PARALLELISM_CODE = "upload_parallelism_limit_exceeded"
# A slot lives while its request body arrives; one left by a server that died mid-request stops
# counting after this long (longer than any upload within the size limit takes).
SLOT_LIFETIME = dt.timedelta(hours=6)
SLUG = re.compile(r"^[-a-zA-Z0-9_]{3,255}$")


@dataclass(frozen=True)
class SizeLimit:
    slug: str
    description: str | None
    max_size: int


@dataclass(frozen=True)
class ParallelismLimit:
    slug: str
    description: str | None
    max_number: int


def default_size_limits(settings: Settings) -> dict[str, SizeLimit]:
    document_bytes = int(settings.MAX_DOCUMENT_SIZE * 1024 * 1024)
    return {
        DATASET_UPLOAD_SIZE: SizeLimit(
            DATASET_UPLOAD_SIZE, "The sum of sizes for the files of a dataset upload.",
            settings.DEFAULT_MAX_UPLOAD_SIZE),
        DOCUMENT_UPLOAD_SIZE: SizeLimit(
            DOCUMENT_UPLOAD_SIZE, "The size of the file of a document upload.", document_bytes),
    }


def default_parallelism_limits() -> dict[str, ParallelismLimit]:
    return {DEFAULT_MAX_PARALLEL_UPLOADS: ParallelismLimit(
        DEFAULT_MAX_PARALLEL_UPLOADS, "The default maximum parallel uploads per user.",
        DEFAULT_PARALLEL_UPLOADS)}


def size_label(size: int) -> str:
    """Django's filesizeformat (binary units, one decimal), which GeoNode shows as max_size_label."""
    if size < 1024:
        return f"{size} byte" if size == 1 else f"{size} bytes"
    for exponent, unit in enumerate(("KB", "MB", "GB", "TB"), start=1):
        if size < 1024 ** (exponent + 1):
            return f"{round(size / 1024 ** exponent, 1):.1f} {unit}"
    return f"{round(size / 1024 ** 5, 1):.1f} PB"


# -- reading ---------------------------------------------------------------------------------


def size_limits(session: Session, settings: Settings) -> list[SizeLimit]:
    found = default_size_limits(settings)
    for row in session.scalars(select(UploadSizeLimit)):
        found[row.slug] = SizeLimit(row.slug, row.description, row.max_size)
    return [found[slug] for slug in sorted(found)]


def get_size_limit(session: Session, settings: Settings, slug: str) -> SizeLimit:
    row = session.get(UploadSizeLimit, slug)
    if row is not None:
        return SizeLimit(row.slug, row.description, row.max_size)
    default = default_size_limits(settings).get(slug)
    if default is None:
        raise NotFound()
    return default


def parallelism_limits(session: Session) -> list[ParallelismLimit]:
    found = default_parallelism_limits()
    for row in session.scalars(select(UploadParallelismLimit)):
        found[row.slug] = ParallelismLimit(row.slug, row.description, row.max_number)
    return [found[slug] for slug in sorted(found)]


def get_parallelism_limit(session: Session, slug: str) -> ParallelismLimit:
    row = session.get(UploadParallelismLimit, slug)
    if row is not None:
        return ParallelismLimit(row.slug, row.description, row.max_number)
    default = default_parallelism_limits().get(slug)
    if default is None:
        raise NotFound()
    return default


def dataset_upload_size(session: Session, settings: Settings) -> int:
    return get_size_limit(session, settings, DATASET_UPLOAD_SIZE).max_size


# -- writing (staff) -------------------------------------------------------------------------


def _fields(body: Any, wrapper: str) -> Mapping[str, Any]:
    if isinstance(body, Mapping) and set(body) == {wrapper} and isinstance(body[wrapper], Mapping):
        body = body[wrapper]
    if not isinstance(body, Mapping):
        raise InvalidInput("Expected a JSON object")
    return body


def _slug(body: Mapping[str, Any]) -> str:
    slug = body.get("slug")
    if slug in (None, ""):
        raise InvalidInput("slug: This field is required.")
    if not isinstance(slug, str) or not SLUG.match(slug):
        raise InvalidInput("slug: Enter a valid “slug” of at least 3 letters, numbers, underscores or "
                           "hyphens.")
    return slug


def _description(body: Mapping[str, Any], current: str | None) -> str | None:
    if "description" not in body:
        return current
    value = body["description"]
    if value is not None and (not isinstance(value, str) or len(value) > 255 or "\x00" in value):
        raise InvalidInput("description: Ensure this field has no more than 255 characters.")
    return value


def _integer(body: Mapping[str, Any], key: str, current: int | None, maximum: int) -> int:
    if key not in body:
        if current is None:
            raise InvalidInput(f"{key}: This field is required.")
        return current
    value = body[key]
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{key}: A valid integer is required.")
    if value < 0:
        raise InvalidInput(f"{key}: Ensure this value is greater than or equal to 0.")
    if value > maximum:
        raise InvalidInput(f"{key}: Ensure this value is less than or equal to {maximum}.")
    return value


def save_size_limit(session: Session, settings: Settings, body: Any) -> tuple[SizeLimit, bool]:
    """Create or replace a size limit from a POST body; returns it and whether it is new."""
    fields = _fields(body, "upload-size-limit")
    slug = _slug(fields)
    row = session.get(UploadSizeLimit, slug)
    current = SizeLimit(row.slug, row.description, row.max_size) if row is not None else \
        default_size_limits(settings).get(slug)
    description = _description(fields, current.description if current else None)
    max_size = _integer(fields, "max_size", current.max_size if current else None, 2 ** 63 - 1)
    created = current is None
    if row is None:
        row = UploadSizeLimit(slug=slug)
        session.add(row)
    row.description, row.max_size = description, max_size
    session.flush()
    return SizeLimit(slug, description, max_size), created


def save_parallelism_limit(session: Session, body: Any) -> tuple[ParallelismLimit, bool]:
    fields = _fields(body, "upload-parallelism-limit")
    slug = _slug(fields)
    row = session.get(UploadParallelismLimit, slug)
    current = ParallelismLimit(row.slug, row.description, row.max_number) if row is not None else \
        default_parallelism_limits().get(slug)
    description = _description(fields, current.description if current else None)
    max_number = _integer(fields, "max_number", current.max_number if current else None, MAX_PARALLEL_NUMBER)
    created = current is None
    if row is None:
        row = UploadParallelismLimit(slug=slug)
        session.add(row)
    row.description, row.max_number = description, max_number
    session.flush()
    return ParallelismLimit(slug, description, max_number), created


# -- upload slots ----------------------------------------------------------------------------


def _lock_user(session: Session, user_id: int) -> None:
    """Serialise slot-taking per user until the transaction ends."""
    if session.get_bind().dialect.name == "sqlite":
        # SQLite has no row locks; an immediate transaction takes the write lock up front, so a
        # second counter waits instead of reading the same count.
        session.connection().exec_driver_sql("BEGIN IMMEDIATE")
    else:
        session.execute(select(User.id).where(User.id == user_id).with_for_update())


def open_uploads(session: Session, user_id: int, now: dt.datetime) -> int:
    """The user's uploads under way: open records whose import has not ended, plus slots."""
    records = session.scalar(
        select(func.count()).select_from(Upload)
        .outerjoin(ExecutionRequest, ExecutionRequest.exec_id == Upload.exec_id)
        .where(Upload.user_id == user_id, Upload.state.in_(OPEN_STATES),
               or_(ExecutionRequest.id.is_(None), ExecutionRequest.status.in_(("ready", "running"))))
    ) or 0
    slots = session.scalar(select(func.count()).select_from(UploadSlot)
                           .where(UploadSlot.user_id == user_id, UploadSlot.expires > now)) or 0
    return records + slots


def acquire_upload_slot(sessions: sessionmaker[Session], user_id: int) -> int:
    """Take one of the user's parallel-upload slots, or raise ``upload_parallelism_limit_exceeded``."""
    with sessions() as session:
        _lock_user(session, user_id)
        now = utcnow()
        limit = get_parallelism_limit(session, DEFAULT_MAX_PARALLEL_UPLOADS).max_number
        if open_uploads(session, user_id, now) >= limit:
            session.rollback()
            raise LimitExceeded(f"The number of active parallel uploads exceeds {limit}. "
                                "Wait for the pending ones to finish.", code=PARALLELISM_CODE)
        session.execute(delete(UploadSlot).where(UploadSlot.user_id == user_id, UploadSlot.expires <= now))
        slot = UploadSlot(user_id=user_id, created=now, expires=now + SLOT_LIFETIME)
        session.add(slot)
        session.commit()
        return slot.id


def release_upload_slot(session: Session, slot_id: int) -> None:
    """Drop a slot in ``session`` (the upload route does it in the transaction that records the
    upload, so the upload is never counted twice nor missed)."""
    session.execute(delete(UploadSlot).where(UploadSlot.id == slot_id))
