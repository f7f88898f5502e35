"""cartotheca.db.models.events: the notification outbox and its deliveries (one per channel and target)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from cartotheca.db.base import Base, created_at, intpk, utcnow


class Notice(Base):
    """One event worth telling people about, written in the transaction of the change itself.

    ``resource_id`` and ``actor_id`` carry no foreign key: a deleted resource's notice must
    survive the deletion it reports, and ``payload`` keeps what the messages need (title, type,
    detail path, actor name) as it was at the time. ``expanded`` is set by the one process that
    turned the notice into deliveries.
    """

    __tablename__ = "notification_outbox"
    __table_args__ = (Index("ix_notification_outbox_expanded", "expanded", "id"),)

    id: Mapped[intpk]
    kind: Mapped[str] = mapped_column(String(40))
    resource_id: Mapped[int | None] = mapped_column(Integer)
    group_id: Mapped[int | None] = mapped_column(Integer)
    owner_id: Mapped[int | None] = mapped_column(Integer)
    actor_id: Mapped[int | None] = mapped_column(Integer)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created: Mapped[created_at]
    expanded: Mapped[bool] = mapped_column(Boolean, default=False)


class Delivery(Base):
    """Sending one notice over one channel to one target (an e-mail address or a webhook URL).

    Each is claimed with a conditional UPDATE (status and lease), so several processes never
    send the same one twice, and retried on its own: a dead webhook never holds up an e-mail.
    ``status``: pending (due at ``next_attempt``), queued (e-mail kept for the periodic
    command), sending (claimed until ``claimed_until``), sent, failed (attempts exhausted).
    """

    __tablename__ = "notification_deliveries"
    __table_args__ = (
        UniqueConstraint("notice_id", "channel", "target"),
        Index("ix_notification_deliveries_due", "status", "next_attempt"),
    )

    id: Mapped[intpk]
    notice_id: Mapped[int] = mapped_column(ForeignKey("notification_outbox.id", ondelete="CASCADE"))
    channel: Mapped[str] = mapped_column(String(16))
    target: Mapped[str] = mapped_column(String(2048))
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt: Mapped[dt.datetime] = mapped_column(default=utcnow)
    claimed_until: Mapped[dt.datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    sent_at: Mapped[dt.datetime | None]
    created: Mapped[created_at]
