"""cartotheca.ows.dispatch: OWS requests in, OGC answers out.

KVP and XML POST requests are read into one shape and routed by SERVICE (or by the operation,
when a client leaves SERVICE out) through the service table. What a service raises becomes an
OGC exception report here and nowhere else: the code, locator and status travel on the
exception (``cartotheca.errors``), the report's form follows the service and version. WMS answers
a ServiceExceptionReport (1.1.1: ``application/vnd.ogc.se_xml``; 1.3.0: ``text/xml`` in the
``http://www.opengis.net/ogc`` namespace) with HTTP 200, as map servers do. WFS, WCS and WMTS
answer an OWS Common ``ows:ExceptionReport`` with the HTTP status OWS Common 2.0 assigns to the
code. CSW (its own endpoint, answered by pycsw) has its refusals written here too, in the
``ows:ExceptionReport`` of its version (2.0.2: OWS Common 1.0; 3.0.0: OWS Common 2.0).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lxml import etree
from starlette.requests import Request
from starlette.responses import Response

from cartotheca import xmlsafe
from cartotheca.db.session import RETRY_AFTER_SECONDS
from cartotheca.errors import (
    AuthenticationFailed,
    CartothecaError,
    NotAuthenticated,
    OWSException,
)
from cartotheca.ows import wcs, wfs, wms, wmts
from cartotheca.ows.request import OWSRequest

log = logging.getLogger(__name__)

# OWS Common 2.0, table 28 (and the service standards' own codes)
HTTP_STATUS = {
    "OperationNotSupported": 501,
    "MissingParameterValue": 400,
    "InvalidParameterValue": 400,
    "VersionNegotiationFailed": 400,
    "InvalidUpdateSequence": 400,
    "OptionNotSupported": 501,
    "NoApplicableCode": 500,
    "NoSuchCoverage": 404,
    "InvalidSubsetting": 404,
    "InvalidAxisLabel": 404,
    "TileOutOfRange": 400,
    "OperationParsingFailed": 400,
    "OperationProcessingFailed": 403,
    "NotFound": 404,
}


def _requested_version(req: OWSRequest) -> str | None:
    return req.version


@dataclass(frozen=True)
class Service:
    """One OGC service: its handler, the version whose report format answers its failures,
    and the NoApplicableCode message for an unexpected error (None: the application's own
    500 answers it)."""

    handle: Callable[[OWSRequest], Response]
    report_version: Callable[[OWSRequest], str | None] = _requested_version
    failure_message: str | None = None


# Loaded with the routes, at start-up: a service module imported by the first requests' threads
# at once would hand some of them a half-initialised module.
SERVICES = {
    # WMS reports in the version it negotiated (a GetMap naming SRS without VERSION is 1.1.1)
    "WMS": Service(wms.handle, wms.negotiate_version, "The map server could not process the request"),
    "WFS": Service(wfs.handle),
    "WCS": Service(wcs.handle, failure_message="The coverage service could not process the request"),
    "WMTS": Service(wmts.handle, failure_message="The tile service could not process the request"),
}
# Requests that name their service implicitly (clients often omit SERVICE on GetMap)
OPERATION_SERVICE = {
    "GETMAP": "WMS", "GETFEATUREINFO": "WMS", "GETLEGENDGRAPHIC": "WMS", "GETSTYLES": "WMS",
    "GETFEATURE": "WFS", "DESCRIBEFEATURETYPE": "WFS", "GETPROPERTYVALUE": "WFS",
    "LISTSTOREDQUERIES": "WFS", "DESCRIBESTOREDQUERIES": "WFS",
    "DESCRIBECOVERAGE": "WCS", "GETCOVERAGE": "WCS", "GETTILE": "WMTS",
}
# The report form for a request refused before its service is known
FALLBACK_SERVICE = "WFS"


@dataclass
class ParsedRequest:
    """An OWS request read from the wire, before its requester is looked up."""

    params: dict[str, str]  # keys upper-cased; XML bodies add SERVICE, VERSION and REQUEST
    multi: dict[str, list[str]]  # keys that repeat (WCS SUBSET, one per axis) keep every value
    body: bytes | None
    xml: Any  # the parsed POST body (lxml element), when there is one
    service: str


async def parse(request: Request, path_service: str | None) -> ParsedRequest | Response:
    """The request's parameters and body, or the exception report answering a request that
    names no known service or sends an unreadable XML body. ``path_service`` is the service
    the path names (``/geoserver/wms``), if any."""
    if path_service is not None:
        if path_service.upper() not in SERVICES:
            return report(OWSException("InvalidParameterValue", f"Unknown service {path_service}",
                                       locator="service"), FALLBACK_SERVICE)
        path_service = path_service.upper()
    params = {k.upper(): v for k, v in request.query_params.items()}
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
            try:
                xml = xmlsafe.parse(body, "OWS request body")
            except CartothecaError as exc:
                return report(OWSException("OperationParsingFailed", exc.message),
                              path_service or FALLBACK_SERVICE)
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
            locator="service"), FALLBACK_SERVICE)
    params["SERVICE"] = service
    return ParsedRequest(params, multi, body, xml, service)


def answer(req: OWSRequest, service: str) -> Response:
    """The service's answer, or the exception report of what it raised."""
    entry = SERVICES[service]
    try:
        return entry.handle(req)
    except (NotAuthenticated, AuthenticationFailed):
        raise  # the application's 401 with the Basic challenge, so clients ask for credentials
    except CartothecaError as exc:
        response = report(exc, service, entry.report_version(req))
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:  # Busy: the file store is down, a queue is full ...
            response.headers["Retry-After"] = str(retry_after)
        return response
    except Exception:
        if entry.failure_message is None:
            raise
        log.exception("%s %s failed", service, req.operation)
        return report(OWSException("NoApplicableCode", entry.failure_message), service,
                      entry.report_version(req))


def unavailable(service: str, version: str | None, retry_after: int = RETRY_AFTER_SECONDS) -> Response:
    """The database is down or out of connections, or the process has more map requests than it
    takes: the request may well succeed a moment later, so 503 with Retry-After."""
    response = report(OWSException("NoApplicableCode", "The service is temporarily unavailable; "
                                   "try again later.", status=503), service, version)
    response.headers["Retry-After"] = str(retry_after)
    return response


def report(exc: CartothecaError, service: str, version: str | None = None) -> Response:
    """The OGC exception report of ``exc`` in the form of ``service`` at ``version`` (a version
    the exception names wins)."""
    service = (service or "").upper()
    version = getattr(exc, "version", None) or version
    if service == "WMS":
        return _wms_report(exc, version)
    if service == "CSW":
        return _csw_report(exc, version)
    return _ows_report(exc, service, version)


def _wms_report(exc: CartothecaError, version: str | None) -> Response:
    attrs = f" code={xmlsafe.quoteattr(exc.ogc_code)}"
    if exc.ogc_locator:
        attrs += f" locator={xmlsafe.quoteattr(exc.ogc_locator)}"
    if version == "1.1.1" or version == "1.1.0" or version == "1.0.0":
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE ServiceExceptionReport SYSTEM '
            '"http://schemas.opengis.net/wms/1.1.1/exception_1_1_1.dtd">\n'
            f'<ServiceExceptionReport version="1.1.1"><ServiceException{attrs}>'
            f"{xmlsafe.escape(exc.message)}</ServiceException></ServiceExceptionReport>"
        )
        return Response(body, status_code=exc.ogc_status or 200,
                        media_type="application/vnd.ogc.se_xml")
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<ServiceExceptionReport version="1.3.0" xmlns="http://www.opengis.net/ogc" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:schemaLocation="http://www.opengis.net/ogc '
        'http://schemas.opengis.net/wms/1.3.0/exceptions_1_3_0.xsd">'
        f"<ServiceException{attrs}>{xmlsafe.escape(exc.message)}</ServiceException>"
        "</ServiceExceptionReport>"
    )
    return Response(body, status_code=exc.ogc_status or 200, media_type="text/xml")


def _ows_report(exc: CartothecaError, service: str, version: str | None) -> Response:
    # WFS 2.0 and WMTS use OWS Common 1.1 (ows/1.1); WFS 1.1.0 uses OWS 1.0.0
    if service == "WFS" and version and version.startswith("1."):
        ns, report_version = "http://www.opengis.net/ows", "1.0.0"
    elif service == "WCS":  # WCS 2.0 is built on OWS Common 2.0
        ns, report_version = "http://www.opengis.net/ows/2.0", "2.0.0"
    else:
        ns, report_version = "http://www.opengis.net/ows/1.1", "2.0.0"
    locator = f" locator={xmlsafe.quoteattr(exc.ogc_locator)}" if exc.ogc_locator else ""
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<ows:ExceptionReport xmlns:ows="{ns}" version="{report_version}" xml:lang="en">'
        f'<ows:Exception exceptionCode={xmlsafe.quoteattr(exc.ogc_code)}{locator}>'
        f"<ows:ExceptionText>{xmlsafe.escape(exc.message)}</ows:ExceptionText>"
        "</ows:Exception></ows:ExceptionReport>"
    )
    status = exc.ogc_status or HTTP_STATUS.get(exc.ogc_code, 400)
    return Response(body, status_code=status, media_type="application/xml")


def _csw_report(exc: CartothecaError, version: str | None) -> Response:
    # Written with lxml as pycsw writes the reports of what it refuses itself, so a client sees
    # the same document whichever refused; 2.0.2 is the version when none is known.
    if version and version.startswith("3"):
        ns, report_version = "http://www.opengis.net/ows/2.0", "2.0.0"
    else:
        ns, report_version = "http://www.opengis.net/ows", "1.2.0"
    root = etree.Element(f"{{{ns}}}ExceptionReport", nsmap={"ows": ns}, version=report_version)
    node = xmlsafe.sub_element(root, f"{{{ns}}}Exception", attrs={"exceptionCode": exc.ogc_code})
    if exc.ogc_locator:
        node.set("locator", xmlsafe.clean(exc.ogc_locator))
    xmlsafe.sub_element(node, f"{{{ns}}}ExceptionText", exc.message)
    body = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
    status = exc.ogc_status or HTTP_STATUS.get(exc.ogc_code, 400)
    return Response(body, status_code=status, media_type="application/xml; charset=UTF-8")
