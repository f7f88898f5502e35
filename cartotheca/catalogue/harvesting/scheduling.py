"""cartotheca.catalogue.harvesting.scheduling: start the scheduled actions that are due.

``enqueue_due_runs`` is the one rule, called by the embedded scheduler thread and by the Celery
beat task alike. An action is due when the harvester is scheduled, ready, and the action's
frequency (minutes) has passed since it last started; the claim is a conditional UPDATE on both
the status and that time, so of several processes looking at once exactly one starts it.
Availability is checked first, then the harvestable list refreshed, then a harvest, one action
per harvester at a time.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from cartotheca.catalogue.harvesting.harvesters import (
    ACTIONS,
    CHECKING,
    HARVESTING,
    READY,
    REFRESHING,
    claim,
    record_execution,
)
from cartotheca.db.base import utcnow
from cartotheca.db.models import ExecutionRequest, Harvester
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.harvesting")
STUCK_AFTER = dt.timedelta(minutes=10)  # busy this long with no live execution: released

# action → (the time it last started, its frequency in minutes)
SCHEDULE = (
    (CHECKING, Harvester.last_checked_availability, Harvester.check_availability_frequency),
    (REFRESHING, Harvester.last_checked_harvestable_resources,
     Harvester.refresh_harvestable_resources_update_frequency),
    (HARVESTING, Harvester.last_harvesting_started, Harvester.harvesting_session_update_frequency),
)


def release_stuck(session: Session, now: dt.datetime) -> list[int]:
    """Put back to ready the harvesters left busy by an execution that no longer runs (failed
    for good after its worker died): otherwise they would never be scheduled again. Harvesters
    are read before executions, and only those unchanged for a while are released, so an
    action claimed meanwhile (status and execution commit together) is never mistaken for one."""
    busy = session.execute(select(Harvester.id, Harvester.status).where(
        Harvester.status != READY, Harvester.last_updated < now - STUCK_AFTER)).all()
    if not busy:
        return []
    active = {params.get("harvester_id") for params in session.scalars(
        select(ExecutionRequest.input_params).where(
            ExecutionRequest.func_name.in_([job for job, _ in ACTIONS.values()]),
            ExecutionRequest.status.in_(("ready", "running"))))
        if isinstance(params, dict)}
    released = []
    for harvester_id, status in busy:
        if harvester_id in active:
            continue
        result = session.execute(update(Harvester).where(
            Harvester.id == harvester_id, Harvester.status == status,
            Harvester.last_updated < now - STUCK_AFTER).values(status=READY, last_updated=now)
            .execution_options(synchronize_session=False))
        if result.rowcount:
            released.append(harvester_id)
    return released


def enqueue_due_runs(session: Session, settings: Settings, now: dt.datetime) -> list[str]:
    """Claim and record every due action; returns the execution ids to dispatch after the
    caller commits."""
    release_stuck(session, now)
    started: list[str] = []
    harvesters = session.execute(select(
        Harvester.id, *(column for _, column, _ in SCHEDULE),
        *(frequency for _, _, frequency in SCHEDULE),
    ).where(Harvester.scheduling_enabled.is_(True), Harvester.status == READY)).all()
    for row in harvesters:
        harvester_id, last_times, frequencies = row[0], row[1:4], row[4:7]
        for (action, column, _), last, minutes in zip(SCHEDULE, last_times, frequencies,
                                                      strict=True):
            if last is not None and last > now - dt.timedelta(minutes=minutes):
                continue
            unchanged = column.is_(None) if last is None else or_(column.is_(None), column == last)
            if claim(session, harvester_id, action, now, unchanged):
                started.append(record_execution(session, harvester_id, action, None))
            break
    return started


class Scheduler:
    """The embedded scheduler: a thread that looks for due actions every interval.

    Its thread is named like the engine's (``execution-*``): it is part of running executions,
    and statement counts of requests leave such threads out.
    """

    def __init__(self, settings: Settings, sessions: sessionmaker[Session],
                 dispatch: Callable[[str], None]):
        self.settings, self.sessions, self.dispatch = settings, sessions, dispatch
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="execution-scheduler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def run_once(self) -> list[str]:
        with self.sessions() as session:
            started = enqueue_due_runs(session, self.settings, utcnow())
            session.commit()
        for exec_id in started:
            self.dispatch(exec_id)
        return started

    def _loop(self) -> None:
        while not self._stop.wait(self.settings.HARVESTING_SCHEDULER_INTERVAL):
            try:
                self.run_once()
            except Exception:
                log.warning("harvesting schedule pass failed", exc_info=True)
