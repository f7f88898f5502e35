"""cartotheca.catalogue.executions: who may see which execution requests, and listing them."""

from __future__ import annotations

import datetime as dt
import uuid as uuid_mod

from sqlalchemy import select

from cartotheca.catalogue import query
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query import Field, FieldMap, ListContext, Listing
from cartotheca.db.models import ExecutionRequest, User
from cartotheca.errors import Conflict, NotAuthenticated, NotFound, PermissionDenied

E = ExecutionRequest
EXECUTION_FIELDS = FieldMap(
    fields={
        "action": Field(E.action), "source": Field(E.source), "status": Field(E.status),
        "func_name": Field(E.func_name), "name": Field(E.name), "exec_id": Field(E.exec_id),
        "step": Field(E.step), "user": Field(E.user_id, kind=int),
        "geonode_resource": Field(E.resource_id, kind=int),
        "created": Field(E.created, kind=dt.datetime),
        "finished": Field(E.finished, kind=dt.datetime),
        "last_updated": Field(E.last_updated, kind=dt.datetime),
        "pk": Field(E.id, kind=int), "id": Field(E.id, kind=int),
    },
    search_fields={"name": E.name, "func_name": E.func_name, "action": E.action},
    default_search_fields=("name", "func_name"),
    default_sort=(E.id.asc(),),
    tiebreak=E.id,
)


def list_executions(ctx: ListContext) -> Listing:
    if ctx.principal.id is None:
        raise NotAuthenticated()
    stmt = select(E)
    if not ctx.principal.is_superuser:
        stmt = stmt.where(E.user_id == ctx.principal.id)
    return query.page(ctx.session, stmt, ctx.query, EXECUTION_FIELDS)


def get_execution(session, principal: Principal, raw_id: str) -> tuple[ExecutionRequest, str | None]:
    """One execution for its creator or an administrator; the creator's user name with it."""
    try:
        exec_id = str(uuid_mod.UUID(raw_id))
    except ValueError:
        raise NotFound(f"uuid provided does not exists: {raw_id}") from None
    row = session.execute(
        select(E, User.username).outerjoin(User, User.id == E.user_id).where(E.exec_id == exec_id)
    ).first()
    if row is None:
        raise NotFound(f"uuid provided does not exists: {raw_id}")
    execution, username = row
    if principal.id is None:
        raise NotAuthenticated()
    if not principal.is_superuser and execution.user_id != principal.id:
        raise PermissionDenied()
    return execution, username


def forget(session, execution: ExecutionRequest) -> None:
    if execution.status in ("ready", "running"):
        raise Conflict("The execution has not ended yet")
    session.delete(execution)
    session.flush()
