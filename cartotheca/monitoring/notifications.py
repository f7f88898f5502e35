"""cartotheca.monitoring.notifications: notification checks, their definitions and the user form.

A check has three layers (GeoNode's): the check itself (description, grace period, receivers),
per-metric definitions (what may be configured: option, allowed range, steps, scope flags),
and the thresholds users submitted through the form (metric checks). Evaluation is in
``alerts``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from cartotheca.db.models import (
    MetricNotificationCheck,
    MonitoringMetric,
    NotificationCheck,
    NotificationMetricDefinition,
    NotificationReceiver,
    User,
)
from cartotheca.monitoring import definitions as d
from cartotheca.monitoring.validation import Form, MissingObject, to_number
from cartotheca.settings import Settings

ITEM_FIELDS = ("metric name", "field option", "can use service", "can use resource", "can use label",
               "can use OWS service", "minimum", "maximum", "steps", "description")


@dataclass
class FormField:
    """One configurable threshold of a check, as the configuration form shows it."""

    definition: NotificationMetricDefinition
    metric: MonitoringMetric
    check: NotificationCheck
    current: MetricNotificationCheck | None

    @property
    def name(self) -> str:
        return field_name(self.metric.name, self.definition.field_option)

    @property
    def steps(self) -> list[float] | None:
        return steps_between(self.definition.min_value, self.definition.max_value, self.definition.steps)

    @property
    def current_value(self) -> float | int | None:
        if self.current is None:
            return None
        return getattr(self.current, self.definition.field_option)

    @property
    def unit(self) -> str:
        return "" if self.metric.metric_type == d.COUNT else self.metric.unit


@dataclass
class Receiver:
    id: int
    user_id: int | None
    username: str | None
    email: str | None  # a user receiver's current address


@dataclass
class CheckView:
    check: NotificationCheck
    receivers: list[Receiver]

    @property
    def emails(self) -> list[str]:
        return [r.email for r in self.receivers if r.email]


def field_name(metric: str, option: str) -> str:
    return f"{metric}.{option}"


def steps_between(minimum: float | None, maximum: float | None, steps: int | None) -> list[float] | None:
    """``steps`` values from ``minimum`` towards ``maximum`` (GeoNode leaves the maximum out)."""
    if not steps or minimum is None or maximum is None or maximum <= minimum:
        return None
    size = (maximum - minimum) / steps
    return [minimum + i * size for i in range(steps)]


# -- creation -------------------------------------------------------------------------------

def create_check(session: Session, settings: Settings, data: Mapping[str, Any]) -> NotificationCheck:
    """A check from the creation payload (name, description, severity, emails, user_thresholds)."""
    form = Form(data)
    name = form.text("name", required=True, max_length=255)
    description = form.text("description", required=True)
    severity = form.choice("severity", d.SEVERITIES, default="error")
    emails = form.emails("emails") or []
    grace = form.duration("grace_period")
    metrics = {m.name: m for m in session.scalars(select(MonitoringMetric))}
    items = _thresholds(form, metrics)
    if name and session.scalar(select(NotificationCheck.id).where(NotificationCheck.name == name)):
        form.error("name", "Notification check with this Name already exists.")
    form.check()
    check = NotificationCheck(name=name, description=description, severity=severity, active=True,
                              grace_period=settings.MONITORING_NOTIFICATION_GRACE_PERIOD
                              if grace is None else grace, user_threshold={})
    session.add(check)
    session.flush()
    thresholds = {}
    for metric, option, service, resource, label, ows, low, high, steps, text in items:
        session.add(NotificationMetricDefinition(
            check_id=check.id, metric_id=metrics[metric].id, field_option=option, description=text,
            use_service=service, use_resource=resource, use_label=label, use_event_type=ows,
            min_value=low, max_value=high, steps=steps))
        thresholds[field_name(metric, option)] = {"metric": metric, "description": text, "min": low,
                                                  "max": high, "steps": steps}
    check.user_threshold = thresholds
    set_receivers(session, check, emails)
    session.flush()
    return check


def _thresholds(form: Form, metrics: dict[str, MonitoringMetric]) -> list[tuple]:
    raw = form.raw("user_thresholds")
    if raw is None or raw == "":
        form.error("user_thresholds", "This field is required.")
        return []
    if isinstance(raw, (str, bytes)):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError:
            form.error("user_thresholds", "Enter a valid JSON.")
            return []
    if not isinstance(raw, list) or not raw:
        form.error("user_thresholds", "Expected a non-empty list of 10-item lists.")
        return []
    items, seen = [], set()
    for index, item in enumerate(raw, 1):
        problem = _threshold_problem(item, metrics)
        if problem is None and (item[0], item[1]) in seen:
            problem = f"{item[0]}.{item[1]} is given twice"
        if problem:
            form.error("user_thresholds", f"Item {index}: {problem}.")
            continue
        seen.add((item[0], item[1]))
        low, high = to_number(item[6]) if item[6] is not None else None, \
            to_number(item[7]) if item[7] is not None else None
        items.append((item[0], item[1], *(bool(v) for v in item[2:6]), low, high, item[8],
                      str(item[9] or "")))
    return items


def _threshold_problem(item: Any, metrics: dict[str, MonitoringMetric]) -> str | None:
    if not isinstance(item, list) or len(item) != 10:
        return "expected a list of 10 values (" + ", ".join(ITEM_FIELDS) + ")"
    metric, option, *flags = item[:6]
    if metric not in metrics:
        return f"unknown metric {metric!r}"
    if option not in d.FIELD_OPTIONS:
        return f"field option must be one of {', '.join(d.FIELD_OPTIONS)}, not {option!r}"
    if any(not isinstance(flag, (bool, int)) or isinstance(flag, float) for flag in flags):
        return "the four 'can use' values must be booleans"
    for position in (6, 7):
        if item[position] is not None and to_number(item[position]) is None:
            return f"{ITEM_FIELDS[position]} must be a number or null"
    if item[6] is not None and item[7] is not None and to_number(item[6]) > to_number(item[7]):
        return "minimum is greater than maximum"
    steps = item[8]
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        return "steps must be a positive integer or null"
    if item[9] is not None and not isinstance(item[9], str):
        return "description must be a string"
    return None


def set_receivers(session: Session, check: NotificationCheck, emails: list[str]) -> None:
    """Replace the receivers: addresses of registered users become those users."""
    session.execute(delete(NotificationReceiver).where(NotificationReceiver.check_id == check.id))
    lowered = [e.lower() for e in emails]
    users = dict(session.execute(select(func.lower(User.email), User.id).where(
        func.lower(User.email).in_(lowered), User.is_active.is_(True))).all()) if emails else {}
    for email in emails:
        user_id = users.get(email.lower())
        session.add(NotificationReceiver(check_id=check.id, user_id=user_id,
                                         email=None if user_id else email))


# -- reading --------------------------------------------------------------------------------

def get_check(session: Session, check_id: int) -> NotificationCheck:
    check = session.get(NotificationCheck, check_id)
    if check is None:
        raise MissingObject("notification_id", f"Notification check {check_id} does not exist")
    return check


def check_view(session: Session, check: NotificationCheck) -> CheckView:
    rows = session.execute(
        select(NotificationReceiver.id, NotificationReceiver.user_id, User.username,
               func.coalesce(User.email, NotificationReceiver.email))
        .outerjoin(User, User.id == NotificationReceiver.user_id)
        .where(NotificationReceiver.check_id == check.id).order_by(NotificationReceiver.id)).all()
    return CheckView(check, [Receiver(*row) for row in rows])


def list_checks(session: Session) -> list[NotificationCheck]:
    return list(session.scalars(select(NotificationCheck).order_by(NotificationCheck.id)))


def form_fields(session: Session, check: NotificationCheck) -> list[FormField]:
    rows = session.execute(
        select(NotificationMetricDefinition, MonitoringMetric)
        .join(MonitoringMetric, MonitoringMetric.id == NotificationMetricDefinition.metric_id)
        .where(NotificationMetricDefinition.check_id == check.id)
        .order_by(NotificationMetricDefinition.id)).all()
    current = {c.definition_id: c for c in session.scalars(
        select(MetricNotificationCheck).where(MetricNotificationCheck.check_id == check.id))}
    return [FormField(definition, metric, check, current.get(definition.id)) for definition, metric in rows]


# -- the user form --------------------------------------------------------------------------

def configure_check(session: Session, check: NotificationCheck, data: Mapping[str, Any]) -> None:
    """Apply the configuration form: thresholds per enabled field, receivers, severity,
    active, grace period. The thresholds posted replace the previous ones (a form is whole)."""
    form = Form(data)
    fields = form_fields(session, check)
    values = {f.definition.id: _field_value(form, f) for f in fields if form.given(f.name)}
    emails = form.emails("emails")
    severity = form.choice("severity", d.SEVERITIES)
    active = form.boolean("active")
    grace = form.duration("grace_period")
    form.check()
    session.execute(delete(MetricNotificationCheck).where(MetricNotificationCheck.check_id == check.id))
    for f in fields:
        if values.get(f.definition.id) is not None:
            session.add(MetricNotificationCheck(
                check_id=check.id, metric_id=f.metric.id, definition_id=f.definition.id,
                **{f.definition.field_option: values[f.definition.id]}))
    if emails is not None:
        set_receivers(session, check, emails)
    if severity is not None:
        check.severity = severity
    if active is not None:  # an API client leaving ``active`` out leaves it as it was
        check.active = active
    if grace is not None:
        check.grace_period = grace
    session.flush()


def _field_value(form: Form, f: FormField) -> float | int | None:
    if f.definition.field_option == "max_timeout":
        return form.duration(f.name)
    value = form.number(f.name, minimum=f.definition.min_value, maximum=f.definition.max_value)
    steps = f.steps
    if value is not None and steps and not any(abs(value - s) <= 1e-9 * max(1.0, abs(s)) for s in steps):
        form.error(f.name, f"Select a valid choice. {form.raw(f.name)} is not one of the available choices.")
    return value
