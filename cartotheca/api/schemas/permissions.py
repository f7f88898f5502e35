"""cartotheca.api.schemas.permissions: permission shapes on the wire (resource_types, perm specs)."""

from __future__ import annotations

from typing import Any

from cartotheca.catalogue import permissions as perms

LISTED_TYPES = ("dataset", "map", "document", "geostory", "dashboard")
LABELS = {"none": "None", "view": "View", "download": "Download", "edit": "Edit",
          "manage": "Manage", "owner": "Owner"}


def _compact(levels: list[str]) -> list[dict[str, str]]:
    return [{"name": level, "label": LABELS[level]} for level in levels]


def allowed_perms(resource_type: str) -> dict[str, Any]:
    downloadable = resource_type in perms.DOWNLOADABLE_TYPES
    public_levels = ["none", "view"] + (["download"] if downloadable else [])
    member_levels = public_levels + ["edit", "manage"]
    default_levels = ["view"] + (["download"] if downloadable else []) + ["edit", "manage", "owner"]
    full = perms.for_type(perms.LEVELS["manage"], resource_type)
    public = perms.for_type(perms.LEVELS["download"], resource_type)
    return {
        "perms": {"anonymous": public, "default": full, "registered-members": full},
        "compact": {
            "anonymous": _compact(public_levels),
            "default": _compact(default_levels),
            "registered-members": _compact(member_levels),
        },
    }


def resource_types_body(counts: dict[str, int]) -> dict[str, Any]:
    names = list(LISTED_TYPES) + (["service"] if counts.get("service") else [])
    return {"resource_types": [
        {"name": name, "count": counts.get(name, 0), "allowed_perms": allowed_perms(name)}
        for name in names
    ]}
