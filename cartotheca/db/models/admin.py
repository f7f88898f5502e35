"""cartotheca.db.models.admin: administration tables (upload limits, upload slots, management jobs)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from cartotheca.db.base import Base, created_at, intpk, utcnow


class UploadSizeLimit(Base):
    """A size limit in bytes, looked up by slug (``dataset_upload_size`` ...).

    Only limits an administrator has set are rows; the defaults are built from the settings
    when no row overrides them, so a changed DEFAULT_MAX_UPLOAD_SIZE takes effect at once.
    """

    __tablename__ = "upload_size_limits"

    slug: Mapped[str] = mapped_column(String(255), primary_key=True)
    description: Mapped[str | None] = mapped_column(String(255))
    max_size: Mapped[int] = mapped_column(BigInteger)
    updated: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class UploadParallelismLimit(Base):
    """How many uploads one user may have under way at once, looked up by slug."""

    __tablename__ = "upload_parallelism_limits"

    slug: Mapped[str] = mapped_column(String(255), primary_key=True)
    description: Mapped[str | None] = mapped_column(String(255))
    max_number: Mapped[int] = mapped_column(Integer)
    updated: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class UploadSlot(Base):
    """An upload request being received (before its upload record exists).

    Counted with the open upload records against the parallelism limit, so simultaneous
    requests are seen by each other. A slot left by a crashed server expires.
    """

    __tablename__ = "upload_slots"

    id: Mapped[intpk]
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created: Mapped[created_at]
    expires: Mapped[dt.datetime]


class ManagementCommandJob(Base):
    """A request to run one management command (GeoNode's ManagementCommandJob).

    ``status`` keeps GeoNode's values (CREATED, QUEUED, STARTED, FINISHED); ``outcome`` says how
    a finished job ended (SUCCESS, FAILURE, REVOKED), which GeoNode reads from Celery's result.
    ``celery_result_id`` is the id of the execution that runs it.
    """

    __tablename__ = "management_command_jobs"
    __table_args__ = (
        Index("ix_management_command_jobs_created", "created_at", "id"),
        Index("ix_management_command_jobs_command", "command", "created_at"),
        Index("ix_management_command_jobs_status", "status", "created_at"),
    )

    id: Mapped[intpk]
    command: Mapped[str] = mapped_column(String(250))
    app_name: Mapped[str] = mapped_column(String(250))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(16), default="CREATED")
    outcome: Mapped[str | None] = mapped_column(String(16))
    created_at: Mapped[created_at]
    start_time: Mapped[dt.datetime | None]
    end_time: Mapped[dt.datetime | None]
    modified_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    args: Mapped[list[Any]] = mapped_column(default=list)
    kwargs: Mapped[dict[str, Any]] = mapped_column(default=dict)
    celery_result_id: Mapped[str | None] = mapped_column(String(36), index=True)
    output_message: Mapped[str | None] = mapped_column(Text)
    stop_requested: Mapped[dt.datetime | None]


__all__ = ["ManagementCommandJob", "UploadParallelismLimit", "UploadSizeLimit", "UploadSlot"]
