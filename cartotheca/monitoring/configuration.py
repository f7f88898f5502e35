"""cartotheca.monitoring.configuration: built-in metrics, and hosts and services from the settings.

Several processes may start together: inserts ignore a unique-key clash (another process
created the row first) and read the row back.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cartotheca.db.models import MonitoredService, MonitoringHost, MonitoringMetric
from cartotheca.monitoring import definitions as d
from cartotheca.monitoring import store
from cartotheca.settings import Settings


@dataclass(frozen=True)
class ServiceSet:
    """The ids of the services this deployment records into."""

    core: int
    mapserver: int
    hostcore: int
    interval: int

    def for_type(self, service_type: str) -> int:
        return self.mapserver if service_type == d.MAPSERVER else self.core


def host_name(settings: Settings) -> str:
    """This machine's name in monitoring; each machine of a scale-out gets its own services."""
    return settings.MONITORING_HOST_NAME or socket.gethostname() or "localhost"


def service_names(settings: Settings) -> dict[str, str]:
    host = host_name(settings)
    return {
        d.CORE: settings.MONITORING_SERVICE_NAME or f"{host}-core",
        d.MAPSERVER: f"{host}-mapserver",
        d.HOSTCORE: f"{host}-hostcore",
    }


def populate(session: Session) -> None:
    """Create or update the built-in metrics."""
    existing = {m.name: m for m in session.scalars(select(MonitoringMetric))}
    for definition in d.METRICS.values():
        row = existing.get(definition.name)
        if row is None:
            _insert(session, MonitoringMetric(
                name=definition.name, metric_type=definition.type, unit=definition.unit,
                description=definition.description))
        elif (row.metric_type, row.unit, row.description) != (
                definition.type, definition.unit, definition.description):
            row.metric_type, row.unit = definition.type, definition.unit
            row.description = definition.description
    session.flush()


def ensure_configured(session: Session, settings: Settings) -> ServiceSet:
    """The services to record into, set up from the settings when missing (cheap when not)."""
    if session.scalar(select(func.count()).select_from(MonitoringMetric)) < len(d.METRICS):
        populate(session)
    names = service_names(settings)
    rows = {s.service_type: s for s in session.scalars(
        select(MonitoredService).where(MonitoredService.name.in_(names.values())))}
    if set(rows) != set(names):
        rows = autoconfigure(session, settings, resolve=False)
    for service in rows.values():
        # The collection period follows the settings (the same in every process).
        if service.check_interval != settings.MONITORING_COLLECTION_INTERVAL:
            service.check_interval = settings.MONITORING_COLLECTION_INTERVAL
    return ServiceSet(rows[d.CORE].id, rows[d.MAPSERVER].id, rows[d.HOSTCORE].id,
                      settings.MONITORING_COLLECTION_INTERVAL)


def autoconfigure(session: Session, settings: Settings, *, resolve: bool = True) -> dict[
        str, MonitoredService]:
    """Set up this deployment's host and its services (catalogue, map server, host)."""
    populate(session)
    name = host_name(settings)
    host = session.scalar(select(MonitoringHost).where(MonitoringHost.name == name))
    if host is None:
        host = _insert(session, MonitoringHost(name=name, ip=resolve_ip(name) if resolve else
                                               _literal_ip(name)))
    elif resolve:
        host.ip = resolve_ip(name)
    host.active = True
    services = {}
    for service_type, service_name in service_names(settings).items():
        service = session.scalar(select(MonitoredService).where(MonitoredService.name == service_name))
        if service is None:
            service = _insert(session, MonitoredService(name=service_name, service_type=service_type,
                                                        host_id=host.id))
        service.service_type, service.host_id, service.active = service_type, host.id, True
        service.check_interval = settings.MONITORING_COLLECTION_INTERVAL
        service.url = settings.SITEURL
        services[service_type] = service
    session.flush()
    return services


def _insert(session: Session, row):
    """Insert unless another process inserted the same name first; the row as stored."""
    model = type(row)
    values = {c.key: getattr(row, c.key) for c in model.__table__.columns
              if c.key != "id" and getattr(row, c.key) is not None}
    store.insert_ignoring_conflicts(session, model, [values])
    return session.scalar(select(model).where(model.name == row.name))


def _literal_ip(name: str) -> str:
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return "127.0.0.1"


def resolve_ip(name: str, timeout: float = 2.0) -> str:
    """The host's address; resolution gets ``timeout`` seconds, then 127.0.0.1 is used."""
    if name == "localhost":
        return "127.0.0.1"
    found: list[str] = []

    def lookup() -> None:
        try:
            found.append(socket.gethostbyname(name))
        except OSError:
            pass

    worker = threading.Thread(target=lookup, daemon=True)
    worker.start()
    worker.join(timeout)
    return found[0] if found else _literal_ip(name)
