"""cartotheca.tasks.backends.celery: the Celery app and the one task that runs an execution.

Workers start with ``cartotheca worker``; the broker is CELERY_BROKER_URL (Redis or RabbitMQ).
A server only sends tasks by name (``CeleryBackend``); a worker's app (``worker_app``) also runs
them, with the engine and the periodic tasks its start composed. This module knows executions
and task names only: what a periodic task does is given to it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from celery import Celery, signals

from cartotheca.tasks.engine import Engine

log = logging.getLogger("cartotheca.tasks")

RUN_EXECUTION = "cartotheca.run_execution"
DELIVER_NOTIFICATIONS = "cartotheca.deliver_notifications"


@dataclass(frozen=True)
class Periodic:
    """A task beat schedules once per ``interval`` seconds for all workers.

    A run that could not start within its interval is dropped, not queued up (its message
    expires), so each ``run`` must claim its work in the database to be safe under two beats.
    """

    task: str  # the task's name, e.g. "cartotheca.enqueue_harvests"
    schedule: str  # its entry in the beat schedule, e.g. "enqueue-harvests"
    interval: float
    run: Callable[[], None]


def make_celery(broker_url: str, periodic: Sequence[Periodic] = ()) -> Celery:
    """An app on ``broker_url`` that sends tasks (and beats ``periodic``); a worker's app also
    registers the execution task (``worker_app``)."""
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
    app.conf.beat_schedule = {}
    for job in periodic:
        app.task(name=job.task, ignore_result=True)(job.run)
        app.conf.beat_schedule[job.schedule] = {
            "task": job.task, "schedule": float(job.interval),
            "options": {"expires": float(job.interval)},
        }
    return app


class CeleryBackend:
    """Sends executions to the workers through the broker."""

    def __init__(self, engine: Engine, app: Celery | None = None):
        self.engine = engine
        self.app = app or make_celery(engine.settings.CELERY_BROKER_URL)

    def enqueue(self, exec_id: str) -> None:
        self.app.send_task(RUN_EXECUTION, args=[exec_id])

    def request_notifications(self) -> None:
        # Called after a request's commit: no publish retries there, the beat's poll catches up.
        self.app.send_task(DELIVER_NOTIFICATIONS, retry=False)

    def shutdown(self) -> None:
        pass


def worker_app(engine: Engine, periodic: Sequence[Periodic],
               on_ready: Sequence[Callable[[CeleryBackend], None]] = ()) -> Celery:
    """The app a worker runs: executions of ``engine``, the ``periodic`` tasks, and a reaper
    started once the worker is ready; ``on_ready`` gets the backend then too. The engine's
    backend is this app, so follow-ups and recovered executions go through the broker."""
    app = make_celery(engine.settings.CELERY_BROKER_URL, periodic)

    def run_execution(exec_id: str) -> None:
        engine.run(exec_id)

    app.task(name=RUN_EXECUTION)(run_execution)
    backend = CeleryBackend(engine, app)
    engine.backend = backend

    def ready(**_kwargs) -> None:
        for callback in on_ready:
            callback(backend)
        _start_reaper(engine)

    # weak=False: the receiver is this closure, which nothing else keeps alive.
    signals.worker_ready.connect(ready, weak=False)
    return app


def _start_reaper(engine: Engine) -> None:
    """Each worker re-queues executions a dead worker left running (after their heartbeat)."""
    interval = engine.settings.EXECUTION_HEARTBEAT_SECONDS

    def loop() -> None:
        stop = threading.Event()
        while not stop.wait(interval):
            try:
                engine.recover()
            except Exception:
                log.warning("recovery pass failed", exc_info=True)

    threading.Thread(target=loop, name="execution-reaper", daemon=True).start()
