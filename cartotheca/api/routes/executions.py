"""cartotheca.api.routes.executions: execution status and the execution request collection."""

from __future__ import annotations

from fastapi import APIRouter, Request

from cartotheca import siteurl
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, UserDep, list_context
from cartotheca.api.responses import JSON, no_content
from cartotheca.api.schemas.common import envelope
from cartotheca.api.schemas.executions import request_record, status_record
from cartotheca.catalogue import executions

router = APIRouter(tags=["executions"])


@router.get("/api/v2/resource-service/execution-status/{exec_id}",
            summary="Status of an asynchronous execution")
def execution_status(exec_id: str, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    execution, username = executions.get_execution(db, principal, exec_id)
    return JSON(status_record(execution, username, siteurl.url(settings), siteurl.stored_base(settings)))


@router.get("/api/v2/executionrequest", summary="The requester's execution requests")
def list_requests(request: Request, db: DbDep, principal: UserDep, settings: SettingsDep) -> JSON:
    listing = executions.list_executions(list_context(request, db, principal))
    items = [request_record(e, siteurl.base(settings), siteurl.stored_base(settings)) for e in listing.rows]
    return JSON(envelope(request, "requests", items, total=listing.total, page=listing.page,
                         page_size=listing.page_size))


@router.get("/api/v2/executionrequest/{exec_id}", summary="One execution request")
def get_request(exec_id: str, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> JSON:
    execution, _ = executions.get_execution(db, principal, exec_id)
    return JSON({"request": request_record(execution, siteurl.base(settings), siteurl.stored_base(settings))})


@router.delete("/api/v2/executionrequest/{exec_id}", status_code=204,
               summary="Forget a finished or failed execution request")
def delete_request(exec_id: str, db: DbDep, principal: UserDep):
    execution, _ = executions.get_execution(db, principal, exec_id)
    executions.forget(db, execution)
    db.commit()
    return no_content()
