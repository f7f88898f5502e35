"""cartotheca.db.models.monitoring: monitored hosts and services, request events, metric values,
captured exceptions and threshold notification checks.

Every foreign key cascades: removing a service removes what was measured for it, so cleaning
up (or a test wiping the tables) never trips over rows a collector wrote a moment earlier.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import BigInteger, Boolean, Float, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from cartotheca.db.base import Base, intpk, utcnow


class MonitoringHost(Base):
    """A machine the services run on."""

    __tablename__ = "monitoring_hosts"

    id: Mapped[intpk]
    name: Mapped[str] = mapped_column(String(255), unique=True)
    ip: Mapped[str] = mapped_column(String(64), default="127.0.0.1")
    active: Mapped[bool] = mapped_column(Boolean, default=True)


class MonitoredService(Base):
    """A monitored process: ``core`` (catalogue), ``mapserver`` (OWS), ``hostcore`` (its host)."""

    __tablename__ = "monitoring_services"

    id: Mapped[intpk]
    name: Mapped[str] = mapped_column(String(255), unique=True)
    service_type: Mapped[str] = mapped_column(String(32))
    host_id: Mapped[int] = mapped_column(ForeignKey("monitoring_hosts.id", ondelete="CASCADE"))
    check_interval: Mapped[int] = mapped_column(default=60)  # seconds; the collection period
    last_check: Mapped[dt.datetime | None]
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    url: Mapped[str | None] = mapped_column(String(1024))
    notes: Mapped[str | None] = mapped_column(Text)


class MonitoringMetric(Base):
    """A metric; ``metric_type`` (count, value, rate, value_numeric) says how values aggregate."""

    __tablename__ = "monitoring_metrics"

    id: Mapped[intpk]
    name: Mapped[str] = mapped_column(String(64), unique=True)
    metric_type: Mapped[str] = mapped_column(String(16))
    unit: Mapped[str] = mapped_column(String(16), default="Count")
    description: Mapped[str] = mapped_column(String(255), default="")


class MonitoredResource(Base):
    """What a request concerned, by type and name; the empty pair stands for "no resource".

    The real resource is not checked or followed: renames and copies are not tracked.
    """

    __tablename__ = "monitoring_resources"
    __table_args__ = (UniqueConstraint("type", "name"),)

    id: Mapped[intpk]
    type: Mapped[str] = mapped_column(String(32), default="")
    name: Mapped[str] = mapped_column(String(255), default="")
    resource_id: Mapped[int | None]  # the catalogue resource's id when known (not a foreign key)


class MetricLabel(Base):
    """A label value (user tracking id, path, method, status, user agent, mount point ...)."""

    __tablename__ = "monitoring_labels"

    id: Mapped[intpk]
    name: Mapped[str] = mapped_column(String(255), unique=True)
    user: Mapped[str | None] = mapped_column(String(150))  # user name behind a tracking id


class RequestEvent(Base):
    """One captured request, kept until aggregated and for the exceptions that refer to it."""

    __tablename__ = "monitoring_request_events"
    __table_args__ = (Index("ix_monitoring_request_events_service_received", "service_id", "received"),)

    id: Mapped[intpk]
    created: Mapped[dt.datetime]  # request start
    received: Mapped[dt.datetime]  # response end; periods are counted by this time
    service_id: Mapped[int] = mapped_column(ForeignKey("monitoring_services.id", ondelete="CASCADE"))
    event_type: Mapped[str | None] = mapped_column(String(32))
    secondary_event_type: Mapped[str | None] = mapped_column(String(32))
    host: Mapped[str] = mapped_column(String(255), default="")
    request_path: Mapped[str] = mapped_column(Text, default="")
    request_method: Mapped[str] = mapped_column(String(16))
    response_status: Mapped[int]
    response_size: Mapped[int] = mapped_column(BigInteger, default=0)
    response_time: Mapped[float] = mapped_column(Float, default=0.0)  # milliseconds
    response_type: Mapped[str | None] = mapped_column(String(255))
    user_agent: Mapped[str | None] = mapped_column(String(255))
    user_agent_family: Mapped[str | None] = mapped_column(String(255))
    client_ip: Mapped[str | None] = mapped_column(String(64))
    user_identifier: Mapped[str | None] = mapped_column(String(64))
    user_username: Mapped[str | None] = mapped_column(String(150))
    # [{"type": "layer", "name": "geonode:roads", "resource_id": 12}, ...]
    resources: Mapped[list[Any]] = mapped_column(default=list)


class ExceptionEvent(Base):
    """A server error: class, message, stack trace, and the request it broke."""

    __tablename__ = "monitoring_exceptions"

    id: Mapped[intpk]
    created: Mapped[dt.datetime] = mapped_column(index=True)
    received: Mapped[dt.datetime] = mapped_column(default=utcnow)
    service_id: Mapped[int] = mapped_column(ForeignKey("monitoring_services.id", ondelete="CASCADE"))
    error_type: Mapped[str] = mapped_column(String(255), index=True)
    error_message: Mapped[str] = mapped_column(Text, default="")
    error_data: Mapped[str] = mapped_column(Text, default="")
    request_id: Mapped[int] = mapped_column(
        ForeignKey("monitoring_request_events.id", ondelete="CASCADE"), index=True
    )


class MetricValue(Base):
    """One metric's aggregate for one fixed period, service, event type, resource and label."""

    __tablename__ = "monitoring_metric_values"
    __table_args__ = (
        UniqueConstraint("valid_from", "valid_to", "service_id", "metric_id", "event_type",
                         "resource_id", "label_id"),
        Index("ix_monitoring_metric_values_metric_period", "metric_id", "valid_from"),
        Index("ix_monitoring_metric_values_valid_to", "valid_to"),
    )

    id: Mapped[intpk]
    valid_from: Mapped[dt.datetime]
    valid_to: Mapped[dt.datetime]
    service_id: Mapped[int] = mapped_column(ForeignKey("monitoring_services.id", ondelete="CASCADE"))
    metric_id: Mapped[int] = mapped_column(ForeignKey("monitoring_metrics.id", ondelete="CASCADE"))
    event_type: Mapped[str] = mapped_column(String(32))
    resource_id: Mapped[int] = mapped_column(
        ForeignKey("monitoring_resources.id", ondelete="CASCADE"), index=True
    )
    label_id: Mapped[int] = mapped_column(ForeignKey("monitoring_labels.id", ondelete="CASCADE"), index=True)
    value: Mapped[str] = mapped_column(String(255), default="")
    value_num: Mapped[float] = mapped_column(Float, default=0.0)
    samples_count: Mapped[int] = mapped_column(default=0)


class CollectionClaim(Base):
    """Marks one service period as collected: the unique key makes a period collected once,
    whichever of several processes (or Celery beats) gets there first."""

    __tablename__ = "monitoring_collections"
    __table_args__ = (UniqueConstraint("service_id", "valid_from", "valid_to"),)

    id: Mapped[intpk]
    service_id: Mapped[int] = mapped_column(ForeignKey("monitoring_services.id", ondelete="CASCADE"))
    valid_from: Mapped[dt.datetime]
    valid_to: Mapped[dt.datetime] = mapped_column(index=True)
    collected_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    collector: Mapped[str] = mapped_column(String(255), default="")


class NotificationCheck(Base):
    """A named alert: general description, grace period, last delivery and its receivers."""

    __tablename__ = "monitoring_notification_checks"

    id: Mapped[intpk]
    name: Mapped[str] = mapped_column(String(255), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    # {"<metric>.<option>": {"metric", "description", "min", "max", "steps"}}
    user_threshold: Mapped[dict[str, Any]] = mapped_column(default=dict)
    last_send: Mapped[dt.datetime | None]
    grace_period: Mapped[int] = mapped_column(default=600)  # seconds between two deliveries
    severity: Mapped[str] = mapped_column(String(16), default="error")
    active: Mapped[bool] = mapped_column(Boolean, default=True)


class NotificationReceiver(Base):
    __tablename__ = "monitoring_notification_receivers"

    id: Mapped[intpk]
    check_id: Mapped[int] = mapped_column(
        ForeignKey("monitoring_notification_checks.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    email: Mapped[str | None] = mapped_column(String(254))


class NotificationMetricDefinition(Base):
    """What a user may configure for one metric of a check: option, allowed range, steps."""

    __tablename__ = "monitoring_notification_definitions"
    __table_args__ = (UniqueConstraint("check_id", "metric_id", "field_option"),)

    id: Mapped[intpk]
    check_id: Mapped[int] = mapped_column(ForeignKey("monitoring_notification_checks.id", ondelete="CASCADE"))
    metric_id: Mapped[int] = mapped_column(ForeignKey("monitoring_metrics.id", ondelete="CASCADE"))
    field_option: Mapped[str] = mapped_column(String(16))  # min_value | max_value | max_timeout
    description: Mapped[str] = mapped_column(Text, default="")
    use_service: Mapped[bool] = mapped_column(Boolean, default=False)
    use_resource: Mapped[bool] = mapped_column(Boolean, default=False)
    use_label: Mapped[bool] = mapped_column(Boolean, default=False)
    use_event_type: Mapped[bool] = mapped_column(Boolean, default=False)
    min_value: Mapped[float | None] = mapped_column(Float)
    max_value: Mapped[float | None] = mapped_column(Float)
    steps: Mapped[int | None]


class MetricNotificationCheck(Base):
    """The threshold a user submitted for one definition, optionally scoped."""

    __tablename__ = "monitoring_metric_checks"

    id: Mapped[intpk]
    check_id: Mapped[int] = mapped_column(
        ForeignKey("monitoring_notification_checks.id", ondelete="CASCADE"), index=True
    )
    metric_id: Mapped[int] = mapped_column(ForeignKey("monitoring_metrics.id", ondelete="CASCADE"))
    definition_id: Mapped[int | None] = mapped_column(
        ForeignKey("monitoring_notification_definitions.id", ondelete="CASCADE"), unique=True
    )
    service_id: Mapped[int | None] = mapped_column(ForeignKey("monitoring_services.id", ondelete="CASCADE"))
    resource_id: Mapped[int | None] = mapped_column(
        ForeignKey("monitoring_resources.id", ondelete="CASCADE")
    )
    label_id: Mapped[int | None] = mapped_column(ForeignKey("monitoring_labels.id", ondelete="CASCADE"))
    event_type: Mapped[str | None] = mapped_column(String(32))
    min_value: Mapped[float | None] = mapped_column(Float)
    max_value: Mapped[float | None] = mapped_column(Float)
    max_timeout: Mapped[int | None]  # seconds
    active: Mapped[bool] = mapped_column(Boolean, default=True)
