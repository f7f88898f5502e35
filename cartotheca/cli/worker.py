"""cartotheca.cli.worker: the Celery worker's composition (``cartotheca worker``)."""

from __future__ import annotations

from celery import Celery

from cartotheca.catalogue import events
from cartotheca.catalogue.families import build_kinds
from cartotheca.catalogue.harvesting.scheduling import enqueue_due_runs
from cartotheca.db.base import utcnow
from cartotheca.db.session import make_engine, make_sessionmaker
from cartotheca.monitoring.collector import collect_once
from cartotheca.ows import render
from cartotheca.ows.thumbnails import MapThumbnails
from cartotheca.settings import Settings
from cartotheca.tasks.backends.celery import DELIVER_NOTIFICATIONS, CeleryBackend, Periodic, worker_app
from cartotheca.tasks.jobs import build_engine


def compose_worker(settings: Settings) -> Celery:
    """The Celery worker's composition: the engine with the job table, and the periodic tasks
    its beat schedules (each claims its work in the database, so two beats never do it twice)."""
    sessions = make_sessionmaker(make_engine(settings))
    kinds = build_kinds(MapThumbnails(), render.forget_data)
    tasks = build_engine(settings, sessions, kinds)

    def deliver_notifications() -> None:
        """Expand new notices and send the due deliveries; woken after commits, and by beat
        for retries. Deliveries are claimed in the database, so workers never send one twice."""
        events.deliver_due(sessions, settings)

    def enqueue_harvests() -> None:
        """Start the scheduled harvester actions that are due (each action is claimed)."""
        with sessions() as session:
            started = enqueue_due_runs(session, settings, utcnow())
            session.commit()
        for exec_id in started:
            tasks.dispatch(exec_id)

    def collect_monitoring() -> None:
        """The monitoring collection cycle for all servers: servers only write their captured
        requests, this aggregates them (each period is claimed)."""
        collect_once(settings, sessions)

    periodic = [
        Periodic(DELIVER_NOTIFICATIONS, "deliver-notifications",
                 settings.NOTIFICATIONS_POLL_SECONDS, deliver_notifications),
        Periodic("cartotheca.enqueue_harvests", "enqueue-harvests",
                 settings.HARVESTING_SCHEDULER_INTERVAL, enqueue_harvests),
    ]
    if settings.MONITORING_ENABLED:
        periodic.append(Periodic("cartotheca.collect_monitoring", "collect-monitoring",
                                 settings.MONITORING_COLLECTION_INTERVAL, collect_monitoring))

    def wake_delivery(backend: CeleryBackend) -> None:
        # Notices written by jobs in this worker wake a delivery task after their commit.
        events.add_waker(backend.request_notifications)

    return worker_app(tasks, periodic, on_ready=[wake_delivery])
