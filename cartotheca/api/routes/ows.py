"""cartotheca.api.routes.ows: the map server's endpoints, mounting ``ows.dispatch``.

``/ows`` (and GeoServer's ``/geoserver/ows``, ``/geoserver/wms|wfs|wcs``) take KVP requests, or
XML POST bodies. Handlers are synchronous (rendering and reading data are CPU and I/O bound), so
they run in the thread pool.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from cartotheca import siteurl
from cartotheca.api.bulkhead import Overloaded
from cartotheca.api.deps import app_state, get_settings, heavy_work, principal_of
from cartotheca.db.session import is_unavailable, reads_outside_transactions
from cartotheca.ows import dispatch
from cartotheca.ows.dispatch import ParsedRequest
from cartotheca.ows.request import OWSRequest
from cartotheca.settings import Settings

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)


def _ows_request(request: Request, session: Session, parsed: ParsedRequest) -> OWSRequest:
    """The parsed request with its requester (a blocking lookup: call it in the thread pool)."""
    settings = get_settings(request)
    return OWSRequest(params=parsed.params, principal=principal_of(request, session),
                      session=session, settings=settings,
                      service_url=_service_url(request, settings), method=request.method,
                      body=parsed.body, xml=parsed.xml, extra={"multi_params": parsed.multi})


def _in_one_trip(request: Request, parsed: ParsedRequest) -> Response:
    """Session, requester, lookup and answer in one trip to the thread pool (a map costs a few
    milliseconds, so the hops of separate steps would show).

    The session ends here, before the answer is sent: a streamed answer (GetFeature,
    GetCoverage) has read from the catalogue what it needs, and reads features from the
    vector store, so a client that reads slowly holds no catalogue connection."""
    params, service = parsed.params, parsed.service
    try:
        with app_state(request).sessions() as session:
            # The map server only reads the catalogue (a failed login's count commits on its
            # own): no transaction stays open while a map is drawn or features are read, and a
            # map has no BEGIN and ROLLBACK round trips around its one query.
            reads_outside_transactions(session)
            return dispatch.answer(_ows_request(request, session, parsed), service)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        log.warning("database unavailable for %s %s: %s", service, params.get("REQUEST"), exc)
        return dispatch.unavailable(service, params.get("VERSION"))


async def _serve(request: Request, path_service: str | None) -> Response:
    parsed = await dispatch.parse(request, path_service)
    if isinstance(parsed, Response):
        return parsed
    try:
        async with heavy_work(request):
            return await run_in_threadpool(_in_one_trip, request, parsed)
    except Overloaded:
        return dispatch.unavailable(parsed.service, parsed.params.get("VERSION"),
                                    get_settings(request).OVERLOAD_RETRY_AFTER)


def _service_url(request: Request, settings: Settings) -> str:
    # Capabilities advertise the site URL (SITEURL, else where the client or its proxy sent
    # the request), so clients reach every operation where they reached the capabilities.
    return f"{siteurl.base(settings)}{request.url.path}"


@router.api_route("/ows", methods=["GET", "POST"])
@router.api_route("/geoserver/ows", methods=["GET", "POST"])
async def ows(request: Request) -> Response:
    return await _serve(request, None)


@router.api_route("/geoserver/{service}", methods=["GET", "POST"])
async def ows_service(service: str, request: Request) -> Response:
    return await _serve(request, service)
