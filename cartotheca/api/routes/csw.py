"""cartotheca.api.routes.csw: the catalogue's CSW endpoint, ``/catalogue/csw``.

KVP requests come as GET (or a POSTed form), XML requests as a POST body; pycsw answers in a
worker thread, with what the requester may view.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from cartotheca.api.deps import DbDep, PrincipalDep, SettingsDep
from cartotheca.catalogue.csw import service
from cartotheca.catalogue.csw.repository import RequestScope
from cartotheca.db.session import RETRY_AFTER_SECONDS

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
    answer = await run_in_threadpool(service.handle, scope, params, body)
    if scope.unavailable:
        log.warning("database unavailable for CSW: %s", scope.unavailable[0])
        report = service.exception_report(
            "NoApplicableCode", "The service is temporarily unavailable; try again later.", None,
            service.report_version(params, body))
        return Response(report, status_code=503, media_type=service.XML_TYPE,
                        headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
    return Response(answer.body, status_code=answer.status, media_type=answer.content_type)
