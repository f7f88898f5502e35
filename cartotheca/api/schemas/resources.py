"""cartotheca.api.schemas.resources: the resource record on the wire (GeoNode's field set)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from cartotheca.api.schemas.common import iso
from cartotheca.api.schemas.users import user_record
from cartotheca.catalogue import links
from cartotheca.catalogue.auth import Principal
from cartotheca.catalogue.query import Listing
from cartotheca.catalogue.query.resource_list import CONTACT_ROLES
from cartotheca.db.models import Resource

# Django content-type ids GeoNode reports; clients only echo them back.
CTYPE_IDS = {"dataset": "54", "document": "53", "map": "55", "geoapp": "56", "geostory": "56",
             "dashboard": "56", "service": "57"}
TAGS = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class RecordContext:
    site: str
    principal: Principal
    collection: str = "resources"


def _raw(value: str | None) -> str:
    return html.unescape(TAGS.sub("", value)) if value else "None"


def polygon(x0, y0, x1, y1) -> dict[str, Any] | None:
    if None in (x0, y0, x1, y1):
        return None
    return {"type": "Polygon",
            "coordinates": [[[x0, y0], [x0, y1], [x1, y1], [x1, y0], [x0, y0]]]}


def detail_url(site: str, resource: Resource) -> str:
    kind = resource.resource_type
    return f"{site}/catalogue/#/{kind}/{resource.id}"


def resource_record(r: Resource, listing: Listing, ctx: RecordContext) -> dict[str, Any]:
    site = ctx.site
    contacts: dict[str, list[dict[str, Any]]] = {role: [] for role in CONTACT_ROLES}
    for contact in r.contacts:
        if contact.role in contacts:
            contacts[contact.role].append(user_record(contact.user, None, site, show_perms=False))
    record: dict[str, Any] = {
        "pk": str(r.id),
        "uuid": r.uuid,
        "resource_type": r.resource_type,
        "polymorphic_ctype_id": CTYPE_IDS.get(r.resource_type, "0"),
        "perms": listing.perms.get(r.id, []),
        "owner": user_record(r.owner, ctx.principal, site),
        **contacts,
        "keywords": [{"name": k.name, "slug": k.slug} for k in r.keywords],
        "tkeywords": [_tkeyword(t) for t in r.tkeywords],
        "regions": [{"code": g.code, "name": g.name} for g in r.regions],
        "category": {"identifier": r.category.identifier,
                     "gn_description": r.category.gn_description} if r.category else None,
        "title": r.title,
        "abstract": r.abstract,
        "attribution": r.attribution,
        "alternate": r.alternate,
        "doi": r.doi,
        "bbox_polygon": polygon(r.bbox_x0, r.bbox_y0, r.bbox_x1, r.bbox_y1),
        "ll_bbox_polygon": polygon(r.ll_minx, r.ll_miny, r.ll_maxx, r.ll_maxy),
        "srid": r.srid,
        "date": iso(r.date),
        "date_type": r.date_type,
        "edition": r.edition,
        "purpose": r.purpose,
        "maintenance_frequency": r.maintenance_frequency,
        "restriction_code_type": {"identifier": r.restriction_code_type.identifier}
        if r.restriction_code_type else None,
        "constraints_other": r.constraints_other,
        "license": {"identifier": r.license.identifier} if r.license else None,
        "language": r.language,
        "spatial_representation_type": {"identifier": r.spatial_representation_type.identifier}
        if r.spatial_representation_type else None,
        "temporal_extent_start": iso(r.temporal_extent_start),
        "temporal_extent_end": iso(r.temporal_extent_end),
        "supplemental_information": r.supplemental_information,
        "data_quality_statement": r.data_quality_statement,
        "group": {"pk": r.group.id, "name": r.group.name} if r.group else None,
        "popular_count": str(r.popular_count),
        "share_count": str(r.share_count),
        "rating": str(r.rating),
        "featured": r.featured,
        "advertised": r.advertised,
        "is_published": r.is_published,
        "is_approved": r.is_approved,
        "detail_url": detail_url(site, r),
        "embed_url": links.embed_url(site, r) or r.embed_url or "",
        "created": iso(r.created),
        "last_updated": iso(r.last_updated),
        "raw_abstract": _raw(r.abstract),
        "raw_purpose": _raw(r.purpose),
        "raw_constraints_other": _raw(r.constraints_other),
        "raw_supplemental_information": _raw(r.supplemental_information),
        "raw_data_quality_statement": _raw(r.data_quality_statement),
        "metadata_only": r.metadata_only,
        "processed": r.processed,
        "state": r.state,
        "subtype": r.subtype,
        "sourcetype": r.sourcetype,
        "is_copyable": r.is_copyable,
        "download_url": links.download_url(site, r),
        "download_urls": download_urls(site, r),
        "extent": {"coords": [r.ll_minx, r.ll_miny, r.ll_maxx, r.ll_maxy], "srid": "EPSG:4326"}
        if r.ll_minx is not None else {"coords": [-180.0, -90.0, 180.0, 90.0], "srid": "EPSG:4326"},
        "favorite": r.id in listing.favorites,
        "thumbnail_url": links.thumbnail_url(site, r),
        "links": [link.as_dict() for link in links.resource_links(site, r)],
        "link": f"{site}/api/v2/{ctx.collection}/{r.id}",
        "metadata_uploaded_preserve": r.metadata_uploaded_preserve,
    }
    return record


def download_urls(site: str, r: Resource) -> list[dict[str, Any]]:
    """GeoNode's shapes: datasets ``{url, ajax_safe: true, default: true}``; documents
    ``{url, ajax_safe: false}`` (no ``default`` key)."""
    url = links.download_url(site, r)
    if not url:
        return []
    if r.resource_type == "document":
        return [{"url": url, "ajax_safe": False}]
    return [{"url": url, "ajax_safe": True, "default": True}]


def _tkeyword(t) -> dict[str, Any]:
    thesaurus = t.thesaurus
    return {
        "name": t.alt_label,
        "slug": t.about or str(t.id),
        "uri": t.about,
        "thesaurus": {"name": thesaurus.title, "slug": thesaurus.identifier, "uri": thesaurus.about},
        "i18n": {label.lang: label.label for label in t.labels},
    }


def records(listing: Listing, ctx: RecordContext) -> list[dict[str, Any]]:
    return [resource_record(r, listing, ctx) for r in listing.rows]


BARE = ("pk", "title")
BASIC = ("pk", "title", "abstract", "resource_type")
PRESETS = {"bare": BARE, "basic": BASIC}


def select_fields(record: dict[str, Any], include: list[str], exclude: list[str],
                  preset: str | None) -> dict[str, Any]:
    """``include[]``/``exclude[]``/``api_preset`` field selection (dynamic-rest)."""
    if preset in PRESETS:
        exclude, include = ["*"], list(PRESETS[preset]) + include
    if not include and not exclude:
        return record
    if "*" in exclude:
        keys = [k for k in include if k in record and "." not in k]
        return {k: record[k] for k in keys} if keys else {}
    out = {k: v for k, v in record.items() if k not in exclude}
    return out

