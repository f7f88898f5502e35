"""cartotheca.monitoring.store: ids of metrics, labels and monitored resources, created on demand.

Inserts ignore rows another process added meanwhile (ON CONFLICT DO NOTHING, which SQLite and
PostgreSQL both speak), then the ids are read back.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from cartotheca.db.models import MetricLabel, MonitoredResource, MonitoringMetric

CHUNK = 500
EMPTY_RESOURCE = ("", "")  # the "no resource" row: every request, whatever it concerned


def metric_ids(session: Session) -> dict[str, int]:
    return dict(session.execute(select(MonitoringMetric.name, MonitoringMetric.id)).all())


def label_ids(session: Session, users: dict[str, str | None]) -> dict[str, int]:
    """Label name → id; ``users`` maps each name to the user name behind it (or None)."""
    users = {name[:255]: user for name, user in users.items()}
    found = _select_labels(session, users)
    missing = [{"name": n, "user": users[n]} for n in users if n not in found]
    if missing:
        insert_ignoring_conflicts(session, MetricLabel, missing)
        found.update(_select_labels(session, {m["name"]: None for m in missing}))
    return found


def _select_labels(session: Session, names: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for chunk in _chunks(list(names)):
        out.update(session.execute(
            select(MetricLabel.name, MetricLabel.id).where(MetricLabel.name.in_(chunk))).all())
    return out


def resource_ids(session: Session, resources: dict[tuple[str, str], int | None]) -> dict[
        tuple[str, str], int]:
    """(type, name) → monitored resource id; ``resources`` gives each one's catalogue id."""
    resources = {(t, n[:255]): r for (t, n), r in resources.items()}
    found = _select_resources(session, resources)
    missing = [{"type": t, "name": n, "resource_id": resources[(t, n)]}
               for (t, n) in resources if (t, n) not in found]
    if missing:
        insert_ignoring_conflicts(session, MonitoredResource, missing)
        found.update(_select_resources(session, [(m["type"], m["name"]) for m in missing]))
    return found


def _select_resources(session: Session, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for chunk in _chunks(list(keys)):
        rows = session.execute(select(MonitoredResource.type, MonitoredResource.name, MonitoredResource.id)
                               .where(tuple_(MonitoredResource.type, MonitoredResource.name).in_(chunk)))
        out.update({(t, n): i for t, n, i in rows})
    return out


def insert_ignoring_conflicts(session: Session, model: Any, rows: list[dict[str, Any]]) -> None:
    insert = postgresql_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    for chunk in _chunks(rows):
        session.execute(insert(model.__table__).on_conflict_do_nothing(), chunk)


def _chunks(items: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start:start + CHUNK]
