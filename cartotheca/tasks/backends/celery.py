"""cartotheca.tasks.backends.celery: the Celery app and the one task that runs an execution.

Workers start with ``cartotheca worker``; the broker is CELERY_BROKER_URL (Redis or RabbitMQ).
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache

from celery import Celery, signals

from cartotheca.catalogue.families import build_kinds
from cartotheca.ows import render
from cartotheca.ows.thumbnails import MapThumbnails
from cartotheca.settings import get_settings
from cartotheca.tasks.engine import Engine

log = logging.getLogger("cartotheca.tasks")


def run_execution(exec_id: str) -> None:
    worker_engine().run(exec_id)


def collect_monitoring() -> None:
    """The monitoring collection cycle, scheduled by beat once per interval for all servers.

    Servers only write their captured requests; this aggregates them. Each period is claimed
    in the database, so a second beat (or a late run) never collects a period twice.
    """
    from cartotheca.monitoring.collector import collect_once

    engine = worker_engine()
    collect_once(engine.settings, engine.sessions)


def deliver_notifications() -> None:
    """Expand new notices and send the due deliveries; woken after commits, and by beat for
    retries. Deliveries are claimed in the database, so workers never send one twice."""
    from cartotheca.catalogue.events import deliver_due

    engine = worker_engine()
    deliver_due(engine.sessions, engine.settings)


def enqueue_harvests() -> None:
    """Start the scheduled harvester actions that are due, scheduled by beat for all servers.

    Each action is claimed in the database, so a second beat or a late run starts nothing twice.
    """
    from cartotheca.catalogue.harvesting.scheduling import enqueue_due_runs
    from cartotheca.db.base import utcnow

    engine = worker_engine()
    with engine.sessions() as session:
        started = enqueue_due_runs(session, engine.settings, utcnow())
        session.commit()
    backend = engine.backend or CeleryBackend(engine)
    for exec_id in started:
        backend.enqueue(exec_id)


def make_celery(broker_url: str) -> Celery:
    app = Celery("cartotheca", broker=broker_url)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        # An execution whose worker dies is redelivered; the engine's claim makes a second
        # delivery of a finished or running execution a no-op.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
    )
    app.task(name="cartotheca.run_execution")(run_execution)
    app.task(name="cartotheca.collect_monitoring", ignore_result=True)(collect_monitoring)
    app.task(name="cartotheca.deliver_notifications", ignore_result=True)(deliver_notifications)
    app.task(name="cartotheca.enqueue_harvests", ignore_result=True)(enqueue_harvests)
    settings = get_settings()
    app.conf.beat_schedule = {"deliver-notifications": {
        "task": "cartotheca.deliver_notifications",
        "schedule": float(settings.NOTIFICATIONS_POLL_SECONDS),
        "options": {"expires": float(settings.NOTIFICATIONS_POLL_SECONDS)},
    }}
    app.conf.beat_schedule["enqueue-harvests"] = {
        "task": "cartotheca.enqueue_harvests",
        "schedule": float(settings.HARVESTING_SCHEDULER_INTERVAL),
        "options": {"expires": float(settings.HARVESTING_SCHEDULER_INTERVAL)},
    }
    if settings.MONITORING_ENABLED:
        app.conf.beat_schedule["collect-monitoring"] = {
            "task": "cartotheca.collect_monitoring",
            "schedule": float(settings.MONITORING_COLLECTION_INTERVAL),
            # A cycle that could not start within its interval is dropped, not queued up.
            "options": {"expires": float(settings.MONITORING_COLLECTION_INTERVAL)},
        }
    return app


celery_app = make_celery(get_settings().CELERY_BROKER_URL)


@lru_cache(maxsize=1)
def worker_engine() -> Engine:
    from cartotheca.db.session import make_engine, make_sessionmaker
    from cartotheca.tasks.engine import build_engine

    settings = get_settings()
    kinds = build_kinds(MapThumbnails(), render.forget_data)
    return build_engine(settings, make_sessionmaker(make_engine(settings)), kinds)


@signals.worker_ready.connect
def _start_reaper(**_kwargs) -> None:
    """Each worker re-queues executions a dead worker left running (after their heartbeat)."""
    engine = worker_engine()
    engine.backend = CeleryBackend(engine)
    # Notices written by jobs in this worker wake a delivery task after their commit.
    from cartotheca.catalogue import events

    events.add_waker(engine.backend.request_notifications)
    interval = engine.settings.EXECUTION_HEARTBEAT_SECONDS

    def loop() -> None:
        stop = threading.Event()
        while not stop.wait(interval):
            try:
                engine.recover()
            except Exception:
                log.warning("recovery pass failed", exc_info=True)

    threading.Thread(target=loop, name="execution-reaper", daemon=True).start()


class CeleryBackend:
    def __init__(self, engine: Engine):
        self.engine = engine
        self.app = celery_app if celery_app.conf.broker_url == engine.settings.CELERY_BROKER_URL \
            else make_celery(engine.settings.CELERY_BROKER_URL)

    def enqueue(self, exec_id: str) -> None:
        self.app.send_task("cartotheca.run_execution", args=[exec_id])

    def request_notifications(self) -> None:
        # Called after a request's commit: no publish retries there, the beat's poll catches up.
        self.app.send_task("cartotheca.deliver_notifications", retry=False)

    def shutdown(self) -> None:
        pass
