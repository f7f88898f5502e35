"""cartotheca.db.models.harvesting: harvesters, what they can harvest, and their sessions."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from cartotheca.db.base import Base, intpk, utcnow


class Harvester(Base):
    """A remote service whose resources are copied into this catalogue (GeoNode's Harvester).

    ``status`` is ``ready`` or the action running (``checking-availability``,
    ``updating-harvestable-resources``, ``harvesting-resources``) or being aborted. Starting an
    action is a conditional UPDATE from ``ready``, so two processes never start one twice. The
    ``last_*`` times drive the scheduler: an action is due when its frequency (minutes) has
    passed since it last started.
    """

    __tablename__ = "harvesters"

    id: Mapped[intpk]
    name: Mapped[str] = mapped_column(String(255), unique=True)
    remote_url: Mapped[str] = mapped_column(String(2048))
    harvester_type: Mapped[str] = mapped_column(String(64))
    harvester_type_specific_configuration: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[str] = mapped_column(String(64), default="ready")
    remote_available: Mapped[bool] = mapped_column(Boolean, default=False)
    scheduling_enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    harvesting_session_update_frequency: Mapped[int] = mapped_column(default=60)
    refresh_harvestable_resources_update_frequency: Mapped[int] = mapped_column(default=30)
    check_availability_frequency: Mapped[int] = mapped_column(default=30)
    default_owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"),
                                                  index=True)
    harvest_new_resources_by_default: Mapped[bool] = mapped_column(Boolean, default=False)
    delete_orphan_resources_automatically: Mapped[bool] = mapped_column(Boolean, default=False)
    last_checked_availability: Mapped[dt.datetime | None]
    last_checked_harvestable_resources: Mapped[dt.datetime | None]
    last_check_harvestable_resources_message: Mapped[str] = mapped_column(Text, default="")
    last_harvesting_started: Mapped[dt.datetime | None]
    last_updated: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class HarvestableResource(Base):
    """One resource the remote offers, whether it is to be harvested, and what it became here.

    ``remote_data`` keeps the remote's metadata as last listed; ``content_hash`` is its digest,
    so a harvest updates the local resource only when the remote changed.
    """

    __tablename__ = "harvestable_resources"
    __table_args__ = (
        UniqueConstraint("harvester_id", "unique_identifier"),
        Index("ix_harvestable_resources_harvester_title", "harvester_id", "title", "id"),
    )

    id: Mapped[intpk]
    harvester_id: Mapped[int] = mapped_column(ForeignKey("harvesters.id", ondelete="CASCADE"))
    unique_identifier: Mapped[str] = mapped_column(String(255))
    title: Mapped[str] = mapped_column(String(255))
    remote_resource_type: Mapped[str] = mapped_column(String(64))
    should_be_harvested: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(64), default="ready")
    remote_last_updated: Mapped[dt.datetime | None]
    remote_data: Mapped[dict[str, Any]] = mapped_column(default=dict)
    content_hash: Mapped[str | None] = mapped_column(String(64))
    harvested_hash: Mapped[str | None] = mapped_column(String(64))
    resource_id: Mapped[int | None] = mapped_column(
        ForeignKey("resources.id", ondelete="SET NULL"), index=True)
    last_harvested: Mapped[dt.datetime | None]
    last_harvesting_message: Mapped[str] = mapped_column(Text, default="")
    last_updated: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class HarvestingSession(Base):
    """One run of a harvester (GeoNode's AsynchronousHarvestingSession); counts grow as it runs."""

    __tablename__ = "harvesting_sessions"
    __table_args__ = (Index("ix_harvesting_sessions_harvester", "harvester_id", "id"),)

    id: Mapped[intpk]
    harvester_id: Mapped[int] = mapped_column(ForeignKey("harvesters.id", ondelete="CASCADE"))
    session_type: Mapped[str] = mapped_column(String(64), default="harvesting")
    status: Mapped[str] = mapped_column(String(32), default="pending")
    started: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    ended: Mapped[dt.datetime | None]
    total_records_to_process: Mapped[int] = mapped_column(default=0)
    records_done: Mapped[int] = mapped_column(default=0)
    session_details: Mapped[str] = mapped_column(Text, default="")


__all__ = ["HarvestableResource", "Harvester", "HarvestingSession"]
