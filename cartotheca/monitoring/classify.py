"""cartotheca.monitoring.classify: a request's service, event type and the resources it concerns.

Works on the method, path, query string and (for OWS POSTs) the first bytes of the body only,
so it runs in the collector's thread, never on the request path. Resources are references to
resolve later: a layer by its alternate name, a catalogue resource by id, or a list URL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from cartotheca.monitoring import definitions as d

# Requests that name their service implicitly (clients often omit SERVICE on GetMap)
OPERATION_SERVICE = {
    "GETMAP": "WMS", "GETFEATUREINFO": "WMS", "GETLEGENDGRAPHIC": "WMS", "GETSTYLES": "WMS",
    "GETFEATURE": "WFS", "DESCRIBEFEATURETYPE": "WFS", "GETPROPERTYVALUE": "WFS",
    "LISTSTOREDQUERIES": "WFS", "DESCRIBESTOREDQUERIES": "WFS", "TRANSACTION": "WFS",
    "DESCRIBECOVERAGE": "WCS", "GETCOVERAGE": "WCS", "GETTILE": "WMTS",
}
# OWS operations that hand out data rather than pictures: also counted as downloads.
DOWNLOAD_OPERATIONS = frozenset({"GETFEATURE", "GETCOVERAGE"})
LAYER_PARAMETERS = ("LAYERS", "LAYER", "QUERY_LAYERS", "TYPENAME", "TYPENAMES", "TYPE_NAME",
                    "COVERAGEID", "COVERAGE", "IDENTIFIER")
MAX_LAYERS = 20  # a request naming more layers is recorded against the first ones only

CATALOGUE_COLLECTIONS = ("resources", "datasets", "documents", "maps", "geoapps", "dashboards",
                         "geostories")
API_RESOURCE = re.compile(
    r"^/api/v2/(?P<collection>" + "|".join(CATALOGUE_COLLECTIONS) + r")(?:/(?P<rest>.*))?$")
TILES = re.compile(r"^/tiles/(?P<alternate>[^/]+)/")
DATASET_DOWNLOAD = re.compile(r"^/datasets/(?P<alternate>[^/]+)/dataset_download$")
DATASET_DESKTOP = re.compile(r"^/datasets/(?P<alternate>[^/]+)/desktop\.kml$")
DOCUMENT_DOWNLOAD = re.compile(r"^/documents/(?P<pk>\d+)/download$")
UPLOAD_PATH = "/api/v2/uploads/upload"
# Sniffing XML POST bodies: the root element, its service attribute, the layers named.
XML_ROOT = re.compile(rb"<(?:[\w.-]+:)?(\w+)[\s>/]")
XML_SERVICE = re.compile(rb"\bservice\s*=\s*[\"']([A-Za-z]+)[\"']")
XML_TYPENAMES = re.compile(rb"\btypeNames?\s*=\s*[\"']([^\"']+)[\"']")
XML_COVERAGE = re.compile(rb"<(?:[\w.-]+:)?CoverageId>\s*([^<\s]+)\s*<")


@dataclass
class Classification:
    service_type: str = d.CORE
    event_type: str | None = None
    secondary_event_type: str | None = None
    layers: list[str] = field(default_factory=list)  # alternates
    resource_ids: list[int] = field(default_factory=list)  # catalogue ids
    url: str | None = None  # a list page, recorded as a ``url`` resource


def classify(method: str, path: str, query: str, body_prefix: bytes | None,
             workspace: str) -> Classification:
    path = _normalise(path)
    if path == "/ows" or path.startswith("/geoserver/"):
        return _ows(path, query, body_prefix, workspace)
    match = TILES.match(path)
    if match:
        return Classification(d.MAPSERVER, "OWS:TMS", layers=[_layer(match["alternate"], workspace)])
    match = DATASET_DOWNLOAD.match(path)
    if match:
        return Classification(event_type=d.DOWNLOAD, layers=[_layer(match["alternate"], workspace)])
    match = DATASET_DESKTOP.match(path)
    if match:
        return Classification(event_type=d.VIEW, layers=[_layer(match["alternate"], workspace)])
    match = DOCUMENT_DOWNLOAD.match(path)
    if match:
        return Classification(event_type=d.DOWNLOAD, resource_ids=[int(match["pk"])])
    if path == UPLOAD_PATH and method == "POST":
        return Classification(event_type=d.UPLOAD)
    match = API_RESOURCE.match(path)
    if match:
        return _catalogue(method, path, match["rest"])
    if path.startswith("/api/v2/"):
        return Classification(event_type=_write_event(method))
    return Classification()


def _normalise(path: str) -> str:
    # The API answers with or without the trailing slash and with a ``.json`` suffix.
    if path.startswith("/api/v2/") and path.endswith(".json"):
        path = path[: -len(".json")]
    return path.rstrip("/") or "/"


def _write_event(method: str) -> str | None:
    return {"POST": d.CREATE, "PUT": d.CHANGE, "PATCH": d.CHANGE, "DELETE": d.REMOVE}.get(method)


def _catalogue(method: str, path: str, rest: str | None) -> Classification:
    if not rest:
        if method == "GET":
            return Classification(event_type=d.VIEW, url=path)
        return Classification(event_type=_write_event(method))
    head, _, sub = rest.partition("/")
    if not head.isdigit():
        # create/{type}, ingest/{type} and the like: new resources
        return Classification(event_type=d.CREATE if method == "POST" else _write_event(method))
    ids = [int(head)]
    if method == "GET":
        if not sub:
            return Classification(event_type=d.VIEW, resource_ids=ids)
        return Classification(event_type=d.VIEW_METADATA if "metadata" in sub else None,
                              resource_ids=ids)
    if method == "DELETE" or sub == "delete":
        return Classification(event_type=d.REMOVE, resource_ids=ids)
    if sub == "copy":
        return Classification(event_type=d.CREATE, resource_ids=ids)
    if "metadata" in sub or sub == "update":
        return Classification(event_type=d.CHANGE_METADATA, resource_ids=ids)
    if sub in ("favorite",):
        return Classification(resource_ids=ids)
    return Classification(event_type=d.CHANGE if method in ("PUT", "PATCH", "POST") else None,
                          resource_ids=ids)


def _ows(path: str, query: str, body_prefix: bytes | None, workspace: str) -> Classification:
    params = {k.upper(): v for k, v in parse_qsl(query, keep_blank_values=True)}
    operation = params.get("REQUEST", "")
    service = params.get("SERVICE", "")
    names = [v for key in LAYER_PARAMETERS for v in params.get(key, "").split(",") if v.strip()]
    if body_prefix and not (service and operation and names):
        root, body_service, body_names = _sniff(body_prefix)
        operation = operation or root
        service = service or body_service
        names = names or body_names
    if not service and path.startswith("/geoserver/") and path.count("/") == 2:
        service = path.rsplit("/", 1)[1]
    service = (service or OPERATION_SERVICE.get(operation.upper(), "")).upper()
    event_type = f"OWS:{service}" if f"OWS:{service}" in d.EVENT_TYPES else d.MAPSERVER_EVENT
    secondary = d.DOWNLOAD if operation.upper() in DOWNLOAD_OPERATIONS else None
    layers = list(dict.fromkeys(_layer(n, workspace) for n in names))[:MAX_LAYERS]
    return Classification(d.MAPSERVER, event_type, secondary, layers=layers)


def _sniff(body: bytes) -> tuple[str, str, list[str]]:
    start = body.find(b"<", body.find(b"?>") + 1 if body.lstrip().startswith(b"<?") else 0)
    root = XML_ROOT.match(body, start) if start >= 0 else None
    service = XML_SERVICE.search(body)
    names = [n.decode("utf-8", "replace") for m in XML_TYPENAMES.finditer(body)
             for n in m[1].split(b",")]
    names += [m[1].decode("utf-8", "replace") for m in XML_COVERAGE.finditer(body)]
    return (root[1].decode() if root else "", service[1].decode() if service else "", names)


def _layer(name: str, workspace: str) -> str:
    """The alternate (``workspace:name``) of a layer named in a request."""
    name = name.strip()
    if ":" not in name and "__" in name:
        name = name.replace("__", ":", 1)  # WCS 2.0 coverage ids
    return name if ":" in name else f"{workspace}:{name}"
