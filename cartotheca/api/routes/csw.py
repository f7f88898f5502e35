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

from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep
from cartotheca.catalogue.csw import service
from cartotheca.catalogue.csw.repository import RequestScope
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
    try:
        answer = await run_in_threadpool(service.handle, scope, params, body)
    except OWSException as exc:
        return dispatch.report(exc, "CSW", service.report_version(params, body))
    if scope.unavailable:
        log.warning("database unavailable for CSW: %s", scope.unavailable[0])
        return dispatch.unavailable("CSW", service.report_version(params, body))
    return Response(answer.body, status_code=answer.status, media_type=answer.content_type)
