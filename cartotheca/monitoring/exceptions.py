"""cartotheca.monitoring.exceptions: captured server errors with the requests they broke."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca.db.base import utcnow
from cartotheca.db.models import ExceptionEvent, MonitoredService, RequestEvent
from cartotheca.monitoring.validation import MAX_DURATION_SECONDS, Form, MissingObject


@dataclass
class CapturedError:
    error: ExceptionEvent
    service: MonitoredService
    request: RequestEvent | None = None


def list_errors(session: Session, params: Mapping[str, Any]) -> list[CapturedError]:
    """Newest first; filters: error_type, service_name, service_type, valid_from/valid_to/last."""
    form = Form(params)
    error_type, service_name = form.text("error_type"), form.text("service_name")
    service_type = form.text("service_type")
    valid_from, valid_to = form.timestamp("valid_from"), form.timestamp("valid_to")
    last = form.integer("last", minimum=1, maximum=MAX_DURATION_SECONDS)
    if last and (valid_from or valid_to):
        form.error("__all__", "Cannot use last and valid_from/valid_to at the same time")
    form.check()
    if last:
        valid_from = utcnow() - dt.timedelta(seconds=last)
    stmt = (select(ExceptionEvent, MonitoredService)
            .join(MonitoredService, MonitoredService.id == ExceptionEvent.service_id)
            .order_by(ExceptionEvent.created.desc(), ExceptionEvent.id.desc()))
    if error_type:
        stmt = stmt.where(ExceptionEvent.error_type == error_type)
    if service_name:
        stmt = stmt.where(MonitoredService.name == service_name)
    if service_type:
        stmt = stmt.where(MonitoredService.service_type == service_type)
    if valid_from:
        stmt = stmt.where(ExceptionEvent.created >= valid_from)
    if valid_to:
        stmt = stmt.where(ExceptionEvent.created <= valid_to)
    return [CapturedError(error, service) for error, service in session.execute(stmt)]


def get_error(session: Session, exception_id: int) -> CapturedError:
    row = session.execute(
        select(ExceptionEvent, MonitoredService, RequestEvent)
        .join(MonitoredService, MonitoredService.id == ExceptionEvent.service_id)
        .outerjoin(RequestEvent, RequestEvent.id == ExceptionEvent.request_id)
        .where(ExceptionEvent.id == exception_id)).first()
    if row is None:
        raise MissingObject("exception_id", "Object not found")
    return CapturedError(*row)
