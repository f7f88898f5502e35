"""cartotheca.api.routes.monitoring: the monitoring API under ``/monitoring/api/``.

Every path answers with or without its trailing slash. Errors use the monitoring envelope
(``errors`` maps field names to messages) rather than the catalogue's error triple. The data
names client addresses and users and shows stack traces, so every endpoint is for staff and
superusers (GeoNode guards most of them the same way).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.routing import APIRoute
from starlette.responses import Response

from cartotheca.api.deps import DbDep, SettingsDep, StaffDep, read_body
from cartotheca.api.errors import CHALLENGE, status_of
from cartotheca.api.responses import JSON
from cartotheca.api.schemas import monitoring as wire
from cartotheca.errors import AuthenticationFailed, CartothecaError, NotAuthenticated, PermissionDenied
from cartotheca.monitoring import alerts, configuration, exceptions, notifications, queries
from cartotheca.monitoring.validation import FieldErrors, MissingObject

API = "/monitoring/api"


class MonitoringRoute(APIRoute):
    """Turns domain errors into the monitoring envelope with a fitting status."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def envelope_errors(request: Request) -> Response:
            try:
                return await handler(request)
            except (FieldErrors, MissingObject) as exc:
                status = 404 if isinstance(exc, MissingObject) else 400
                return JSON(wire.failed(exc.fields), status_code=status)
            except (NotAuthenticated, AuthenticationFailed) as exc:
                return JSON(wire.failed({"user": [exc.message]}), status_code=401, headers=CHALLENGE)
            except PermissionDenied as exc:
                return JSON(wire.failed({"user": [exc.message]}), status_code=403)
            except CartothecaError as exc:
                return JSON(wire.failed({"__all__": exc.messages}), status_code=status_of(exc))

        return envelope_errors


router = APIRouter(route_class=MonitoringRoute, tags=["monitoring"])
Body = Annotated[Any, Depends(read_body)]


def route(method: str, path: str, summary: str):
    """Register ``path`` (documented) and the same path without its trailing slash."""
    def register(func):
        router.add_api_route(API + path, func, methods=[method], summary=summary)
        router.add_api_route(API + path.rstrip("/"), func, methods=[method], include_in_schema=False)
        return func
    return register


def _params(request: Request) -> dict[str, Any]:
    return dict(request.query_params)


def _id(value: str, field: str) -> int:
    if not value.isdigit():
        raise MissingObject(field, "Object not found")
    return int(value)


@route("GET", "/hosts/", "Monitored hosts")
def hosts(db: DbDep, _: StaffDep) -> JSON:
    return JSON(wire.ok(hosts=[wire.host_record(h) for h in queries.hosts(db)]))


@route("GET", "/services/", "Monitored services")
def services(db: DbDep, _: StaffDep) -> JSON:
    return JSON(wire.ok(services=[wire.service_record(s, h) for s, h in queries.services(db)]))


@route("GET", "/resources/", "Monitored resources (metric_name, resource_type, valid_from/to, last)")
def resources(request: Request, db: DbDep, _: StaffDep) -> JSON:
    found = queries.resources(db, _params(request))
    return JSON(wire.ok(resources=[wire.resource_record(r) for r in found]))


@route("GET", "/resource_types/", "Types of monitored resources")
def resource_types(_: StaffDep) -> JSON:
    return JSON(wire.ok(resource_types=wire.resource_types()))


@route("GET", "/event_types/", "Event types (ows_service=true|false)")
def event_types(request: Request, _: StaffDep) -> JSON:
    return JSON(wire.ok(event_types=wire.event_type_records(queries.event_types(_params(request)))))


@route("GET", "/labels/", "Labels of metric values (metric_name, valid_from/to, last)")
def labels(request: Request, db: DbDep, _: StaffDep) -> JSON:
    return JSON(wire.ok(labels=[wire.label_record(label) for label in queries.labels(db, _params(request))]))


@route("GET", "/metrics/", "Metrics of each service type")
def metrics(db: DbDep, _: StaffDep) -> JSON:
    return JSON(wire.ok(metrics=wire.metric_groups(queries.metrics(db))))


@route("GET", "/metric_data/{metric_name}/", "Values of one metric per interval")
def metric_data(metric_name: str, request: Request, db: DbDep, _: StaffDep) -> JSON:
    query = queries.parse_metric_query(db, metric_name, _params(request))
    return JSON(wire.ok(wire.metric_data(queries.metric_data(db, query))))


@route("GET", "/exceptions/", "Captured server errors")
def exception_list(request: Request, db: DbDep, _: StaffDep) -> JSON:
    found = exceptions.list_errors(db, _params(request))
    return JSON(wire.ok(exceptions=[wire.exception_item(e) for e in found]))


@route("GET", "/exceptions/{exception_id}/", "One captured server error with its request")
def exception_detail(exception_id: str, db: DbDep, _: StaffDep) -> JSON:
    found = exceptions.get_error(db, _id(exception_id, "exception_id"))
    return JSON({**wire.ok(), **wire.exception_detail(found)})


@route("POST", "/autoconfigure/", "Set up hosts and services from the settings")
def autoconfigure(db: DbDep, settings: SettingsDep, _: StaffDep) -> JSON:
    configuration.autoconfigure(db, settings)
    db.commit()
    return JSON(wire.ok())


@route("GET", "/status/", "Failing notification checks and their problems")
def status(db: DbDep, _: StaffDep) -> JSON:
    results = alerts.evaluate(db)
    return JSON(wire.ok([wire.status_item(r, notifications.check_view(db, r.check)) for r in results]))


@route("GET", "/notifications/", "Current problems and the health level")
def problems(db: DbDep, _: StaffDep) -> JSON:
    results = alerts.evaluate(db)
    return JSON(wire.ok({
        "problems": [wire.problem_item(p) for r in results for p in r.problems],
        "health_level": alerts.health_level(results),
        "checks": [wire.check_summary(c) for c in notifications.list_checks(db)],
    }))


@route("POST", "/notifications/", "Create a notification check")
def create_notification(_: StaffDep, body: Body, db: DbDep, settings: SettingsDep) -> JSON:
    check = notifications.create_check(db, settings, body)
    db.commit()
    return JSON(wire.ok(wire.check_record(notifications.check_view(db, check))))


@route("GET", "/notifications/config/{notification_id}/", "The configuration form of a check")
def notification_form(notification_id: str, db: DbDep, _: StaffDep) -> JSON:
    check = notifications.get_check(db, _id(notification_id, "notification_id"))
    view, fields = notifications.check_view(db, check), notifications.form_fields(db, check)
    return JSON(wire.ok({"fields": [wire.form_field(f) for f in fields],
                         "form": wire.form_markup(view, fields),
                         "emails": view.emails, "notification": wire.check_record(view)}))


@route("POST", "/notifications/config/{notification_id}/", "Submit the configuration form of a check")
def configure_notification(notification_id: str, _: StaffDep, body: Body, db: DbDep) -> JSON:
    check = notifications.get_check(db, _id(notification_id, "notification_id"))
    notifications.configure_check(db, check, body)
    db.commit()
    return JSON(wire.ok(wire.check_record(notifications.check_view(db, check))))
