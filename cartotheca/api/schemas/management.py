"""cartotheca.api.schemas.management: management commands and jobs on the wire (GeoNode's shapes).

Command and action answers are ``{"success", "error", "data"}``; job lists use the paginated
envelope with the key ``data``; a job detail is a bare object.
"""

from __future__ import annotations

from typing import Any

from cartotheca.api.schemas.common import iso
from cartotheca.db.models import ManagementCommandJob


def answer(data: Any, error: str | None = None) -> dict[str, Any]:
    return {"success": error is None, "error": error, "data": data}


def job_item(job: ManagementCommandJob) -> dict[str, Any]:
    return {"id": job.id, "command": job.command, "app_name": job.app_name, "user": job.user_id,
            "status": job.status, "created_at": iso(job.created_at)}


def job_detail(job: ManagementCommandJob) -> dict[str, Any]:
    return {**job_item(job), "start_time": iso(job.start_time), "end_time": iso(job.end_time),
            "args": job.args if job.args is not None else [],
            "kwargs": job.kwargs if job.kwargs is not None else {},
            "celery_result_id": job.celery_result_id, "output_message": job.output_message}


def job_status(job: ManagementCommandJob, meta: dict[str, Any]) -> dict[str, Any]:
    return {**job_detail(job), "celery_task_meta": {**meta, "date_done": iso(meta.get("date_done"))}}
