"""cartotheca.api.schemas.permission_specs: the permissions endpoint's compact body."""

from __future__ import annotations

from typing import Any

from cartotheca.api.schemas.users import avatar_url
from cartotheca.db.models import Group, GroupProfile, User

INTERNAL_TITLES = {"anonymous": "anonymous"}


def compact_body(users: list[tuple[User, str]],
                 groups: list[tuple[Group, GroupProfile | None, str]],
                 site: str, registered_name: str) -> dict[str, Any]:
    body: dict[str, Any] = {"users": [], "organizations": [], "groups": []}
    for user, level in users:
        body["users"].append({
            "id": user.id, "username": user.username, "first_name": user.first_name,
            "last_name": user.last_name, "avatar": avatar_url(user, site), "permissions": level,
            "is_superuser": user.is_superuser, "is_staff": user.is_staff,
        })
    for group, profile, level in groups:
        if group.internal:
            title = "Registered Members" if group.name == registered_name else group.name
            body["groups"].append({"id": group.id, "title": title, "name": group.name,
                                   "permissions": level})
        else:
            body["organizations"].append({
                "id": group.id, "title": profile.title if profile else group.name,
                "name": group.name, "logo": (profile.logo or "") if profile else "",
                "permissions": level,
            })
    return body
