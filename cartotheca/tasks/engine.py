"""cartotheca.tasks.engine: submit executions, run them atomically, recover those a crash left.

An execution runs as one database transaction that also marks it finished, so a crash leaves
either the whole change and ``finished`` or nothing and ``running``. Running rows carry a
heartbeat; a stale one belonged to a worker that died and is retried once, then failed.
Claiming is a conditional UPDATE, so any number of processes can share the table.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol, cast

from sqlalchemy import CursorResult, Result, select, update
from sqlalchemy import Engine as Database
from sqlalchemy.orm import Session, sessionmaker

from cartotheca.db.base import utcnow
from cartotheca.db.models import ExecutionRequest
from cartotheca.errors import CartothecaError
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.tasks")

READY, RUNNING, FAILED, FINISHED = "ready", "running", "failed", "finished"
WORKER_NAME = f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class JobContext:
    """What a job gets: one session (one transaction), its inputs, and a way to report."""

    session: Session
    settings: Settings
    execution: ExecutionRequest
    params: dict[str, Any]
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    follow_ups: list[dict[str, Any]] = field(default_factory=list)
    # What the composition root hands the jobs (the catalogue's kinds); the engine never reads it.
    services: Any = None

    def database(self) -> Database:
        """What the session is bound to, for the writes a job commits on its own (states that
        pollers must see at once, whatever becomes of the job's transaction)."""
        bind = self.session.get_bind()
        if not isinstance(bind, Database):
            raise TypeError("an execution's session is bound to an engine")
        return bind

    def step(self, name: str) -> None:
        self.execution.step = name
        delay = self.settings.EXECUTION_STEP_DELAY
        if delay:
            # Only for exercising crash recovery: stretches an execution so a test can kill it.
            threading.Event().wait(delay)

    def on_failure(self, cleanup: Callable[[], None]) -> None:
        """Register a compensating action (e.g. remove written files) run if the job fails."""
        self.cleanups.append(cleanup)

    def follow_up(self, func_name: str, action: str, params: dict[str, Any],
                  resource_id: int | None = None) -> None:
        """Ask for another execution, created in this job's transaction (so only if it commits)
        and started once it has."""
        self.follow_ups.append({"func_name": func_name, "action": action, "input_params": params,
                                "resource_id": resource_id})


Job = Callable[[JobContext], dict[str, Any]]
# What to record when recovery gives an execution up for good (its job never ran its own failure
# handling): gets the recovery's session, whose transaction also fails the execution.
Abandon = Callable[[Session, Settings, dict[str, Any], str], None]


class Backend(Protocol):
    def enqueue(self, exec_id: str) -> None: ...

    def shutdown(self) -> None: ...


class Engine:
    """Runs executions of the jobs it is given; knows no job itself. The job table and the
    backend are put in by the composition root (the app, the CLI, the Celery worker)."""

    def __init__(self, settings: Settings, sessions: sessionmaker[Session], jobs: Mapping[str, Job],
                 abandoned: Mapping[str, Abandon] | None = None, services: Any = None):
        self.settings = settings
        self.services = services
        self.sessions = sessions
        self.jobs = dict(jobs)
        self.abandoned = dict(abandoned or {})
        self.backend: Backend | None = None

    # -- submitting ------------------------------------------------------------------------

    def submit(self, session: Session, *, user_id: int | None, func_name: str, action: str,
               input_params: dict[str, Any], resource_id: int | None = None,
               source: str | None = None, name: str | None = None) -> ExecutionRequest:
        """Add an execution to ``session``; call ``dispatch`` once the caller has committed."""
        if func_name not in self.jobs:
            raise CartothecaError(f"unknown job {func_name}")
        execution = ExecutionRequest(
            user_id=user_id, func_name=func_name, action=action, source=source, name=name,
            input_params=input_params, output_params={}, resource_id=resource_id,
            status=READY,
        )
        session.add(execution)
        session.flush()
        return execution

    def dispatch(self, exec_id: str) -> None:
        if self.backend is not None:
            self.backend.enqueue(exec_id)

    # -- running ---------------------------------------------------------------------------

    def claim(self, exec_id: str) -> bool:
        with self.sessions() as session:
            now = utcnow()
            result = session.execute(
                update(ExecutionRequest)
                .where(ExecutionRequest.exec_id == exec_id, ExecutionRequest.status == READY)
                .values(status=RUNNING, attempts=ExecutionRequest.attempts + 1,
                        worker=WORKER_NAME, heartbeat=now, last_updated=now)
            )
            session.commit()
            return _rowcount(result) == 1

    def run(self, exec_id: str) -> str | None:
        """Claim and run one execution; returns its final status, or None if not claimed."""
        if not self.claim(exec_id):
            return None
        beat = Heartbeat(self.sessions, exec_id, self.settings.EXECUTION_HEARTBEAT_SECONDS)
        beat.start()
        try:
            return self._run_claimed(exec_id)
        finally:
            beat.stop()

    def _run_claimed(self, exec_id: str) -> str:
        with self.sessions() as session:
            execution = session.scalars(select(ExecutionRequest).where(
                ExecutionRequest.exec_id == exec_id)).one()
            job = self.jobs[execution.func_name]
            ctx = JobContext(session, self.settings, execution, dict(execution.input_params or {}),
                             services=self.services)
            try:
                output = job(ctx)
                execution.output_params = output or {}
                execution.status = FINISHED
                execution.step = None
                execution.finished = execution.last_updated = utcnow()
                follow_ups = [self.submit(session, user_id=execution.user_id, **f).exec_id
                              for f in ctx.follow_ups]
                session.commit()
                for follow_up in follow_ups:
                    self.dispatch(follow_up)
                return FINISHED
            except Exception as exc:  # every failure ends as a recorded "failed"
                session.rollback()
                for cleanup in reversed(ctx.cleanups):
                    try:
                        cleanup()
                    except Exception:
                        log.exception("cleanup of execution %s failed", exec_id)
                message = exc.message if isinstance(exc, CartothecaError) else f"{type(exc).__name__}: {exc}"
                if not isinstance(exc, CartothecaError):
                    log.error("execution %s failed\n%s", exec_id, traceback.format_exc())
                self.fail(exec_id, message)
                return FAILED

    def fail(self, exec_id: str, message: str) -> None:
        with self.sessions() as session:
            now = utcnow()
            session.execute(
                update(ExecutionRequest).where(ExecutionRequest.exec_id == exec_id).values(
                    status=FAILED, log=message, finished=now, last_updated=now,
                    output_params={"errors": [message]},
                )
            )
            session.commit()

    # -- recovery --------------------------------------------------------------------------

    def recover(self) -> list[str]:
        """Retry (once) or fail the running executions whose worker stopped beating."""
        cutoff = utcnow() - timedelta(seconds=3 * self.settings.EXECUTION_HEARTBEAT_SECONDS)
        retried: list[str] = []
        with self.sessions() as session:
            stale = session.execute(
                select(ExecutionRequest.exec_id, ExecutionRequest.attempts, ExecutionRequest.func_name,
                       ExecutionRequest.input_params).where(
                    ExecutionRequest.status == RUNNING, ExecutionRequest.heartbeat < cutoff)
            ).all()
            for exec_id, attempts, func_name, params in stale:
                retry = attempts < self.settings.EXECUTION_MAX_ATTEMPTS
                now = utcnow()
                reason = f"worker lost during attempt {attempts}; not retried"
                values: dict[str, Any] = (
                    {"status": READY, "log": f"worker lost during attempt {attempts}; retrying"}
                    if retry else
                    {"status": FAILED, "finished": now, "output_params": {"errors": [reason]},
                     "log": reason}
                )
                result = session.execute(
                    update(ExecutionRequest).where(
                        ExecutionRequest.exec_id == exec_id, ExecutionRequest.status == RUNNING,
                        ExecutionRequest.heartbeat < cutoff,
                    ).values(last_updated=now, **values)
                )
                changed = _rowcount(result)
                if changed and retry:
                    retried.append(exec_id)
                elif changed and func_name in self.abandoned:
                    self._abandon(session, exec_id, func_name, dict(params or {}), reason)
            session.commit()
        for exec_id in retried:
            self.dispatch(exec_id)
        return retried

    def _abandon(self, session: Session, exec_id: str, func_name: str, params: dict[str, Any],
                 reason: str) -> None:
        """Record what the given-up job stood for (e.g. its upload becomes INVALID) in the same
        transaction as its failure; if that fails, the execution is still failed."""
        try:
            with session.begin_nested():
                self.abandoned[func_name](session, self.settings, params, reason)
        except Exception:
            log.exception("recording the end of abandoned execution %s failed", exec_id)

    def ready_ids(self, limit: int = 50) -> list[str]:
        with self.sessions() as session:
            return list(session.scalars(
                select(ExecutionRequest.exec_id).where(ExecutionRequest.status == READY)
                .order_by(ExecutionRequest.created).limit(limit)
            ))


def _rowcount(result: Result[Any]) -> int:
    """The rows an UPDATE changed: a session answers DML with a ``CursorResult``, typed ``Result``."""
    return cast(CursorResult[Any], result).rowcount


class Heartbeat:
    """Refreshes an execution's heartbeat from a side thread while it runs."""

    def __init__(self, sessions: sessionmaker[Session], exec_id: str, interval: float):
        self.sessions, self.exec_id, self.interval = sessions, exec_id, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"heartbeat-{exec_id[:8]}",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 1)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                with self.sessions() as session:
                    session.execute(
                        update(ExecutionRequest).where(
                            ExecutionRequest.exec_id == self.exec_id,
                            ExecutionRequest.status == RUNNING,
                        ).values(heartbeat=utcnow())
                    )
                    session.commit()
            except Exception:
                log.warning("heartbeat of %s not written", self.exec_id, exc_info=True)
