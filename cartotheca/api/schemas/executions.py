"""cartotheca.api.schemas.executions: execution requests and the start object on the wire."""

from __future__ import annotations

from typing import Any

from cartotheca.api.schemas.common import iso
from cartotheca.catalogue import links
from cartotheca.db.models import ExecutionRequest


def status_url(site: str, exec_id: str) -> str:
    # No trailing slash (GeoNode); the path answers both forms here anyway.
    return f"{site}/api/v2/resource-service/execution-status/{exec_id}"


def start_object(site: str, execution: ExecutionRequest) -> dict[str, Any]:
    return {"status": execution.status, "execution_id": execution.exec_id,
            "status_url": status_url(site, execution.exec_id)}


def _timeline(execution: ExecutionRequest, site: str, stored_base: str) -> dict[str, Any]:
    """``output_params`` was written by a worker (no request): its URLs move to ``site``."""
    return {
        "status": execution.status,
        "func_name": execution.func_name,
        "created": iso(execution.created),
        "finished": iso(execution.finished),
        "last_updated": iso(execution.last_updated),
        "input_params": execution.input_params,
        "output_params": links.rebased(site, execution.output_params, stored_base),
    }


def status_record(execution: ExecutionRequest, username: str | None, site: str,
                  stored_base: str) -> dict[str, Any]:
    """The execution-status body: no wrapper, ``user`` is the user name."""
    return {"user": username, **_timeline(execution, site, stored_base), "step": execution.step,
            "log": execution.log}


def request_record(execution: ExecutionRequest, site: str, stored_base: str) -> dict[str, Any]:
    """The executionrequest record: every column, ``user`` as the integer id, and ``link``."""
    return {
        "exec_id": execution.exec_id,
        "user": execution.user_id,
        **_timeline(execution, site, stored_base),
        "geonode_resource": execution.resource_id,
        "step": execution.step,
        "log": execution.log,
        "name": execution.name,
        "action": execution.action,
        "source": execution.source,
        "link": f"{site}/api/v2/executionrequest/{execution.exec_id}",
    }
