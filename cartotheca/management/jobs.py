"""cartotheca.management.jobs: management command jobs: create, start, stop, list, and run one.

A job runs through the execution engine (in-process worker or Celery): starting it submits an
execution whose id is the job's ``celery_result_id``. Stopping is cooperative: a queued job is
finished as REVOKED at once (the worker then skips it); a running one is flagged, and the
command stops at its next checkpoint between steps. Statuses keep GeoNode's values; how a
finished job ended (SUCCESS, FAILURE, REVOKED: Celery's names) is its ``outcome``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from cartotheca.catalogue import query
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query import Field, FieldMap, FilterTerm, ListContext, Listing
from cartotheca.db.base import utcnow
from cartotheca.db.models import ExecutionRequest, ManagementCommandJob, User
from cartotheca.errors import CartothecaError, InvalidInput, InvalidQuery, NotFound
from cartotheca.management.commands import COMMANDS
from cartotheca.management.registry import CommandRun, Stopped

if TYPE_CHECKING:
    from cartotheca.tasks.engine import JobContext

Job = ManagementCommandJob
CREATED, QUEUED, STARTED, FINISHED = "CREATED", "QUEUED", "STARTED", "FINISHED"
STATUSES = (CREATED, QUEUED, STARTED, FINISHED)
SUCCESS, FAILURE, REVOKED = "SUCCESS", "FAILURE", "REVOKED"
JOB_FUNC = "management_command"
SOURCE = "management_commands_http"

JOB_FIELDS = FieldMap(
    fields={
        "id": Field(Job.id, kind=int), "pk": Field(Job.id, kind=int),
        "command": Field(Job.command), "app_name": Field(Job.app_name), "status": Field(Job.status),
        "user": Field(Job.user_id, kind=int),
        "user__username": Field(User.username, sortable=False,
                                via=lambda cond: Job.user_id.in_(select(User.id).where(cond))),
        "celery_result_id": Field(Job.celery_result_id), "async_result_id": Field(Job.celery_result_id),
        "created_at": Field(Job.created_at), "start_time": Field(Job.start_time),
        "end_time": Field(Job.end_time),
    },
    default_sort=(Job.created_at.desc(),),
    tiebreak=Job.id,
)
# GeoNode's job filters are plain query parameters (django-filter), not filter{...}.
PLAIN_FILTERS = ("status", "command", "app_name", "user", "user__username", "celery_result_id",
                 "async_result_id")


# -- creating and changing ---------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    """Form bodies carry args/kwargs as JSON text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _autostart(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    raise InvalidInput("autostart: Must be a valid boolean.")


def new_job(session: Session, principal: Principal, command_name: str | None, body: Any
            ) -> tuple[ManagementCommandJob, bool]:
    """A CREATED job from a POST body ``{command?, args, kwargs, autostart}`` (the command also
    from the URL); returns it and whether to start it now. The options are checked here."""
    if not isinstance(body, Mapping):
        raise InvalidInput("Expected a JSON object")
    name = body.get("command", command_name)
    if name is None:
        raise InvalidInput("This field may not be null.")
    command = COMMANDS.get(name) if isinstance(name, str) else None
    if command is None:
        raise InvalidInput("Command not found")
    args = _json_value(body.get("args", []))
    kwargs = _json_value(body.get("kwargs", {}))
    if not isinstance(args, list):
        raise InvalidInput("args must be a list")
    if not isinstance(kwargs, dict):
        raise InvalidInput("kwargs must be a dict")
    command.parse(args, kwargs)
    autostart = _autostart(body.get("autostart", True))
    job = Job(command=command.name, app_name=command.app_name, user_id=principal.id, status=CREATED,
              args=args, kwargs=kwargs)
    session.add(job)
    session.flush()
    return job, autostart


Submit = Callable[..., ExecutionRequest]


def start_job(session: Session, job: ManagementCommandJob, submit: Submit) -> str:
    """Queue a CREATED job as an execution (``submit`` is the engine's); the caller commits and
    then dispatches the returned execution id."""
    claimed = session.execute(update(Job).where(Job.id == job.id, Job.status == CREATED)
                              .values(status=QUEUED, modified_at=utcnow()))
    if claimed.rowcount != 1:
        session.refresh(job)
        raise InvalidInput(f'You can not start the job {job.id} because its status is "{job.status}".')
    execution = submit(session, user_id=job.user_id, func_name=JOB_FUNC, action="unknown",
                       input_params={"job_id": job.id, "command": job.command}, source=SOURCE,
                       name=job.command)
    job.status = QUEUED
    job.celery_result_id = execution.exec_id
    return execution.exec_id


def stop_job(session: Session, job: ManagementCommandJob) -> None:
    """A job not yet running ends REVOKED now; a running one is asked to stop at its next step."""
    now = utcnow()
    ended = session.execute(
        update(Job).where(Job.id == job.id, Job.status.in_((CREATED, QUEUED)))
        .values(status=FINISHED, outcome=REVOKED, end_time=now, stop_requested=now, modified_at=now,
                output_message="Stopped before it started.")
    )
    if ended.rowcount:
        return
    execution_ended = select(ExecutionRequest.id).where(
        ExecutionRequest.exec_id == Job.celery_result_id, ExecutionRequest.status.in_(("finished", "failed")))
    # A job whose execution ended without finishing it (its worker was lost for good) ends now.
    orphan = session.execute(
        update(Job).where(Job.id == job.id, Job.status == STARTED, execution_ended.exists())
        .values(status=FINISHED, outcome=REVOKED, end_time=now, stop_requested=now, modified_at=now,
                output_message="Stopped: its worker was lost.")
    )
    if orphan.rowcount == 0:
        session.execute(update(Job).where(Job.id == job.id, Job.status == STARTED,
                                          Job.stop_requested.is_(None))
                        .values(stop_requested=now, modified_at=now))


# -- reading -----------------------------------------------------------------------------------


def get_job(session: Session, raw_id: Any, command: str | None = None) -> ManagementCommandJob:
    try:
        job_id = int(raw_id)
    except (TypeError, ValueError):
        raise NotFound() from None
    job = session.get(Job, job_id)
    if job is None or (command is not None and job.command != command):
        raise NotFound()
    return job


def list_jobs(ctx: ListContext, command: str | None = None) -> Listing:
    stmt = select(Job)
    if command is not None:
        stmt = stmt.where(Job.command == command)
    terms = [FilterTerm(name, name, "eq", False, tuple(ctx.params[name]))
             for name in PLAIN_FILTERS if ctx.params.get(name)]
    for term in terms:
        if term.path == "status" and term.values[0] not in STATUSES:
            raise InvalidQuery(f"Select a valid choice. {term.values[0]} is not one of the available "
                               "choices.", extra=["parameter: status"])
    plain = [query.compile_term(t, JOB_FIELDS) for t in terms]
    return query.page(ctx.session, stmt, ctx.query, JOB_FIELDS, where=plain)


CELERY_STATES = {"ready": "PENDING", "running": "STARTED", "finished": "SUCCESS", "failed": "FAILURE"}


def task_meta(session: Session, job: ManagementCommandJob) -> dict[str, Any]:
    """What GeoNode reads from Celery's result backend, from the job's execution."""
    empty = {"date_done": None, "status": None, "traceback": None, "worker": None}
    if not job.celery_result_id:
        return empty
    execution = session.scalar(select(ExecutionRequest).where(
        ExecutionRequest.exec_id == job.celery_result_id))
    if execution is None:
        return empty
    # The job's outcome is written with its end (before the engine records the execution's).
    status = job.outcome or CELERY_STATES.get(execution.status)
    traceback = None
    if status == FAILURE:
        traceback = execution.log if execution.status == "failed" and execution.log else job.output_message
    return {"date_done": job.end_time if job.outcome else execution.finished, "status": status,
            "traceback": traceback, "worker": execution.worker}


# -- running (the engine's job) ----------------------------------------------------------------


def _set(bind: Engine, job_id: int, *conditions: Any, **values: Any) -> bool:
    """Change the job in its own committed transaction (visible to pollers at once)."""
    with Session(bind=bind) as session:
        result = session.execute(update(Job).where(Job.id == job_id, *conditions)
                                 .values(modified_at=utcnow(), **values))
        session.commit()
        return result.rowcount == 1


def _stop_requested(bind: Engine, job_id: int) -> bool:
    with Session(bind=bind) as session:
        return session.scalar(select(Job.stop_requested).where(Job.id == job_id)) is not None


def run_job(ctx: JobContext) -> dict[str, Any]:
    """Run the job of this execution: STARTED, the command with its checkpoints, FINISHED."""
    job_id = ctx.params["job_id"]
    bind = ctx.database()
    # STARTED too: the engine runs an execution again when its worker was lost mid-run.
    if not _set(bind, job_id, Job.status.in_((QUEUED, STARTED)), status=STARTED, start_time=utcnow()):
        return {"output": {"job_id": job_id, "outcome": REVOKED}}  # stopped before it ran
    job = ctx.session.get(Job, job_id)
    command = COMMANDS[job.command]
    lines: list[str] = []

    def checkpoint(step: str) -> None:
        ctx.step(step)
        if _stop_requested(bind, job_id):
            raise Stopped()

    def failed() -> None:
        _set(bind, job_id, status=FINISHED, outcome=FAILURE, end_time=utcnow(),
             output_message="\n".join(lines))

    ctx.on_failure(failed)
    run = CommandRun(ctx.session, ctx.settings, write=lines.append, checkpoint=checkpoint)
    outcome = SUCCESS
    try:
        checkpoint(f"start {command.name}")
        command.run(run, command.parse(job.args or [], job.kwargs or {}))
    except Stopped:
        ctx.session.rollback()  # the step in progress; the steps committed before it stay
        outcome = REVOKED
        lines.append("Stopped.")
    except Exception as exc:
        lines.append(f"Error: {exc.message if isinstance(exc, CartothecaError) else exc}")
        raise
    job = ctx.session.get(Job, job_id)
    job.status, job.outcome, job.end_time = FINISHED, outcome, utcnow()
    job.output_message = "\n".join(lines)
    return {"output": {"job_id": job_id, "outcome": outcome}}
