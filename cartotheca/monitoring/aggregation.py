"""cartotheca.monitoring.aggregation: one service period of request events → metric values.

Each request counts towards several rows: the "no resource" row and one per resource it
concerned, crossed with the event types ``all``, ``OWS:ALL`` or ``other``, its own type and
(for WFS GetFeature / WCS GetCoverage) ``download``. Within a row, labels split the value
metrics by user tracking id, agent, path, method and status.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from cartotheca.db.models import ExceptionEvent, MetricValue, RequestEvent
from cartotheca.monitoring import definitions as d
from cartotheca.monitoring import store

# value metric → what its labels are
LABELLED = ("request.ip", "request.ua", "request.ua.family", "request.users", "request.path",
            "request.method", "response.status")
# Paths of the requests answered with a client or server error status
ERROR_PATH = "response.error.path"


@dataclass
class Totals:
    """What the requests of one (resource, event type) row add up to."""

    count: int = 0
    time: float = 0.0
    size: float = 0.0
    errors: int = 0
    labels: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    error_types: Counter = field(default_factory=Counter)

    def add(self, event: Any, labels: tuple[str, ...], error_types: list[str]) -> None:
        self.count += 1
        self.time += event.response_time
        self.size += event.response_size
        for metric, label in zip(LABELLED, labels, strict=True):
            self.labels[metric][label] += 1
        if (event.response_status or 0) >= 400:  # the path label: which endpoints answer with errors
            self.labels[ERROR_PATH][labels[LABELLED.index("request.path")]] += 1
        if error_types:
            self.errors += 1
            self.error_types.update(error_types)


def aggregate_period(session: Session, service_id: int, valid_from: dt.datetime,
                     valid_to: dt.datetime) -> int:
    """Write the metric values of one period (replacing any); returns how many rows."""
    e = RequestEvent
    events = session.execute(select(
        e.id, e.event_type, e.secondary_event_type, e.response_time, e.response_size, e.client_ip,
        e.user_agent, e.user_agent_family, e.user_identifier, e.user_username, e.request_path,
        e.request_method, e.response_status, e.resources,
    ).where(e.service_id == service_id, e.received >= valid_from, e.received < valid_to)).all()
    session.execute(delete(MetricValue).where(
        MetricValue.service_id == service_id, MetricValue.valid_from == valid_from,
        MetricValue.valid_to == valid_to))
    if not events:
        return 0
    errors: dict[int, list[str]] = defaultdict(list)
    for request_id, error_type in session.execute(
            select(ExceptionEvent.request_id, ExceptionEvent.error_type)
            .join(RequestEvent, RequestEvent.id == ExceptionEvent.request_id)
            .where(RequestEvent.service_id == service_id, RequestEvent.received >= valid_from,
                   RequestEvent.received < valid_to)):
        errors[request_id].append(error_type)
    rows, users, resources = _totals(events, errors)
    values = _metric_rows(rows)
    ids = _ids(session, values, users, resources)
    records = [{"valid_from": valid_from, "valid_to": valid_to, "service_id": service_id,
                "metric_id": ids.metrics[metric], "event_type": event_type,
                "resource_id": ids.resources[resource], "label_id": ids.labels[label[:255]],
                "value": _text(value), "value_num": value, "samples_count": samples}
               for metric, event_type, resource, label, value, samples in values]
    for start in range(0, len(records), 1000):
        session.execute(insert(MetricValue.__table__), records[start:start + 1000])
    return len(records)


def _totals(events, errors):
    rows: dict[tuple, Totals] = defaultdict(Totals)
    users: dict[str, str | None] = {}
    resources: dict[tuple[str, str], int | None] = {store.EMPTY_RESOURCE: None}
    for event in events:
        labels = (event.client_ip or "", event.user_agent or "", event.user_agent_family or "",
                  event.user_identifier or "", event.request_path.split("?", 1)[0],
                  event.request_method, str(event.response_status))
        if event.user_identifier:
            users[event.user_identifier] = event.user_username
        concerned = [store.EMPTY_RESOURCE]
        for item in event.resources or []:
            key = (item["type"], item["name"][:255])
            resources.setdefault(key, item.get("resource_id"))
            concerned.append(key)
        types = {d.EVENT_ALL, event.event_type, event.secondary_event_type,
                 d.EVENT_OWS if event.event_type and d.is_ows(event.event_type) else d.EVENT_OTHER}
        types.discard(None)
        for resource in concerned:
            for event_type in types:
                rows[(resource, event_type)].add(event, labels, errors.get(event.id, []))
    return rows, users, resources


def _metric_rows(rows: dict[tuple, Totals]) -> list[tuple]:
    """(metric, event type, resource, label, value, samples) for every row."""
    out = []
    for (resource, event_type), t in rows.items():
        base = (event_type, resource)
        out.append(("request.count", *base, d.COUNT_LABEL, float(t.count), t.count))
        out.append(("response.time", *base, d.VALUE_LABEL, t.time / t.count, t.count))
        out.append(("response.size", *base, d.VALUE_LABEL, t.size / t.count, t.count))
        for metric, counter in t.labels.items():
            out.extend((metric, *base, label, float(n), n) for label, n in counter.items())
        if t.errors:
            out.append(("response.error.count", *base, d.COUNT_LABEL, float(t.errors), t.count))
            out.extend(("response.error.types", *base, label, float(n), n)
                       for label, n in t.error_types.items())
    return out


@dataclass
class _Ids:
    metrics: dict[str, int]
    labels: dict[str, int]
    resources: dict[tuple[str, str], int]


def _ids(session: Session, values: list[tuple], users: dict[str, str | None],
         resources: dict[tuple[str, str], int | None]) -> _Ids:
    names = {label: None for _, _, _, label, _, _ in values}
    names.update({k: v for k, v in users.items() if k in names})
    return _Ids(store.metric_ids(session), store.label_ids(session, names),
                store.resource_ids(session, resources))


def _text(value: float) -> str:
    return f"{value:.4f}"
