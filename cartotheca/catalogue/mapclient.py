"""cartotheca.catalogue.mapclient: the web map client's saved resources, each user's own.

Only authenticated users reach these, and each sees, changes and deletes only the resources
they created (spec §5); anyone else's answers 404, as if it did not exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from cartotheca.catalogue import query
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query import FieldMap, ListContext, Listing
from cartotheca.catalogue.resources import parse_id
from cartotheca.db.base import utcnow
from cartotheca.db.models import MapClientResource
from cartotheca.errors import InvalidInput, NotAuthenticated, NotFound
from cartotheca.settings import Settings

MAX_ATTRIBUTES = 200
ATTRIBUTE_KEYS = ("name", "type", "label", "value")
KEPT_FIELDS = ("name", "description", "metadata", "data", "attributes")
# What the server decides, or MapStore's GeoStore resource model carries that has no place
# here (a saved resource is its owner's only, in the client's own category): accepted, not kept.
IGNORED_FIELDS = ("id", "user", "creation_date", "last_update", "creation", "lastUpdate", "category",
                  "canEdit", "canDelete", "canCopy", "advertised", "creator", "editor", "tags")
DESCRIPTION = "description"  # kept as the attribute of that name (MapStore shows it)


MAPCLIENT_ORDER = FieldMap(fields={}, default_sort=(MapClientResource.id.asc(),))


def _owner(principal: Principal) -> int:
    if principal.id is None:
        raise NotAuthenticated()
    return principal.id


def list_resources(ctx: ListContext) -> Listing:
    stmt = select(MapClientResource).where(MapClientResource.user_id == _owner(ctx.principal))
    # A fixed order and no filters: only page and page_size are read, as MapStore sends.
    return query.page(ctx.session, stmt, ctx.paging_only(), MAPCLIENT_ORDER)


def get_resource(session: Session, principal: Principal, raw_id: Any) -> MapClientResource:
    owner = _owner(principal)
    row = session.get(MapClientResource, parse_id(raw_id))
    if row is None or row.user_id != owner:
        raise NotFound()
    return row


def create_resource(session: Session, principal: Principal, settings: Settings,
                    body: Any) -> MapClientResource:
    owner = _owner(principal)
    values = _values(settings, body, partial=False)
    attributes = values.get("attributes", [])
    if "description" in values:
        attributes = _with_description(attributes, values["description"])
    row = MapClientResource(user_id=owner, name=values["name"], data=values.get("data"),
                            attributes=attributes)
    session.add(row)
    session.flush()
    return row


def update_resource(session: Session, principal: Principal, settings: Settings,
                    row: MapClientResource, body: Any, *, partial: bool) -> MapClientResource:
    """PUT replaces name, data and attributes (missing ones are emptied); PATCH sets those given."""
    _owner(principal)
    values = _values(settings, body, partial=partial)
    if not partial:
        values.setdefault("data", None)
        values.setdefault("attributes", [])
    description = values.pop("description", None)
    if description is not None:
        kept = [item for item in values.get("attributes", row.attributes or [])
                if item["name"] != DESCRIPTION or "attributes" in values]
        values["attributes"] = _with_description(kept, description)
    for key, value in values.items():
        setattr(row, key, value)
    row.last_update = utcnow()
    session.flush()
    return row


def delete_resource(session: Session, principal: Principal, row: MapClientResource) -> None:
    _owner(principal)
    session.delete(row)
    session.flush()


def _values(settings: Settings, body: Any, *, partial: bool) -> dict[str, Any]:
    if not isinstance(body, Mapping):
        raise InvalidInput("Invalid data. Expected a dictionary.")
    unknown = set(body) - {*KEPT_FIELDS, *IGNORED_FIELDS}
    if unknown:
        raise InvalidInput(f"{sorted(unknown)[0]}: unknown field")
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput("metadata: expected an object")
    values: dict[str, Any] = {}
    if "name" in body or "name" in metadata or not partial:
        name = body.get("name", metadata.get("name"))
        if not isinstance(name, str) or not name.strip() or len(name) > 255 or "\x00" in name:
            raise InvalidInput("name: expected a non-empty string of at most 255 characters")
        values["name"] = name.strip()
    if "data" in body:
        values["data"] = _data(settings, body["data"])
    if "attributes" in body:
        values["attributes"] = _attributes(body["attributes"])
    description = body.get(DESCRIPTION, metadata.get(DESCRIPTION))
    if description is not None:
        if not isinstance(description, str) or len(description) > 65536:
            raise InvalidInput("description: expected a string")
        values["description"] = description
    return values


def _with_description(attributes: list[dict[str, str]], description: str) -> list[dict[str, str]]:
    """The attributes with ``description`` as the one so named (an explicit attribute wins)."""
    if any(item["name"] == DESCRIPTION for item in attributes):
        return attributes
    return [*attributes, {"name": DESCRIPTION, "type": "STRING", "label": "", "value": description}]


def _data(settings: Settings, value: Any) -> Any:
    if isinstance(value, str):
        try:
            value = orjson.loads(value)  # the client sends its configuration as JSON text
        except orjson.JSONDecodeError:
            raise InvalidInput("data: not valid JSON") from None
    if value is not None and not isinstance(value, dict | list):
        raise InvalidInput("data: expected a JSON object")
    if value is not None and len(orjson.dumps(value)) > settings.MAX_GEOAPP_DATA_SIZE:
        raise InvalidInput(f"data: larger than {settings.MAX_GEOAPP_DATA_SIZE} bytes")
    return value


def _attributes(value: Any) -> list[dict[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_ATTRIBUTES:
        raise InvalidInput(f"attributes: expected a list of at most {MAX_ATTRIBUTES} objects")
    out, names = [], set()
    for index, item in enumerate(value):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
            raise InvalidInput(f"attributes[{index}]: expected an object with a name")
        if item["name"] in names:
            raise InvalidInput(f"attributes[{index}]: the name {item['name']!r} is used twice")
        names.add(item["name"])
        attribute = {}
        for key in ATTRIBUTE_KEYS:
            text = item.get(key, "")
            if text is None:
                text = ""
            if not isinstance(text, str) or len(text) > 65536:
                raise InvalidInput(f"attributes[{index}].{key}: expected a string")
            attribute[key] = text
        out.append(attribute)
    return out
