"""cartotheca.db.models.resource_extras: what hangs off any resource: links, extra metadata, ratings."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Boolean, CheckConstraint, ForeignKey, Index, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from cartotheca.db.base import Base, created_at, intpk, utcnow


class LinkedResource(Base):
    """``source`` links to ``target`` (GeoNode's LinkedResource); ``internal`` links are made by
    the service itself (a map to its datasets), the others by users."""

    __tablename__ = "linked_resources"
    __table_args__ = (
        UniqueConstraint("source_id", "target_id"),
        Index("ix_linked_resources_target", "target_id", "source_id"),
    )

    id: Mapped[intpk]
    source_id: Mapped[int] = mapped_column(ForeignKey("resources.id", ondelete="CASCADE"))
    target_id: Mapped[int] = mapped_column(ForeignKey("resources.id", ondelete="CASCADE"))
    internal: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[created_at]


class ExtraMetadata(Base):
    """One free JSON item of a resource's extra metadata (validated against EXTRA_METADATA_SCHEMA)."""

    __tablename__ = "extra_metadata"

    id: Mapped[intpk]
    resource_id: Mapped[int] = mapped_column(
        ForeignKey("resources.id", ondelete="CASCADE"), index=True
    )
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata")
    created: Mapped[created_at]


class Rating(Base):
    """One user's rating (1 to 5) of a resource; a second rating by the same user replaces it."""

    __tablename__ = "ratings"
    __table_args__ = (
        UniqueConstraint("resource_id", "user_id"),
        CheckConstraint("rating BETWEEN 1 AND 5", name="range"),
    )

    id: Mapped[intpk]
    resource_id: Mapped[int] = mapped_column(ForeignKey("resources.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    rating: Mapped[int]
    created: Mapped[created_at]
    updated: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
