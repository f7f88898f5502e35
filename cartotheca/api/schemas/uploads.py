"""cartotheca.api.schemas.uploads: upload records and the legacy final-step answer on the wire."""

from __future__ import annotations

from typing import Any

from cartotheca.api.schemas.common import iso
from cartotheca.catalogue.uploads import PROCESSED, effective_state, progress_of
from cartotheca.db.models import ExecutionRequest, Resource, Upload


def upload_record(upload: Upload, execution: ExecutionRequest | None, site: str) -> dict[str, Any]:
    """The 4.x upload record (spec §2.5, compat §9); ``progress`` follows the state."""
    state, error = effective_state(upload, execution)
    complete = bool(upload.complete) and state == PROCESSED
    link = f"{site}/api/v2/uploads/{upload.id}"
    return {
        "id": upload.id,
        "name": upload.name,
        "title": upload.title,
        "date": iso(upload.date),
        "create_date": iso(upload.create_date),
        "user": upload.user_id,
        "state": state,
        "progress": progress_of(state, complete),
        "complete": complete,
        "import_id": upload.id,
        "execution_id": upload.exec_id,
        "error": error,
        "resume_url": None,
        "delete_url": link,
        "import_url": f"{site}/upload/final?id={upload.id}",
        "detail_url": f"/catalogue/#/dataset/{upload.resource_id}" if upload.resource_id else None,
        "resource": upload.resource_id,
        "uploadfile_set": [dict(item) for item in upload.files or []],
        "link": link,
    }


def final_step(upload: Upload, execution: ExecutionRequest | None, resource: Resource | None,
               site: str) -> dict[str, Any]:
    """The 3.x ``/upload/final`` answer: the dataset once processed, else where the import is."""
    state, error = effective_state(upload, execution)
    if state == PROCESSED and resource is not None:
        bbox = ",".join(str(v) for v in (resource.bbox_x0, resource.bbox_y0, resource.bbox_x1,
                                         resource.bbox_y1))
        return {"status": "finished", "id": resource.id,
                "url": f"{site}/catalogue/#/dataset/{resource.id}", "bbox": bbox,
                "crs": {"type": "name", "properties": resource.srid}, "success": True}
    status = {"INVALID": "failed", "READY": "pending"}.get(state, "running")
    body: dict[str, Any] = {"status": status, "id": upload.id, "url": None, "bbox": None,
                            "crs": None, "success": False}
    if error:
        body["errors"] = [error]
    return body
