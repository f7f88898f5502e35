"""cartotheca.ows.exceptions: OGC exception reports, the only error shape OWS clients read.

WMS answers a ServiceExceptionReport (1.1.1: ``application/vnd.ogc.se_xml``; 1.3.0: ``text/xml``
in the ``http://www.opengis.net/ogc`` namespace) with HTTP 200, as map servers do. WFS, WCS and
WMTS answer an OWS Common ``ows:ExceptionReport`` with the HTTP status OWS Common 2.0 assigns
to the code.
"""

from __future__ import annotations

from starlette.responses import Response

from cartotheca.xmlsafe import escape, quoteattr

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


class OWSException(Exception):
    """A client error in an OWS request. ``code`` is the OGC exception code."""

    def __init__(self, code: str, message: str, *, locator: str | None = None,
                 version: str | None = None, status: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.locator = locator
        self.version = version
        self.status = status


def report(exc: OWSException, service: str, version: str | None = None) -> Response:
    service = (service or "").upper()
    version = exc.version or version
    if service == "WMS":
        return _wms_report(exc, version)
    return _ows_report(exc, service, version)


def _wms_report(exc: OWSException, version: str | None) -> Response:
    attrs = f" code={quoteattr(exc.code)}"
    if exc.locator:
        attrs += f" locator={quoteattr(exc.locator)}"
    if version == "1.1.1" or version == "1.1.0" or version == "1.0.0":
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE ServiceExceptionReport SYSTEM '
            '"http://schemas.opengis.net/wms/1.1.1/exception_1_1_1.dtd">\n'
            f'<ServiceExceptionReport version="1.1.1"><ServiceException{attrs}>'
            f"{escape(exc.message)}</ServiceException></ServiceExceptionReport>"
        )
        return Response(body, status_code=exc.status or 200, media_type="application/vnd.ogc.se_xml")
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<ServiceExceptionReport version="1.3.0" xmlns="http://www.opengis.net/ogc" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:schemaLocation="http://www.opengis.net/ogc '
        'http://schemas.opengis.net/wms/1.3.0/exceptions_1_3_0.xsd">'
        f"<ServiceException{attrs}>{escape(exc.message)}</ServiceException>"
        "</ServiceExceptionReport>"
    )
    return Response(body, status_code=exc.status or 200, media_type="text/xml")


def _ows_report(exc: OWSException, service: str, version: str | None) -> Response:
    # WFS 2.0 and WMTS use OWS Common 1.1 (ows/1.1); WFS 1.1.0 uses OWS 1.0.0
    if service == "WFS" and version and version.startswith("1."):
        ns, report_version = "http://www.opengis.net/ows", "1.0.0"
    elif service == "WCS":  # WCS 2.0 is built on OWS Common 2.0
        ns, report_version = "http://www.opengis.net/ows/2.0", "2.0.0"
    else:
        ns, report_version = "http://www.opengis.net/ows/1.1", "2.0.0"
    locator = f" locator={quoteattr(exc.locator)}" if exc.locator else ""
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<ows:ExceptionReport xmlns:ows="{ns}" version="{report_version}" xml:lang="en">'
        f'<ows:Exception exceptionCode={quoteattr(exc.code)}{locator}>'
        f"<ows:ExceptionText>{escape(exc.message)}</ows:ExceptionText>"
        "</ows:Exception></ows:ExceptionReport>"
    )
    status = exc.status or HTTP_STATUS.get(exc.code, 400)
    return Response(body, status_code=status, media_type="application/xml")
