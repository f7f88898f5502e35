"""cartotheca.api.routes.ows: the map server's endpoints; one dispatcher for every OWS service.

``/ows`` (and GeoServer's ``/geoserver/ows``, ``/geoserver/wms|wfs|wcs``) take KVP requests, or
XML POST bodies, and hand them to ``cartotheca.ows.<service>.handle``. Handlers are synchronous
(rendering and reading data are CPU and I/O bound), so they run in the thread pool.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from cartotheca import siteurl
from cartotheca.api.deps import app_state, get_principal, get_settings
from cartotheca.db.session import RETRY_AFTER_SECONDS, is_unavailable
from cartotheca.errors import (
    AuthenticationFailed,
    CartothecaError,
    NotAuthenticated,
    PermissionDenied,
)
from cartotheca.ows import wcs, wfs, wms, wmts
from cartotheca.ows.exceptions import OWSException, report
from cartotheca.ows.request import OWSRequest
from cartotheca.settings import Settings

log = logging.getLogger(__name__)
router = APIRouter(include_in_schema=False)

# Loaded with the routes, at start-up: a service module imported by the first requests' threads
# at once would hand some of them a half-initialised module.
SERVICES = {"WMS": wms, "WFS": wfs, "WCS": wcs, "WMTS": wmts}
# Requests that name their service implicitly (clients often omit SERVICE on GetMap)
OPERATION_SERVICE = {
    "GETMAP": "WMS", "GETFEATUREINFO": "WMS", "GETLEGENDGRAPHIC": "WMS", "GETSTYLES": "WMS",
    "GETFEATURE": "WFS", "DESCRIBEFEATURETYPE": "WFS", "GETPROPERTYVALUE": "WFS",
    "LISTSTOREDQUERIES": "WFS", "DESCRIBESTOREDQUERIES": "WFS",
    "DESCRIBECOVERAGE": "WCS", "GETCOVERAGE": "WCS", "GETTILE": "WMTS",
}


async def _parse(request: Request, path_service: str | None):
    """(params, multi-valued params, body, parsed XML body, service) of an OWS request, or the
    exception report answering a request that names no known service."""
    params = {k.upper(): v for k, v in request.query_params.items()}
    # Keys that repeat (WCS SUBSET, one per axis) keep every value here
    multi: dict[str, list[str]] = {}
    for key, value in request.query_params.multi_items():
        multi.setdefault(key.upper(), []).append(value)
    body = None
    xml = None
    if request.method == "POST":
        body = await request.body()
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type == "application/x-www-form-urlencoded":
            form = await request.form()
            params.update({k.upper(): str(v) for k, v in form.items()})
            for key, value in form.multi_items():
                multi.setdefault(key.upper(), []).append(str(value))
            body = None
        elif body.strip():
            from cartotheca import xmlsafe

            try:
                xml = xmlsafe.parse(body, "OWS request body")
            except CartothecaError as exc:
                return report(OWSException("OperationParsingFailed", exc.message),
                              path_service or "WFS")
            if xml.get("service"):
                params.setdefault("SERVICE", xml.get("service"))
            if xml.get("version"):
                params.setdefault("VERSION", xml.get("version"))
            params.setdefault("REQUEST", xml.tag.rsplit("}", 1)[-1])
    service = (params.get("SERVICE") or path_service or "").upper()
    if not service:
        service = OPERATION_SERVICE.get((params.get("REQUEST") or "").upper(), "")
    if service not in SERVICES:
        return report(OWSException(
            "InvalidParameterValue" if service else "MissingParameterValue",
            f"Unknown service {service!r}" if service else "Parameter SERVICE is required",
            locator="service"), "WFS")
    params["SERVICE"] = service
    return params, multi, body, xml, service


def _handle(ows: OWSRequest, service: str, params: dict[str, str]) -> Response:
    """The service's answer, or its exception report (runs in the thread pool)."""
    try:
        return SERVICES[service].handle(ows)
    except OWSException as exc:
        return report(exc, service, params.get("VERSION"))
    except (NotAuthenticated, AuthenticationFailed):
        raise  # a 401 with the Basic challenge, so clients ask for credentials
    except PermissionDenied as exc:
        return report(OWSException("OperationProcessingFailed", exc.message, status=403),
                      service, params.get("VERSION"))
    except CartothecaError as exc:
        return report(OWSException("InvalidParameterValue", exc.message), service,
                      params.get("VERSION"))


def _ows_request(request: Request, session: Session, params: dict[str, str],
                 multi: dict[str, list[str]], body: bytes | None, xml) -> OWSRequest:
    """The parsed request with its requester (a blocking lookup: call it in the thread pool)."""
    settings = get_settings(request)
    return OWSRequest(params=params, principal=get_principal(request, session), session=session,
                      settings=settings, service_url=_service_url(request, settings),
                      method=request.method, body=body, xml=xml, extra={"multi_params": multi})


def _in_one_trip(request: Request, params: dict[str, str], multi: dict[str, list[str]],
                 body: bytes | None, xml, service: str) -> Response:
    """Session, requester, lookup and answer in one trip to the thread pool (a map costs a few
    milliseconds, so the hops of separate steps would show).

    The session ends here, before the answer is sent: a streamed answer (GetFeature,
    GetCoverage) has read from the catalogue what it needs, and reads features from the
    vector store, so a client that reads slowly holds no catalogue connection."""
    try:
        with app_state(request).sessions() as session:
            if request.method == "GET" and service == "WMS" \
                    and (params.get("REQUEST") or "").upper() == "GETMAP":
                # A map only reads: without a transaction there is no BEGIN and no ROLLBACK
                # round trip to the catalogue database around its one query.
                session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
            ows = _ows_request(request, session, params, multi, body, xml)
            return _handle(ows, service, params)
    except Exception as exc:
        if not is_unavailable(exc):
            raise
        log.warning("database unavailable for %s %s: %s", service, params.get("REQUEST"), exc)
        answer = report(OWSException("NoApplicableCode", "The service is temporarily unavailable; "
                                     "try again later.", status=503), service, params.get("VERSION"))
        answer.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return answer


async def _serve(request: Request, path_service: str | None) -> Response:
    parsed = await _parse(request, path_service)
    if isinstance(parsed, Response):
        return parsed
    params, multi, body, xml, service = parsed
    return await run_in_threadpool(_in_one_trip, request, params, multi, body, xml, service)


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
    if service.upper() not in SERVICES:
        return report(OWSException("InvalidParameterValue", f"Unknown service {service}",
                                   locator="service"), "WFS")
    return await _serve(request, service.upper())
