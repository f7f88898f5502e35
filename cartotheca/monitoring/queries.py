"""cartotheca.monitoring.queries: hosts, services, resources, labels, metrics and metric_data.

``metric_data`` reads the stored values of the periods a window touches in one statement,
grouped by collected period, then folds them into the requested (aligned) intervals in
Python: one query whatever the number of intervals.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from cartotheca.db.base import utcnow
from cartotheca.db.models import (
    MetricLabel,
    MetricValue,
    MonitoredResource,
    MonitoredService,
    MonitoringHost,
    MonitoringMetric,
)
from cartotheca.monitoring import definitions as d
from cartotheca.monitoring.periods import periods
from cartotheca.monitoring.validation import MAX_DURATION_SECONDS, Form, MissingObject

GROUP_BY = ("resource", "resource_no_labels", "resource_no_label", "label", "event_type",
            "event_type_on_label")
BY_RESOURCE = ("resource", "resource_no_labels", "resource_no_label")
BY_EVENT_TYPE = ("event_type", "event_type_on_label")
DAY = 86400
MAX_PERIODS = 10000


# -- lists ----------------------------------------------------------------------------------

def hosts(session: Session) -> list[MonitoringHost]:
    return list(session.scalars(select(MonitoringHost).where(MonitoringHost.active.is_(True))
                                .order_by(MonitoringHost.id)))


def services(session: Session) -> list[tuple[MonitoredService, str]]:
    return list(session.execute(
        select(MonitoredService, MonitoringHost.name)
        .join(MonitoringHost, MonitoringHost.id == MonitoredService.host_id)
        .where(MonitoredService.active.is_(True)).order_by(MonitoredService.id)).all())


def metrics(session: Session) -> list[tuple[str, list[MonitoringMetric]]]:
    """Each service type with its metrics."""
    rows = {m.name: m for m in session.scalars(select(MonitoringMetric))}
    return [(service_type, [rows[n] for n in names if n in rows])
            for service_type, names in d.METRICS_OF_SERVICE_TYPE.items()]


def event_types(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    form = Form(params)
    ows = form.boolean("ows_service")
    form.check()
    return [(name, label) for name, label in d.EVENT_TYPES.items()
            if ows is None or d.is_ows(name) == ows]


def resources(session: Session, params: Mapping[str, Any]) -> list[MonitoredResource]:
    form = Form(params)
    resource_type = form.choice("resource_type", d.RESOURCE_TYPES)
    stmt = _values_in_window(session, form, select(MonitoredResource).distinct()
                             .join(MetricValue, MetricValue.resource_id == MonitoredResource.id))
    stmt = stmt.where(MonitoredResource.type != "")
    if resource_type is not None:
        stmt = stmt.where(MonitoredResource.type == resource_type)
    return list(session.scalars(stmt.order_by(MonitoredResource.id)))


def labels(session: Session, params: Mapping[str, Any]) -> list[MetricLabel]:
    form = Form(params)
    stmt = _values_in_window(session, form, select(MetricLabel).distinct()
                             .join(MetricValue, MetricValue.label_id == MetricLabel.id))
    return list(session.scalars(stmt.order_by(MetricLabel.id)))


def _values_in_window(session: Session, form: Form, stmt: Select) -> Select:
    """Restrict a join on metric values by ``metric_name`` and the time window."""
    name = form.text("metric_name")
    metric = session.scalar(select(MonitoringMetric).where(MonitoringMetric.name == name)) if name else None
    if name and metric is None:
        form.error("metric_name", f"Metric {name} doesn't exist")
    valid_from, valid_to, last = form.timestamp("valid_from"), form.timestamp("valid_to"), \
        form.integer("last", minimum=60, maximum=MAX_DURATION_SECONDS)
    if last and (valid_from or valid_to):
        form.error("__all__", "Cannot use last and valid_from/valid_to at the same time")
    form.check()
    if last:
        valid_from = utcnow() - dt.timedelta(seconds=last)
    if metric is not None:
        stmt = stmt.where(MetricValue.metric_id == metric.id)
    if valid_from is not None:
        stmt = stmt.where(MetricValue.valid_from >= valid_from)
    if valid_to is not None:
        stmt = stmt.where(MetricValue.valid_to <= valid_to)
    return stmt


# -- metric data ----------------------------------------------------------------------------

@dataclass
class Query:
    metric: MonitoringMetric
    valid_from: dt.datetime
    valid_to: dt.datetime
    interval: int
    group_by: str | None = None
    label: MetricLabel | None = None
    resource: MonitoredResource | None = None
    service: MonitoredService | None = None
    event_type: str | None = None
    resource_type: str | None = None


@dataclass
class Row:
    """One output row; ``distinct`` rows count unique labels instead of aggregating values."""

    label: str | None = None
    resource: MonitoredResource | None = None
    event_type: str | None = None
    distinct: set[str] = field(default_factory=set)
    counts_labels: bool = False
    total: float = 0.0
    weighted: float = 0.0
    minimum: float | None = None
    maximum: float | None = None
    samples: int = 0
    metric_count: int = 0

    def add(self, label: str, total: float, low: float, high: float, count: int, samples: int,
            weighted: float) -> None:
        self.distinct.add(label)
        self.total += total
        self.weighted += weighted
        self.minimum = low if self.minimum is None else min(self.minimum, low)
        self.maximum = high if self.maximum is None else max(self.maximum, high)
        self.metric_count += count
        self.samples += samples

    def value(self, metric_type: str) -> float | int:
        if self.counts_labels:
            return len(self.distinct)
        if metric_type == d.RATE:
            return self.weighted / self.samples if self.samples else 0.0
        if metric_type == d.VALUE_NUMERIC:
            return self.maximum or 0.0
        return self.total


@dataclass
class MetricData:
    query: Query
    periods: list[tuple[dt.datetime, dt.datetime, list[Row]]]


def parse_metric_query(session: Session, metric_name: str, params: Mapping[str, Any],
                       now: dt.datetime | None = None) -> Query:
    metric = session.scalar(select(MonitoringMetric).where(MonitoringMetric.name == metric_name))
    if metric is None:
        raise MissingObject("metric_name", f"Metric {metric_name} doesn't exist")
    form = Form(params)
    valid_from, valid_to = form.timestamp("valid_from"), form.timestamp("valid_to")
    last = form.integer("last", minimum=60, maximum=MAX_DURATION_SECONDS)
    interval = form.integer("interval", minimum=60, maximum=MAX_DURATION_SECONDS)
    group_by = form.choice("group_by", GROUP_BY)
    resource_type = form.choice("resource_type", d.RESOURCE_TYPES)
    event_type = form.choice("event_type", d.EVENT_TYPES)
    query = Query(metric, valid_from, valid_to, interval or 60, group_by, event_type=event_type,
                  resource_type=resource_type, label=_label(session, form),
                  resource=_resource(session, form), service=_service(session, form))
    if last and (valid_from or valid_to):
        form.error("__all__", "Cannot use last and valid_from/valid_to at the same time")
    if query.resource is not None and group_by in BY_RESOURCE:
        form.error("resource", "Cannot use resource and group by resource at the same time")
    form.check()
    _window(form, query, last, interval, now or utcnow())
    form.check()
    return query


def _window(form: Form, query: Query, last: int | None, interval: int | None, now: dt.datetime) -> None:
    if last:
        query.valid_from, query.valid_to = now - dt.timedelta(seconds=last), now
    query.valid_to = query.valid_to or now
    query.valid_from = query.valid_from or query.valid_to - dt.timedelta(seconds=interval or 60)
    if interval is None and (query.valid_to - query.valid_from).total_seconds() > DAY:
        query.interval = 3600  # GeoNode's default for windows longer than a day
    if query.valid_from > query.valid_to:
        form.error("valid_from", "valid_from must not be later than valid_to")
    elif (query.valid_to - query.valid_from).total_seconds() / query.interval > MAX_PERIODS:
        form.error("interval", f"The window holds more than {MAX_PERIODS} intervals; use a longer one.")


def _label(session: Session, form: Form) -> MetricLabel | None:
    value = form.text("label")
    if value is None:
        return None
    found = session.scalar(select(MetricLabel).where(MetricLabel.name == value))
    if found is None and value.isdigit():
        found = session.get(MetricLabel, int(value))
    if found is None:
        form.error("label", f"Invalid label value: {value}")
    return found


def _resource(session: Session, form: Form) -> MonitoredResource | None:
    """A monitored resource by id, or as ``type=name``."""
    value = form.text("resource")
    if value is None:
        return None
    if value.isdigit():
        found = session.get(MonitoredResource, int(value))
    elif "=" in value:
        rtype, _, name = value.partition("=")
        found = session.scalar(select(MonitoredResource).where(
            MonitoredResource.type == rtype, MonitoredResource.name == name))
    else:
        form.error("resource", f"{value} is not valid resource description")
        return None
    if found is None:
        form.error("resource", f"Resource {value} does not exist")
    return found


def _service(session: Session, form: Form) -> MonitoredService | None:
    value = form.text("service")
    if value is None:
        return None
    found = session.scalar(select(MonitoredService).where(MonitoredService.name == value))
    if found is None:
        form.error("service", f"Service {value} does not exist")
    return found


def metric_data(session: Session, query: Query) -> MetricData:
    spans = list(periods(query.valid_from, query.valid_to, query.interval))
    start, end = spans[0][0], spans[-1][1]
    buckets: list[dict[tuple, Row]] = [defaultdict(Row) for _ in spans]
    resources: dict[int, MonitoredResource] = {}
    width = len(_group_columns(query))
    by_label = query.group_by in (None, "resource")
    for record in session.execute(_statement(session, query, start, end)):
        index = int((record[0] - start).total_seconds()) // query.interval
        if not 0 <= index < len(spans):
            continue
        groups, label = tuple(record[1:1 + width]), record[1 + width]
        row = buckets[index][groups + ((label,) if by_label else ())]
        if not row.metric_count:
            _describe_row(row, query, groups, label, resources, session)
        row.add(label, *record[2 + width:])
    out = []
    for (period_start, period_end), rows in zip(spans, buckets, strict=True):
        ordered = sorted(rows.values(), key=lambda r: (-r.value(query.metric.metric_type), r.label or ""))
        out.append((period_start, period_end, ordered))
    return MetricData(query, out)


def _statement(session: Session, query: Query, start: dt.datetime, end: dt.datetime) -> Select:
    mv = MetricValue
    group_cols = _group_columns(query)
    stmt = (select(mv.valid_from, *group_cols, MetricLabel.name,
                   func.sum(mv.value_num), func.min(mv.value_num), func.max(mv.value_num),
                   func.count(), func.sum(mv.samples_count), func.sum(mv.value_num * mv.samples_count))
            .join(MetricLabel, MetricLabel.id == mv.label_id)
            .where(mv.metric_id == query.metric.id, mv.valid_from >= start, mv.valid_to <= end)
            .group_by(mv.valid_from, *group_cols, MetricLabel.name))
    if query.service is not None:
        stmt = stmt.where(mv.service_id == query.service.id)
    if query.label is not None:
        stmt = stmt.where(mv.label_id == query.label.id)
    if query.group_by in BY_EVENT_TYPE:
        if query.event_type:
            stmt = stmt.where(mv.event_type == query.event_type)
    else:
        stmt = stmt.where(mv.event_type == (query.event_type or d.EVENT_ALL))
    return _resource_scope(session, query, stmt)


def _group_columns(query: Query) -> list:
    if query.group_by in BY_RESOURCE:
        return [MetricValue.resource_id]
    if query.group_by in BY_EVENT_TYPE:
        return [MetricValue.event_type]
    return []


def _resource_scope(session: Session, query: Query, stmt: Select) -> Select:
    if query.resource is not None:
        return stmt.where(MetricValue.resource_id == query.resource.id)
    if query.resource_type is not None:
        return stmt.join(MonitoredResource, MonitoredResource.id == MetricValue.resource_id).where(
            MonitoredResource.type == query.resource_type)
    if query.group_by in BY_RESOURCE:
        return stmt
    empty = session.scalar(select(MonitoredResource.id).where(
        MonitoredResource.type == "", MonitoredResource.name == ""))
    return stmt.where(MetricValue.resource_id == (empty or -1))


def _describe_row(row: Row, query: Query, groups: tuple, label: str, resources: dict,
                  session: Session) -> None:
    """Fill in what a new output row stands for (its label, resource or event type)."""
    group_by, labelled = query.group_by, query.metric.metric_type == d.VALUE
    if group_by in (None, "resource"):
        row.label = label
    if group_by in BY_RESOURCE:
        resource_id = groups[0]
        if resource_id not in resources:
            resources[resource_id] = session.get(MonitoredResource, resource_id)
        row.resource = resources[resource_id]
    if group_by in BY_EVENT_TYPE:
        row.event_type = groups[0]
    # Collapsing labels: for labelled (value) metrics the answer is how many distinct labels
    # (unique users, agents, paths ...), as in GeoNode's user analytics.
    row.counts_labels = group_by in ("label", "event_type_on_label") or (
        group_by in ("resource_no_labels", "resource_no_label") and labelled)
