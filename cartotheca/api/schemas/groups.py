"""cartotheca.api.schemas.groups: the group profile and owner records on the wire."""

from __future__ import annotations

from typing import Any

from cartotheca.api.schemas.users import avatar_url, global_perms
from cartotheca.db.models import GroupProfile, User


def _absolute(value: str | None, site: str) -> str | None:
    if not value:
        return None
    return value if value.startswith("http") else f"{site}/{value.lstrip('/')}"


def group_record(profile: GroupProfile, site: str) -> dict[str, Any]:
    """GeoNode's GroupProfileSerializer: ``pk`` is the profile, ``group.pk`` the permission id."""
    return {
        "pk": profile.id,
        "title": profile.title,
        "group": {"pk": profile.group.id, "name": profile.group.name},
        "slug": profile.slug,
        "logo": _absolute(profile.logo, site),
        "description": profile.description,
        "email": profile.email,
        "keywords": list(profile.keywords or []),
        "access": profile.access,
        "categories": list(profile.categories or []),
        "link": f"{site}/api/v2/groups/{profile.id}",
    }


def owner_record(user: User, count: int, site: str) -> dict[str, Any]:
    """Owners are public: no e-mail or staff flags, global perms shown to everyone (GeoNode)."""
    return {
        "pk": user.id,
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "avatar": avatar_url(user, site),
        "perms": global_perms(user),
        "link": f"{site}/api/v2/owners/{user.id}",
        "count": count,
    }
