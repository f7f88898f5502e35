"""cartotheca.api.routes.csw: the catalogue's CSW endpoint, ``/catalogue/csw``.

KVP requests come as GET (or a POSTed form), XML requests as a POST body; pycsw answers in a
worker thread, with what the requester may view. What is refused before pycsw runs, and a
database that is unavailable, are answered by ``ows.dispatch``'s exception reports.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from cartotheca.api.bulkhead import Overloaded
from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep, heavy_work
from cartotheca.catalogue.csw import service
from cartotheca.catalogue.csw.repository import RequestScope
from cartotheca.db.session import is_unavailable, reads_outside_transactions
from cartotheca.errors import OWSException
from cartotheca.ows import dispatch

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)
FORM = "application/x-www-form-urlencoded"


@router.api_route(f"/{service.PATH}", methods=["GET", "POST"])
async def csw(request: Request, db: DbDep, principal: PrincipalDep, settings: SettingsDep) -> Response:
    params = dict(request.query_params)
    body = None
    if request.method == "POST":
        if request.headers.get("content-type", "").split(";")[0].strip().lower() == FORM:
            params.update({key: str(value) for key, value in (await request.form()).items()})
        else:
            body = await request.body()
    scope = RequestScope(db, principal, settings)
    version = service.report_version(params, body)
    try:
        async with heavy_work(request):
            answer = await run_in_threadpool(_answer, scope, params, body)
    except OWSException as exc:
        return dispatch.report(exc, "CSW", version)
    except Overloaded:
        return dispatch.unavailable("CSW", version, settings.OVERLOAD_RETRY_AFTER)
    if scope.unavailable:
        log.warning("database unavailable for CSW: %s", scope.unavailable[0])
        return dispatch.unavailable("CSW", version)
    return Response(answer.body, status_code=answer.status, media_type=answer.content_type)


def _answer(scope: RequestScope, params: dict[str, str], body: bytes | None) -> service.CswResponse:
    """pycsw's answer, its reads outside a transaction: none stays open while it writes XML."""
    try:
        reads_outside_transactions(scope.session)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        scope.unavailable.append(exc)
        return service.CswResponse(503, "text/plain", b"")
    return service.handle(scope, params, body)
