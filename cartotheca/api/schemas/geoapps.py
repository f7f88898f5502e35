"""cartotheca.api.schemas.geoapps: the geoapp extras of a record (GeoNode's GeoAppSerializer)."""

from __future__ import annotations

from typing import Any

from cartotheca.db.models import Resource


def geoapp_extras(resource: Resource, *, detail: bool) -> dict[str, Any]:
    """``name``; the detail also carries the app's ``data`` (the list leaves it out: it can be
    large, and GeoNode defers it too)."""
    extras: dict[str, Any] = {"name": resource.name}
    if detail:
        extras["data"] = resource.blob
    return extras
