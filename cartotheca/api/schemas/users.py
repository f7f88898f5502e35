"""cartotheca.api.schemas.users: the embedded user object (owner, contacts, user lists)."""

from __future__ import annotations

from typing import Any

from cartotheca.catalogue.auth import Principal
from cartotheca.db.models import User

DEFAULT_AVATAR = "static/web/avatar.png"  # served by the web pages' static mount


def avatar_url(user: User, site: str) -> str:
    if user.avatar and user.avatar.startswith("http"):
        return user.avatar
    return f"{site}/{(user.avatar or DEFAULT_AVATAR).lstrip('/')}"


def global_perms(user: User) -> list[str]:
    # Every active registered user may add resources (GeoNode's "add_resource").
    return ["add_resource"] if user.is_active else []


def user_record(user: User, principal: Principal | None, site: str, *,
                show_perms: bool | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "pk": user.id,
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "avatar": avatar_url(user, site),
        "is_superuser": user.is_superuser,
        "is_staff": user.is_staff,
        "email": user.email,
        "link": f"{site}/api/v2/users/{user.id}",
    }
    if show_perms is None:
        show_perms = principal is not None and (principal.id == user.id or principal.is_staff)
    if show_perms:
        record["perms"] = global_perms(user)
    return record
