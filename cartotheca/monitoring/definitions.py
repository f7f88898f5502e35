"""cartotheca.monitoring.definitions: service types, metrics, event types and resource types.

Names are GeoNode's with the product names made neutral: ``core`` is the catalogue
application, ``mapserver`` the built-in map server, ``hostcore``/``hostmapserver`` their hosts.
"""

from __future__ import annotations

from dataclasses import dataclass

CORE, MAPSERVER, HOSTCORE, HOSTMAPSERVER = "core", "mapserver", "hostcore", "hostmapserver"
SERVICE_TYPES = (CORE, MAPSERVER, HOSTCORE, HOSTMAPSERVER)
REQUEST_SERVICE_TYPES = (CORE, MAPSERVER)
HOST_SERVICE_TYPES = (HOSTCORE, HOSTMAPSERVER)

# How values of a metric combine (within a period and across periods):
COUNT = "count"  # a number of things: summed
VALUE = "value"  # occurrences of each label value (user, path, agent ...): summed per label
RATE = "rate"  # a measurement: averaged, weighted by the samples behind each value
VALUE_NUMERIC = "value_numeric"  # a level (memory, disk): the maximum


@dataclass(frozen=True)
class MetricDef:
    name: str
    type: str
    unit: str
    description: str


REQUEST_METRICS = (
    MetricDef("request.count", COUNT, "Count", "Number of requests"),
    MetricDef("request.ip", VALUE, "Count", "IP address of the source of requests"),
    MetricDef("request.ua", VALUE, "Count", "User agent of the source of requests"),
    MetricDef("request.ua.family", VALUE, "Count", "Family of the user agent"),
    MetricDef("request.users", VALUE, "Count", "Number of users visiting"),
    MetricDef("request.path", VALUE, "Count", "Request path"),
    MetricDef("request.method", VALUE, "Count", "Request method"),
    MetricDef("response.status", VALUE, "Count", "Response status code"),
    # Milliseconds, as GeoNode records response times.
    MetricDef("response.time", RATE, "ms", "Time of making a response"),
    MetricDef("response.size", RATE, "B", "Size of the response body"),
    MetricDef("response.error.count", COUNT, "Count", "Number of server errors"),
    MetricDef("response.error.types", VALUE, "Count", "Server errors by exception class"),
    MetricDef("response.error.path", VALUE, "Count",
              "Request path of responses with an error status (4xx, 5xx)"),
)

HOST_METRICS = (
    MetricDef("load.1m", RATE, "Rate", "Load average over 1 minute"),
    MetricDef("load.5m", RATE, "Rate", "Load average over 5 minutes"),
    MetricDef("load.15m", RATE, "Rate", "Load average over 15 minutes"),
    MetricDef("mem.free", VALUE_NUMERIC, "B", "Memory available"),
    MetricDef("mem.usage", VALUE_NUMERIC, "B", "Memory used"),
    MetricDef("mem.usage.percent", RATE, "%", "Memory used, percent"),
    MetricDef("mem.buffers", VALUE_NUMERIC, "B", "Memory used for buffers"),
    MetricDef("mem.all", VALUE_NUMERIC, "B", "Memory installed"),
    MetricDef("uptime", VALUE_NUMERIC, "s", "Time since the host booted"),
    MetricDef("cpu.usage", COUNT, "s", "CPU time used"),
    MetricDef("cpu.usage.rate", RATE, "Rate", "CPU time used per second (cores busy)"),
    MetricDef("cpu.usage.percent", RATE, "%", "CPU used, percent"),
    MetricDef("storage.total", VALUE_NUMERIC, "B", "Size of the mount point"),
    MetricDef("storage.used", VALUE_NUMERIC, "B", "Space used on the mount point"),
    MetricDef("storage.free", VALUE_NUMERIC, "B", "Space free on the mount point"),
    MetricDef("network.in", COUNT, "B", "Network incoming traffic bytes"),
    MetricDef("network.out", COUNT, "B", "Network outgoing traffic bytes"),
    MetricDef("network.in.rate", RATE, "B/s", "Network incoming traffic rate"),
    MetricDef("network.out.rate", RATE, "B/s", "Network outgoing traffic rate"),
)

METRICS = {m.name: m for m in REQUEST_METRICS + HOST_METRICS}
METRICS_OF_SERVICE_TYPE = {
    CORE: [m.name for m in REQUEST_METRICS],
    MAPSERVER: [m.name for m in REQUEST_METRICS],
    HOSTCORE: [m.name for m in HOST_METRICS],
    HOSTMAPSERVER: [m.name for m in HOST_METRICS],
}
HOST_METRIC_NAMES = frozenset(m.name for m in HOST_METRICS)

# Event types: name → label, in GeoNode's order.
OWS_SERVICES = ("TMS", "WMS-C", "WMTS", "WCS", "WFS", "WMS", "WPS")
EVENT_ALL, EVENT_OTHER, EVENT_OWS = "all", "other", "OWS:ALL"
DOWNLOAD, VIEW, VIEW_METADATA = "download", "view", "view_metadata"
CREATE, UPLOAD, CHANGE, CHANGE_METADATA = "create", "upload", "change", "change_metadata"
PUBLISH, REMOVE, MAPSERVER_EVENT = "publish", "remove", "geoserver"
EVENT_TYPES: dict[str, str] = {
    **{f"OWS:{s}": s for s in OWS_SERVICES},
    EVENT_OTHER: "Not OWS",
    EVENT_OWS: "Any OWS",
    EVENT_ALL: "All",
    CREATE: "Create",
    UPLOAD: "Upload",
    CHANGE: "Change",
    CHANGE_METADATA: "Change Metadata",
    VIEW_METADATA: "View Metadata",
    VIEW: "View",
    DOWNLOAD: "Download",
    PUBLISH: "Publish",
    REMOVE: "Remove",
    MAPSERVER_EVENT: "Geoserver event",
}


def is_ows(event_type: str) -> bool:
    return event_type.upper().startswith("OWS:")


# Monitored resource types: value → label. The empty type is "no resource" (all requests).
LAYER, DOCUMENT, MAP, RESOURCE_BASE, URL = "layer", "document", "map", "resource_base", "url"
RESOURCE_TYPES: dict[str, str] = {
    "": "No resource",
    LAYER: "Layer",
    MAP: "Map",
    RESOURCE_BASE: "Resource base",
    DOCUMENT: "Document",
    "style": "Style",
    "admin": "Admin",
    URL: "URL",
    "other": "Other",
}
# Catalogue resource_type → monitored resource type
CATALOGUE_TYPES = {"dataset": LAYER, "document": DOCUMENT, "map": MAP}

# Default labels of metrics whose rows carry no label of their own.
COUNT_LABEL, VALUE_LABEL = "count", "value"

SEVERITIES = ("warning", "error", "fatal")
FIELD_OPTIONS = ("min_value", "max_value", "max_timeout")
