"""cartotheca.api.schemas.resource_extras: linked resources and ratings on the wire."""

from __future__ import annotations

from typing import Any

from cartotheca.api.schemas.resources import detail_url
from cartotheca.catalogue import links
from cartotheca.catalogue.linked_resources import Linked
from cartotheca.db.models import LinkedResource, Resource


def linked_item(link: LinkedResource, other: Resource, site: str) -> dict[str, Any]:
    """GeoNode's LinkedResourceSerializer: the link's ``internal`` flag and the other end."""
    return {
        "internal": link.internal,
        "pk": other.id,
        "title": other.title,
        "resource_type": other.resource_type,
        "detail_url": detail_url(site, other),
        "thumbnail_url": links.thumbnail_url(site, other),
    }


def linked_body(linked: Linked, site: str) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if linked.warnings:
        body["WARNINGS"] = dict(linked.warnings)
    if linked.linked_to is not None:
        body["linked_to"] = [linked_item(link, other, site) for link, other in linked.linked_to]
    if linked.linked_by is not None:
        body["linked_by"] = [linked_item(link, other, site) for link, other in linked.linked_by]
    return body
