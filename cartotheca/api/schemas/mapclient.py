"""cartotheca.api.schemas.mapclient: the web map client's resources and users on the wire.

Shapes of MapStore's adapter: a resource is ``{id, user, name, creation_date, last_update}``,
with ``data`` and ``attributes`` when asked for in full (``?full=true``) and in write answers.
"""

from __future__ import annotations

from typing import Any

from cartotheca.api.schemas.common import iso
from cartotheca.db.models import MapClientResource, User


def resource_record(row: MapClientResource, username: str, *, full: bool) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": row.id,
        "user": username,
        "name": row.name,
        "creation_date": iso(row.creation_date),
        "last_update": iso(row.last_update),
    }
    if full:
        record["data"] = row.data
        record["attributes"] = list(row.attributes or [])
    return record


def user_record(user: User, site: str) -> dict[str, Any]:
    return {
        "id": user.id,
        "url": f"{site}/mapclient/rest/users/{user.id}/",
        "username": user.username,
        "email": user.email,
        "is_staff": user.is_staff,
        "is_active": user.is_active,
        "is_superuser": user.is_superuser,
    }
