"""cartotheca.catalogue.geoapps: geostories and dashboards, resources carrying a client's JSON ``data``.

A geoapp is a ``resources`` row whose ``resource_type`` is the app's kind and whose ``blob``
holds the configuration the web client saves (``data`` on the wire). Everything else (perms,
favourites, executions, the query language) is the resource base's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca.catalogue import resource_lifecycle, resource_writer
from cartotheca.catalogue.auth import Principal
from cartotheca.db.models import Resource
from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings

GEOAPP_TYPES = ("geostory", "dashboard")
WORLD = (-180.0, -90.0, 180.0, 90.0)
DATA_KEYS = ("data", "blob")  # GeoNode renames ``data`` to ``blob`` on write; both are accepted


def validate_data(settings: Settings, value: Any, key: str = "data") -> dict[str, Any]:
    """A JSON object no larger than MAX_GEOAPP_DATA_SIZE bytes once encoded."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)  # form-encoded bodies carry JSON as text
        except orjson.JSONDecodeError:
            raise InvalidInput(f"{key}: not valid JSON") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{key}: expected a JSON object")
    try:
        size = len(orjson.dumps(value))
    except TypeError:
        raise InvalidInput(f"{key}: not valid JSON") from None
    if size > settings.MAX_GEOAPP_DATA_SIZE:
        raise InvalidInput(f"{key}: larger than MAX_GEOAPP_DATA_SIZE "
                           f"({settings.MAX_GEOAPP_DATA_SIZE} bytes)")
    return value


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or "\x00" in value or len(value) > 255:
        raise InvalidInput("name: expected a non-empty string of at most 255 characters")
    return value.strip()


def _check_unique_name(session: Session, name: str, exclude: int | None = None) -> None:
    stmt = select(Resource.id).where(Resource.resource_type.in_(GEOAPP_TYPES), Resource.name == name)
    if exclude is not None:
        stmt = stmt.where(Resource.id != exclude)
    if session.scalar(stmt.limit(1)) is not None:
        raise InvalidInput(f"name: a geoapp named {name!r} already exists")


def create_geoapp(session: Session, principal: Principal, settings: Settings,
                  data: Mapping[str, Any], *, resource_type: str | None = None) -> Resource:
    """A geostory or dashboard; ``resource_type`` is fixed by the collection or read from the
    body. GeoNode asks for ``name``; a ``title`` alone names it too."""
    if not isinstance(data, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    kind = data.get("resource_type", resource_type)
    if resource_type is not None and kind != resource_type:
        raise InvalidInput(f"resource_type: this collection holds {resource_type} resources only")
    if kind not in GEOAPP_TYPES:
        raise InvalidInput(f"resource_type: expected one of {', '.join(GEOAPP_TYPES)}")
    body = {k: v for k, v in data.items() if k not in ("resource_type", "name", *DATA_KEYS)}
    name = _name(data.get("name") or body.get("title"))
    body.setdefault("title", name)
    blob = next((validate_data(settings, data[k], k) for k in DATA_KEYS if data.get(k) is not None), None)
    _check_unique_name(session, name)
    resource = resource_lifecycle.create_resource(session, principal, settings, body, resource_type=kind)
    resource.name = name
    resource.blob = blob
    if resource.ll_minx is None:
        resource_writer.set_extent(resource, WORLD, "EPSG:4326", WORLD)
    session.flush()
    return resource


def patch_geoapp(session: Session, principal: Principal, settings: Settings, resource: Resource,
                 body: Any, current: Mapping[str, Any] | None = None) -> None:
    """A patch of a geoapp: ``data`` (or ``blob``) and ``name`` here, the rest as for every
    resource (the change permission is checked there, before anything is applied)."""
    if not isinstance(body, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    rest = {k: v for k, v in body.items() if k not in ("name", *DATA_KEYS)}
    blob = next((validate_data(settings, body[k], k) for k in DATA_KEYS if k in body
                 and body[k] is not None), None)
    name = None
    if "name" in body and (current is None or body["name"] != current.get("name")):
        name = _name(body["name"])
        _check_unique_name(session, name, exclude=resource.id)
    resource_lifecycle.patch_resource(session, principal, settings, resource, rest,
                                      dict(current) if current is not None else None)
    if blob is not None:
        resource.blob = blob
    if name is not None:
        resource.name = name
    session.flush()
