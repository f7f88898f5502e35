"""cartotheca.catalogue.csw.service: one CSW request (KVP or XML) answered by pycsw.

pycsw does the protocol (CSW 2.0.2, the default as in GeoNode, and 3.0.0: capabilities,
DescribeRecord, GetDomain, GetRecords, GetRecordById, the Dublin Core, ISO, Atom, DIF, FGDC
and ebRIM output schemas) over ``CatalogueRepository``. What pycsw would do beyond answering
from the catalogue is refused before it runs: asynchronous answers POSTed to a client-given
``ResponseHandler`` URL, the OpenSearch/SRU/OAI-PMH modes, transactions and harvesting (not
configured). XML bodies and Filter constraints are parsed by ``xmlsafe`` first, so pycsw only
ever sees documents without a DTD. A refusal is raised as ``OWSException``; the route has it
written as CSW's exception report by the one OGC report map, in the version ``report_version``
names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lxml import etree
from pycsw import server

from cartotheca import siteurl, xmlsafe
from cartotheca.catalogue.csw.repository import RequestScope
from cartotheca.catalogue.service_metadata import service_metadata
from cartotheca.errors import InvalidInput, OWSException

XML_TYPE = "application/xml; charset=UTF-8"
JSON_TYPE = "application/json"
PATH = "catalogue/csw"
DEFAULT_VERSION = "2.0.2"  # as GeoNode's pycsw
MAX_PAGING_VALUE = 2**31 - 1  # largest maxRecords/startPosition accepted


@dataclass(frozen=True)
class CswResponse:
    status: int
    content_type: str
    body: bytes


def handle(scope: RequestScope, params: Mapping[str, str], body: bytes | None = None) -> CswResponse:
    """Answer a KVP request (``params``) or an XML request (``body``); OWSException for one
    refused before pycsw runs (pycsw writes the reports of what it refuses itself)."""
    if body:
        return _run(scope, request=_checked_body(body))
    return _run(scope, kvp=_checked_params(params))


def report_version(params: Mapping[str, str], body: bytes | None) -> str:
    """The version of an exception report for a request refused before pycsw answered it."""
    return "3.0.0" if body is None and "3.0" in str(params.get("version", "")) else DEFAULT_VERSION


def _checked_params(params: Mapping[str, str]) -> dict[str, str]:
    kvp = {key.lower(): value for key, value in params.items()}
    if "responsehandler" in kvp:
        raise OWSException("InvalidParameterValue", "Asynchronous responses are not offered",
                           locator="responsehandler")
    if kvp.get("mode", "csw").lower() != "csw":
        raise OWSException("InvalidParameterValue", "Only the CSW mode is offered", locator="mode")
    if kvp.get("constraintlanguage", "").upper() == "FILTER" and kvp.get("constraint"):
        _safe(kvp["constraint"].encode("utf-8"), "constraint")
    _check_paging(kvp.get("maxrecords"), kvp.get("startposition"))
    return kvp


def _checked_body(body: bytes) -> bytes:
    root = _safe(body, "request")
    _check_paging(root.get("maxRecords"), root.get("startPosition"))
    if next(root.iter("{*}ResponseHandler"), None) is not None:
        raise OWSException("InvalidParameterValue", "Asynchronous responses are not offered",
                           locator="ResponseHandler")
    # pycsw parses the body again: hand it the document as read here, DTD-free
    return etree.tostring(root, encoding="UTF-8", xml_declaration=True)


def _check_paging(maxrecords: str | None, startposition: str | None) -> None:
    """pycsw calls ``int()`` on both as given: a non-number or a value past the database's integers
    would be a server error instead of an exception report."""
    for name, value in (("maxRecords", maxrecords), ("startPosition", startposition)):
        if value in (None, ""):
            continue
        text = value.strip()
        digits = text.lstrip("0") if text.isascii() and text.isdigit() else None
        if digits is None or len(digits) > 10 or int(digits or "0") > MAX_PAGING_VALUE:
            raise OWSException("InvalidParameterValue",
                               f"{name} must be an integer between 0 and {MAX_PAGING_VALUE}",
                               locator=name)


def _safe(data: bytes, locator: str) -> etree._Element:
    try:
        return xmlsafe.parse(data, "CSW request" if locator == "request" else "Filter constraint")
    except InvalidInput as exc:
        # the client's document, not the server, is at fault: 400, not NoApplicableCode's 500
        raise OWSException("NoApplicableCode", exc.message, locator=locator, status=400) from None


def negotiated(kvp: dict[str, str]) -> tuple[str, dict[str, str]]:
    """The version a KVP request is answered in, and the parameters pycsw is given.

    GeoNode runs pycsw pinned to 2.0.2, and clients that send no version (GDAL's CSW driver)
    then speak 2.0.2 with what the capabilities said: 3.0.0 is answered only when ``version``
    or ``AcceptVersions`` asks for it. ``AcceptVersions`` is the client's order of preference;
    pycsw is handed just the version chosen from it (it would refuse a list whose first entry
    is not its own version). An empty request is a 2.0.2 GetCapabilities."""
    if not kvp:
        return DEFAULT_VERSION, {"service": "CSW", "request": "GetCapabilities"}
    if kvp.get("version"):
        return ("3.0.0" if kvp["version"].startswith("3") else DEFAULT_VERSION), kvp
    for item in kvp.get("acceptversions", "").split(","):
        version = item.strip()
        if version in ("2.0.2", "3.0.0", "3.0"):
            chosen = "3.0.0" if version.startswith("3") else "2.0.2"
            return chosen, {**kvp, "acceptversions": chosen}
    return DEFAULT_VERSION, kvp


def _run(scope: RequestScope, *, kvp: dict[str, str] | None = None,
         request: bytes | None = None) -> CswResponse:
    environ = {"QUERY_STRING": "", "REQUEST_METHOD": "POST" if request else "GET"}
    if request is not None:
        # An XML request names its version by its namespace (as pycsw itself tells them apart);
        # pycsw must be built for that version, it only switches from 3.0.0 to 2.0.2 on its own.
        version = "3.0.0" if b"cat/csw/3.0" in request else DEFAULT_VERSION
        csw = server.Csw(configuration(scope), environ, version=version)
        csw.requesttype, csw.request = "POST", request
    else:
        version, kvp = negotiated(kvp or {})
        csw = server.Csw(configuration(scope), environ, version=version)
        csw.requesttype, csw.kvp = "GET", kvp
    status, content = csw.dispatch()
    content_type = JSON_TYPE if "json" in str(getattr(csw, "contenttype", "")) else XML_TYPE
    return CswResponse(int(status.split()[0]), content_type, content)


def service_url(scope: RequestScope) -> str:
    return f"{siteurl.base(scope.settings)}/{PATH}"


def configuration(scope: RequestScope) -> dict:
    """pycsw's configuration for one request; the repository filter is the request's scope."""
    settings = scope.settings
    meta = service_metadata(settings, "CSW")
    contact = meta.contact
    return {
        "server": {
            "url": service_url(scope),
            "mimetype": XML_TYPE,
            "encoding": "UTF-8",
            "language": "en-US",
            "maxrecords": settings.CSW_MAX_RECORDS,
            "pretty_print": True,
            "domainquerytype": "list",
            "domaincounts": False,
        },
        # pycsw sets up logging itself; WARNING is Python's own default level, so this only
        # gives the root logger a handler when the process has none.
        "logging": {"level": "WARNING"},
        "profiles": ["apiso", "ebrim"],
        "manager": {"transactions": False, "allowed_ips": []},
        "metadata": {
            "identification": {
                "title": meta.title,
                "description": meta.abstract,
                "keywords": meta.keywords,
                "keywords_type": "theme",
                "fees": meta.fees,
                "accessconstraints": meta.access_constraints,
                "url": siteurl.url(settings),
            },
            "provider": {"name": contact.organization, "url": contact.url},
            "contact": {"name": contact.name, "position": contact.position, "address": contact.address,
                        "city": contact.city, "stateorprovince": contact.state_or_province,
                        "postalcode": contact.postal_code, "country": contact.country,
                        "phone": contact.phone, "fax": contact.fax, "email": contact.email,
                        "url": contact.url, "role": "pointOfContact"},
            "inspire": {"enabled": False},
        },
        "repository": {
            "source": "cartotheca.catalogue.csw.repository.CatalogueRepository",
            "filter": scope,
        },
    }

