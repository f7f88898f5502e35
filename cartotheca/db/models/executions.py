"""cartotheca.db.models.executions: asynchronous execution requests (the engine's one table)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from cartotheca.db.base import Base, created_at, intpk, new_uuid, utcnow


class ExecutionRequest(Base):
    """One asynchronous operation: who asked, what, its inputs, outputs and status.

    ``heartbeat`` is refreshed while a worker runs it; a running row whose heartbeat is stale
    belonged to a worker that died, and is retried once or failed (engine.recover).
    """

    __tablename__ = "execution_requests"
    __table_args__ = (
        Index("ix_execution_requests_status", "status", "created"),
        Index("ix_execution_requests_user", "user_id", "created"),
    )

    id: Mapped[intpk]
    exec_id: Mapped[str] = mapped_column(String(36), unique=True, default=new_uuid)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    status: Mapped[str] = mapped_column(String(16), default="ready")
    func_name: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(32), default="unknown")
    source: Mapped[str | None] = mapped_column(String(64))
    name: Mapped[str | None] = mapped_column(String(255))
    step: Mapped[str | None] = mapped_column(String(255))
    log: Mapped[str | None] = mapped_column(Text)
    input_params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    output_params: Mapped[dict[str, Any]] = mapped_column(default=dict)
    resource_id: Mapped[int | None] = mapped_column(
        ForeignKey("resources.id", ondelete="SET NULL"), index=True
    )
    attempts: Mapped[int] = mapped_column(default=0)
    worker: Mapped[str | None] = mapped_column(String(255))
    heartbeat: Mapped[dt.datetime | None]
    created: Mapped[created_at]
    finished: Mapped[dt.datetime | None]
    last_updated: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
