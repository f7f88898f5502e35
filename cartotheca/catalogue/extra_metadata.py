"""cartotheca.catalogue.extra_metadata: free JSON metadata items of a resource, validated per type.

Each item must satisfy the JSON Schema EXTRA_METADATA_SCHEMA names for the resource's type
(geostories and dashboards use the ``geoapp`` entry unless they have their own, as GeoNode's
polymorphic model name does). A request with one invalid item changes nothing and its error
names the item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from cartotheca import json_schema
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue import resources as catalogue
from cartotheca.catalogue.auth import Principal
from cartotheca.db.models import ExtraMetadata, Resource
from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings

MAX_ITEM_BYTES = 64 * 1024  # one item, encoded
MAX_ITEMS = 1000  # in one request
GEOAPP_TYPES = ("geostory", "dashboard")


def schema_for(settings: Settings, resource_type: str) -> dict[str, Any]:
    schemas = settings.EXTRA_METADATA_SCHEMA
    schema = schemas.get(resource_type)
    if schema is None and resource_type in GEOAPP_TYPES:
        schema = schemas.get("geoapp")
    if schema is None:
        raise InvalidInput(f"EXTRA_METADATA_SCHEMA validation schema is not available for "
                           f"resource {resource_type}")
    return schema


def _listed(body: Any) -> list[Any]:
    items = [body] if isinstance(body, Mapping) else body
    if not isinstance(items, list) or not items:
        raise InvalidInput("Expected a JSON list of extra metadata objects")
    if len(items) > MAX_ITEMS:
        raise InvalidInput(f"At most {MAX_ITEMS} extra metadata items at once")
    return items


def validate_items(settings: Settings, resource: Resource, body: Any, *,
                   need_id: bool) -> list[dict[str, Any]]:
    """Every item of ``body`` checked against the type's schema; the first invalid one raises
    InvalidInput naming its index and content (GeoNode's wording)."""
    validator = json_schema.validator(schema_for(settings, resource.resource_type))
    items = _listed(body)
    for index, item in enumerate(items):
        text = orjson.dumps(item).decode() if _encodable(item) else repr(item)
        if not isinstance(item, dict):
            raise InvalidInput(f"item {index} is not a JSON object: {text[:500]}")
        if len(text) > MAX_ITEM_BYTES:
            raise InvalidInput(f"item {index} is larger than {MAX_ITEM_BYTES} bytes")
        if need_id and not (isinstance(item.get("id"), int) and not isinstance(item["id"], bool)):
            raise InvalidInput(f"item {index} has no integer \"id\": {text[:500]}")
        error = next(iter(sorted(validator.iter_errors(item), key=lambda e: list(e.path))), None)
        if error is not None:
            where = "/".join(str(p) for p in error.path)
            raise InvalidInput(f"{error.message}{f' (at {where})' if where else ''} at index {index} "
                               f"for input json: {text[:500]}")
    return items


def _encodable(item: Any) -> bool:
    try:
        orjson.dumps(item)
    except TypeError:
        return False
    return True


def _record(row: ExtraMetadata) -> dict[str, Any]:
    return {**row.metadata_, "id": row.id}


def _rows(session: Session, resource: Resource) -> list[ExtraMetadata]:
    return list(session.scalars(select(ExtraMetadata).where(ExtraMetadata.resource_id == resource.id)
                                .order_by(ExtraMetadata.id)))


def list_items(session: Session, resource: Resource,
               filters: Sequence[tuple[str, str]] = ()) -> list[dict[str, Any]]:
    """The items, those whose value under each query key equals the query value (as text)."""
    out = []
    for row in _rows(session, resource):
        data = row.metadata_
        if all(key in data and _text(data[key]) == value for key, value in filters):
            out.append(_record(row))
    return out


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return orjson.dumps(value).decode()


def add_items(session: Session, principal: Principal, settings: Settings, resource: Resource,
              body: Any) -> list[dict[str, Any]]:
    catalogue.require(session, principal, resource, perms.CHANGE_METADATA)
    for item in validate_items(settings, resource, body, need_id=False):
        session.add(ExtraMetadata(resource_id=resource.id,
                                  metadata_={k: v for k, v in item.items() if k != "id"}))
    session.flush()
    return list_items(session, resource)


def update_items(session: Session, principal: Principal, settings: Settings, resource: Resource,
                 body: Any) -> list[dict[str, Any]]:
    catalogue.require(session, principal, resource, perms.CHANGE_METADATA)
    items = validate_items(settings, resource, body, need_id=True)
    rows = {row.id: row for row in _rows(session, resource)}
    for index, item in enumerate(items):
        if item["id"] not in rows:
            raise InvalidInput(f"item {index}: this resource has no extra metadata with id {item['id']}")
    for item in items:
        rows[item["id"]].metadata_ = {k: v for k, v in item.items() if k != "id"}
    session.flush()
    return list_items(session, resource)


def delete_items(session: Session, principal: Principal, resource: Resource, body: Any) -> None:
    """DELETE takes a JSON list of ids (GeoNode's ``[4, 5]``); ids of other resources are ignored."""
    catalogue.require(session, principal, resource, perms.CHANGE_METADATA)
    ids = body.get("ids") if isinstance(body, Mapping) else body
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise InvalidInput("Expected a JSON list of extra metadata ids, such as [4, 5]")
    ids = [i for i in ids if 0 < i < 2**63]
    if ids:
        session.execute(delete(ExtraMetadata).where(ExtraMetadata.resource_id == resource.id,
                                                    ExtraMetadata.id.in_(ids)))
    session.flush()
