"""cartotheca.api.routes.management: management commands over HTTP and their jobs (staff only).

Every jobs route exists twice, under ``management/`` and under ``management/commands/{cmd}/``
(where only that command's jobs are seen), as GeoNode routes them.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from cartotheca.api.deps import DbDep, StaffDep, app_state, list_context, read_body
from cartotheca.api.errors import error_body
from cartotheca.api.responses import JSON
from cartotheca.api.schemas.common import envelope
from cartotheca.api.schemas.management import answer, job_detail, job_item, job_status
from cartotheca.errors import InvalidInput, NotFound
from cartotheca.management import jobs
from cartotheca.management.commands import COMMANDS, get_command

router = APIRouter(tags=["management"])
BASE = "/api/v2/management"
PREFIXES = (BASE, BASE + "/commands/{cmd}")


def _command_not_found() -> JSON:
    # GeoNode's body is {"success": false, "error": ...}; the error triple is kept beside it.
    message = "Command not found"
    return JSON({**error_body(404, [message], "not_found"), "error": message}, status_code=404)


@router.get(f"{BASE}/commands", summary="The management commands exposed over HTTP")
def list_commands(_: StaffDep) -> JSON:
    return JSON(answer(list(COMMANDS)))


@router.get(f"{BASE}/commands/{{cmd}}", summary="The help of one management command")
def command_help(cmd: str, _: StaffDep) -> JSON:
    try:
        command = get_command(cmd)
    except NotFound:
        return _command_not_found()
    return JSON(answer(command.help_text()))


def _create(request: Request, db, principal, body, cmd: str | None) -> JSON:
    job, autostart = jobs.new_job(db, principal, cmd, body)
    tasks = app_state(request).tasks
    exec_id = jobs.start_job(db, job, tasks.submit) if autostart else None
    db.commit()
    if exec_id is not None:
        tasks.dispatch(exec_id)
        db.refresh(job)  # an in-process worker may already have moved it on
    return JSON(answer(job_detail(job)), status_code=201)


@router.post(f"{BASE}/commands", summary="Create (and by default start) a job")
def create_job(request: Request, db: DbDep, principal: StaffDep, body=Depends(read_body)) -> JSON:
    return _create(request, db, principal, body, None)


@router.post(f"{BASE}/commands/{{cmd}}", summary="Create (and by default start) a job of this command")
def create_command_job(cmd: str, request: Request, db: DbDep, principal: StaffDep,
                       body=Depends(read_body)) -> JSON:
    return _create(request, db, principal, body, cmd)


def _register_jobs(prefix: str) -> None:
    scoped = "{cmd}" in prefix

    def command_of(request: Request) -> str | None:
        return request.path_params.get("cmd") if scoped else None

    @router.get(f"{prefix}/jobs", summary="Management command jobs (filters: status, command, app_name, "
                                          "user, user__username, async_result_id)")
    def list_jobs(request: Request, db: DbDep, principal: StaffDep) -> JSON:
        listing = jobs.list_jobs(list_context(request, db, principal), command_of(request))
        return JSON(envelope(request, "data", [job_item(j) for j in listing.rows], total=listing.total,
                             page=listing.page, page_size=listing.page_size))

    @router.post(f"{prefix}/jobs", summary="Create (and by default start) a job")
    def create_job(request: Request, db: DbDep, principal: StaffDep, body=Depends(read_body)) -> JSON:
        return _create(request, db, principal, body, command_of(request))

    @router.get(f"{prefix}/jobs/{{job_id}}", summary="One job")
    def get_job(job_id: str, request: Request, db: DbDep, _: StaffDep) -> JSON:
        return JSON(job_detail(jobs.get_job(db, job_id, command_of(request))))

    @router.get(f"{prefix}/jobs/{{job_id}}/status", summary="One job with its task's state")
    def get_status(job_id: str, request: Request, db: DbDep, _: StaffDep) -> JSON:
        job = jobs.get_job(db, job_id, command_of(request))
        return JSON(job_status(job, jobs.task_meta(db, job)))

    @router.patch(f"{prefix}/jobs/{{job_id}}/start", summary="Start a created job")
    def start(job_id: str, request: Request, db: DbDep, _: StaffDep) -> JSON:
        job = jobs.get_job(db, job_id, command_of(request))
        tasks = app_state(request).tasks
        try:
            exec_id = jobs.start_job(db, job, tasks.submit)
        except InvalidInput as exc:
            db.rollback()
            job = jobs.get_job(db, job_id)
            body = {**error_body(400, exc.messages, exc.code), **answer(job_detail(job), exc.message)}
            return JSON(body, status_code=400)
        db.commit()
        tasks.dispatch(exec_id)
        db.refresh(job)
        return JSON(answer(job_detail(job)))

    @router.patch(f"{prefix}/jobs/{{job_id}}/stop", summary="Stop a job (a running one at its next step)")
    def stop(job_id: str, request: Request, db: DbDep, _: StaffDep) -> JSON:
        job = jobs.get_job(db, job_id, command_of(request))
        jobs.stop_job(db, job)
        db.commit()
        db.refresh(job)
        return JSON(answer(job_detail(job)))


for _prefix in PREFIXES:
    _register_jobs(_prefix)
