"""cartotheca.api.schemas.monitoring: the monitoring API's envelope and records on the wire.

Answers are wrapped as ``{status, success, errors, data}`` (plus the list under its own key,
as GeoNode's views do); numbers of metric rows are strings with four decimals, except counts
of distinct labels, which are integers.
"""

from __future__ import annotations

import datetime as dt
from html import escape
from typing import Any

from cartotheca.db.models import (
    MetricLabel,
    MonitoredResource,
    MonitoredService,
    MonitoringHost,
    MonitoringMetric,
    NotificationCheck,
)
from cartotheca.monitoring import definitions as d
from cartotheca.monitoring.alerts import CheckResult, Problem
from cartotheca.monitoring.exceptions import CapturedError
from cartotheca.monitoring.notifications import CheckView, FormField
from cartotheca.monitoring.queries import MetricData, Row

API = "/monitoring/api"


def stamp(value: dt.datetime | None) -> str | None:
    """Django's JSON form of a UTC time: milliseconds when there are any, ``Z``."""
    if value is None:
        return None
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}"
    return text + "Z"


def decimal(value: float | None) -> str | None:
    return None if value is None else f"{value:.4f}"


def ok(data: Any = None, **lists: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"status": "ok", "success": True, "errors": {}}
    if lists:
        body.update(lists)
        body["data"] = {"key": next(iter(lists))}
    if data is not None:
        body["data"] = data
    return body


def failed(errors: dict[str, list[str]]) -> dict[str, Any]:
    return {"status": "error", "success": False, "errors": errors, "data": []}


# -- lists ----------------------------------------------------------------------------------

def host_record(host: MonitoringHost) -> dict[str, Any]:
    return {"name": host.name, "ip": host.ip}


def service_record(service: MonitoredService, host_name: str) -> dict[str, Any]:
    return {"id": service.id, "name": service.name, "type": service.service_type, "host": host_name,
            "last_check": stamp(service.last_check), "check_interval": service.check_interval}


def resource_record(resource: MonitoredResource) -> dict[str, Any]:
    return {"id": resource.id, "type": resource.type, "name": resource.name}


def label_record(label: MetricLabel) -> dict[str, Any]:
    return {"id": label.id, "name": label.name}


def resource_types() -> list[dict[str, str]]:
    return [{"type": label, "name": value} for value, label in d.RESOURCE_TYPES.items()]


def event_type_records(items: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"name": name, "type_label": label} for name, label in items]


def metric_groups(groups: list[tuple[str, list[MonitoringMetric]]]) -> list[dict[str, Any]]:
    return [{"service": service_type,
             "metrics": [{"name": m.name, "unit": m.unit, "type": wire_type(m.metric_type)}
                         for m in metrics]}
            for service_type, metrics in groups]


def wire_type(metric_type: str) -> str:
    """The metric type as the API names it: ``count``, ``value`` or ``rate``. A level (memory,
    disk) aggregates to its maximum inside, and is a ``value`` on the wire."""
    return d.VALUE if metric_type == d.VALUE_NUMERIC else metric_type


# -- metric data ----------------------------------------------------------------------------

def metric_data(result: MetricData) -> dict[str, Any]:
    q = result.query
    return {
        "input_valid_from": stamp(q.valid_from),
        "input_valid_to": stamp(q.valid_to),
        "metric": q.metric.name,
        "interval": float(q.interval),
        "type": wire_type(q.metric.metric_type),
        "axis_label": q.metric.unit,
        "label": q.label.name if q.label else None,
        "data": [{"valid_from": stamp(start), "valid_to": stamp(end),
                  "data": [metric_row(r, q.metric.metric_type) for r in rows]}
                 for start, end, rows in result.periods],
    }


def metric_row(row: Row, metric_type: str) -> dict[str, Any]:
    value = row.value(metric_type)
    out: dict[str, Any] = {}
    if row.label is not None:
        out["label"] = row.label
    out.update({"val": value if row.counts_labels else decimal(value), "min": decimal(row.minimum),
                "max": decimal(row.maximum), "sum": decimal(row.total),
                "samples_count": row.samples, "metric_count": row.metric_count})
    if row.resource is not None:
        out["resource"] = resource_record(row.resource)
    if row.event_type is not None:
        out["event_type"] = row.event_type
    return out


# -- exceptions -----------------------------------------------------------------------------

def exception_item(item: CapturedError) -> dict[str, Any]:
    e = item.error
    return {"id": e.id, "error_type": e.error_type, "created": stamp(e.created),
            "service": {"type": item.service.service_type, "name": item.service.name},
            "url": f"{API}/exceptions/{e.id}/"}


def exception_detail(item: CapturedError) -> dict[str, Any]:
    e, r = item.error, item.request
    detail = {**exception_item(item), "error_message": e.error_message, "error_data": e.error_data}
    detail["request"] = None if r is None else {
        "event_type": r.event_type,
        "client": {"ip": r.client_ip, "user_agent": r.user_agent,
                   "user_agent_family": r.user_agent_family,
                   # No GeoIP database: positions are not resolved.
                   "position": {"lat": None, "lon": None, "country": None, "city": None}},
        "request": {"path": r.request_path, "host": r.host, "method": r.request_method,
                    "created": stamp(r.created)},
        "response": {"status": r.response_status, "time": round(r.response_time),
                     "type": r.response_type, "size": r.response_size},
        "resources": [{"type": x["type"], "name": x["name"]} for x in r.resources or []],
    }
    return detail


# -- notifications --------------------------------------------------------------------------

def check_url(check_id: int) -> str:
    return f"{API}/notifications/config/{check_id}/"


def check_record(view: CheckView) -> dict[str, Any]:
    c = view.check
    return {
        "id": c.id, "name": c.name, "description": c.description, "user_threshold": c.user_threshold,
        "last_send": stamp(c.last_send),
        "grace_period": {"class": "datetime.timedelta", "seconds": float(c.grace_period)},
        "severity": c.severity, "active": c.active, "url": check_url(c.id),
        "receivers": [{"id": r.id, "user": r.username, "email": r.email} for r in view.receivers],
    }


def check_summary(check: NotificationCheck) -> dict[str, Any]:
    return {"id": check.id, "url": check_url(check.id), "name": check.name, "active": check.active,
            "severity": check.severity, "description": check.description}


def form_field(f: FormField) -> dict[str, Any]:
    definition, current = f.definition, f.current_value
    if current is not None and definition.field_option == "max_timeout":
        current = {"class": "datetime.timedelta", "seconds": float(current)}
    steps = f.steps
    return {
        "id": definition.id, "field_name": f.name, "field_option": definition.field_option,
        "description": definition.description,
        "metric": {"name": f.metric.name, "id": f.metric.id},
        "notification_check": {"name": f.check.name, "id": f.check.id},
        "min_value": definition.min_value, "max_value": definition.max_value,
        "current_value": current, "steps": definition.steps,
        "steps_calculated": [f"{s:.3g}" for s in steps] if steps else None,
        "is_enabled": current is not None,
        "use_resource": definition.use_resource, "use_label": definition.use_label,
        "use_service": definition.use_service, "use_ows_service": definition.use_event_type,
        "unit": f.unit,
    }


def form_markup(view: CheckView, fields: list[FormField]) -> str:
    """The configuration form as HTML table rows (the shape of Django's ``as_table``)."""
    check = view.check
    severities = "".join(f'<option value="{s}"{" selected" if s == check.severity else ""}>{s}</option>'
                         for s in d.SEVERITIES)
    rows = [
        _row("emails", "Emails", f'<textarea name="emails" id="id_emails">'
                                 f'{escape(chr(10).join(view.emails))}</textarea>'),
        _row("severity", "Severity", f'<select name="severity" id="id_severity">{severities}</select>'),
        _row("active", "Active", f'<input type="checkbox" name="active" id="id_active"'
                                 f'{" checked" if check.active else ""}>'),
        _row("grace_period", "Grace period", f'<input type="text" name="grace_period" '
                                             f'id="id_grace_period" value="{_hms(check.grace_period)}">'),
    ]
    rows += [_row(f.name, f.definition.description or f.name, _input(f)) for f in fields]
    return "\n".join(rows)


def _row(name: str, label: str, widget: str) -> str:
    return (f'<tr><th><label for="id_{escape(name)}">{escape(label)}:</label></th>'
            f"<td>{widget}</td></tr>")


def _input(f: FormField) -> str:
    name, current = escape(f.name), f.current_value
    steps = f.steps
    if steps:
        options = "".join(f'<option value="{s:.3g}"{" selected" if current == s else ""}>{s:.3g}</option>'
                          for s in steps)
        return f'<select name="{name}" id="id_{name}"><option value=""></option>{options}</select>'
    bounds = "".join(f' {attr}="{value:g}"' for attr, value in
                     (("min", f.definition.min_value), ("max", f.definition.max_value)) if value is not None)
    value = "" if current is None else f"{current:g}"
    return f'<input type="number" step="any" name="{name}" id="id_{name}" value="{value}"{bounds}>'


def _hms(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def problem_item(p: Problem) -> dict[str, Any]:
    return {"name": p.name, "severity": p.severity, "message": p.message, "description": p.description,
            "offending_value": p.offending_value, "threshold_value": p.threshold_value,
            "check_id": p.check_id, "check_url": check_url(p.check_id), "spotted_at": stamp(p.spotted_at),
            "valid_from": stamp(p.valid_from), "valid_to": stamp(p.valid_to)}


def status_item(result: CheckResult, view: CheckView) -> dict[str, Any]:
    return {"check": check_record(view),
            "problems": [{k: v for k, v in problem_item(p).items()
                          if k in ("name", "severity", "message", "description", "offending_value",
                                   "threshold_value")} for p in result.problems]}
