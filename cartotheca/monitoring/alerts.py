"""cartotheca.monitoring.alerts: evaluate notification checks and e-mail their receivers.

Checks are evaluated against the values of the latest collected period (GeoNode's "last
usable timestamp"). Without a scope, a check watches the overall rows: no resource, event
type ``all``, each service and label on its own. A check that cannot be evaluated becomes a
problem of its own rather than stopping the cycle.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cartotheca import mail, siteurl
from cartotheca.db.base import utcnow
from cartotheca.db.models import (
    MetricNotificationCheck,
    MetricValue,
    MonitoredResource,
    MonitoringMetric,
    NotificationCheck,
    NotificationMetricDefinition,
)
from cartotheca.monitoring import definitions as d
from cartotheca.monitoring.notifications import check_view
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.monitoring")
SEVERITY_ORDER = ("fatal", "error", "warning")


@dataclass
class Problem:
    name: str  # metric name
    severity: str
    message: str
    description: str
    offending_value: float | None
    threshold_value: float | None
    check_id: int
    spotted_at: dt.datetime
    valid_from: dt.datetime | None = None
    valid_to: dt.datetime | None = None


@dataclass
class CheckResult:
    check: NotificationCheck
    problems: list[Problem] = field(default_factory=list)


def health_level(results: list[CheckResult]) -> str:
    found = {p.severity for r in results for p in r.problems}
    return next((level for level in SEVERITY_ORDER if level in found), "ok")


def evaluate(session: Session, now: dt.datetime | None = None) -> list[CheckResult]:
    """The active checks that fail now, each with its problems."""
    now = now or utcnow()
    checks = {c.id: c for c in session.scalars(select(NotificationCheck).where(
        NotificationCheck.active.is_(True)).order_by(NotificationCheck.id))}
    if not checks:
        return []
    rows = session.execute(
        select(MetricNotificationCheck, MonitoringMetric, NotificationMetricDefinition.description)
        .join(MonitoringMetric, MonitoringMetric.id == MetricNotificationCheck.metric_id)
        .outerjoin(NotificationMetricDefinition,
                   NotificationMetricDefinition.id == MetricNotificationCheck.definition_id)
        .where(MetricNotificationCheck.check_id.in_(checks), MetricNotificationCheck.active.is_(True))
        .order_by(MetricNotificationCheck.id)).all()
    latest = session.scalar(select(func.max(MetricValue.valid_to)).where(
        MetricValue.metric_id.in_({m.id for _, m, _ in rows}))) if rows else None
    empty = session.scalar(select(MonitoredResource.id).where(
        MonitoredResource.type == "", MonitoredResource.name == ""))
    results: dict[int, CheckResult] = {}
    for mcheck, metric, text in rows:
        check = checks[mcheck.check_id]
        try:
            problems = _evaluate_one(session, check, mcheck, metric, text or "", latest, empty, now)
        except Exception as exc:  # reported with the check, as the spec asks
            log.warning("notification check %s could not be evaluated", check.id, exc_info=True)
            problems = [Problem(metric.name, check.severity, f"Check could not be evaluated: {exc}",
                                f"{type(exc).__name__}: {exc}", None, None, check.id, now)]
        if problems:
            results.setdefault(check.id, CheckResult(check)).problems.extend(problems)
    return list(results.values())


def _evaluate_one(session: Session, check: NotificationCheck, mcheck: MetricNotificationCheck,
                  metric: MonitoringMetric, text: str, latest: dt.datetime | None, empty: int | None,
                  now: dt.datetime) -> list[Problem]:
    scope = [MetricValue.metric_id == metric.id,
             MetricValue.resource_id == (mcheck.resource_id or empty),
             MetricValue.event_type == (mcheck.event_type or d.EVENT_ALL)]
    if mcheck.service_id:
        scope.append(MetricValue.service_id == mcheck.service_id)
    if mcheck.label_id:
        scope.append(MetricValue.label_id == mcheck.label_id)
    report = _reporter(check, metric, text, now)
    if mcheck.max_timeout is not None:
        last = session.scalar(select(func.max(MetricValue.valid_to)).where(*scope))
        age = (now - last).total_seconds() if last else None
        if age is None or age > mcheck.max_timeout:
            return [report("max_timeout", age, float(mcheck.max_timeout), last, last)]
        return []
    if latest is None:
        return []
    values = session.execute(select(MetricValue.value_num, MetricValue.valid_from, MetricValue.valid_to)
                             .where(*scope, MetricValue.valid_from < latest,
                                    MetricValue.valid_to >= latest)).all()
    if not values and metric.metric_type == d.COUNT:
        values = [(0.0, None, latest)]  # nothing counted is a count of zero
    problems = []
    for value, valid_from, valid_to in values:
        if mcheck.min_value is not None and value < mcheck.min_value:
            problems.append(report("min_value", value, mcheck.min_value, valid_from, valid_to))
        if mcheck.max_value is not None and value > mcheck.max_value:
            problems.append(report("max_value", value, mcheck.max_value, valid_from, valid_to))
    return problems


def _reporter(check: NotificationCheck, metric: MonitoringMetric, text: str,
              now: dt.datetime) -> Callable[..., Problem]:
    unit = "" if metric.metric_type == d.COUNT else f" {metric.unit}"
    what = metric.description or metric.name

    def report(option: str, value: float | None, threshold: float, valid_from, valid_to) -> Problem:
        if option == "max_timeout":
            got = "no value at all" if value is None else f"the last one {value:.0f} s ago"
            description = f"{what} should be collected at most {threshold:.0f} s ago, got {got}"
            message = f"{text} {threshold:.0f} s".strip()
        else:
            bound = "at least" if option == "min_value" else "at most"
            description = f"{what} should be {bound} {threshold:g}{unit}, got {value:.4g}{unit} instead"
            message = f"{text} {threshold:g}{unit}".strip()
        return Problem(metric.name, check.severity, message, description, value, threshold, check.id,
                       now, valid_from, valid_to)

    return report


# -- delivery -------------------------------------------------------------------------------

def can_send(check: NotificationCheck, now: dt.datetime) -> bool:
    return check.last_send is None or check.last_send + dt.timedelta(seconds=check.grace_period) <= now


def run(sessions: Callable[[], Session], settings: Settings, now: dt.datetime) -> tuple[
        list[CheckResult], list[int]]:
    """Evaluate after a collection cycle; e-mail the receivers of failing checks whose last
    delivery is older than their grace period. Returns the results and the checks mailed."""
    mailed = []
    with sessions() as session:
        results = evaluate(session, now)
        for result in results:
            if not can_send(result.check, now):
                continue
            recipients = check_view(session, result.check).emails
            if not recipients:
                continue
            try:
                mail.send(settings, subject(settings, result.check), body(settings, result, now), recipients)
            except Exception:
                log.warning("alert of check %s not delivered", result.check.id, exc_info=True)
                continue
            result.check.last_send = now
            mailed.append(result.check.id)
        session.commit()
    return results, mailed


def subject(settings: Settings, check: NotificationCheck) -> str:
    return f"Cartotheca monitoring on {siteurl.url(settings)} reports errors: {check.severity}: {check.name}"


def body(settings: Settings, result: CheckResult, now: dt.datetime) -> str:
    lines = [f"Monitoring of {siteurl.url(settings)} found problems at {now:%Y-%m-%d %H:%M:%S} UTC.", "",
             f"Check: {result.check.name} ({result.check.severity})", result.check.description, ""]
    for p in result.problems:
        lines += [f"- {p.name}: {p.description}", f"  {p.message}",
                  f"  offending value: {p.offending_value}, threshold: {p.threshold_value}"]
    lines += ["", f"Configure this check: {siteurl.base(settings)}/monitoring/api/notifications/config/"
                  f"{result.check.id}/"]
    return "\n".join(lines) + "\n"
