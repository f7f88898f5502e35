"""cartotheca.catalogue.csw.records: the catalogue's resources as pycsw records.

pycsw names every property of a record by its core model (``pycsw:Title`` is read from the
attribute ``title``, ``pycsw:XML`` from ``xml``, ...). ``record_columns`` gives the properties
filters, sorting and GetDomain run on, as SQL over the catalogue's own tables; ``CatalogueRecord``
gives every property of one loaded resource, which pycsw's output schemas (Dublin Core, ISO,
Atom, DIF, FGDC, ebRIM) write out. The full ISO record is the catalogue's own ISO 19139 document,
the same one an uploaded ISO file is read back into.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from lxml import etree
from sqlalchemy import ColumnElement, Select, case, func, literal, null, select

from cartotheca import xmlsafe
from cartotheca.catalogue import iso_export
from cartotheca.catalogue.links import Link, resource_links
from cartotheca.db.models import Resource
from cartotheca.db.models.accounts import User
from cartotheca.db.models.reference import Category, Keyword, License, Region, RestrictionCodeType
from cartotheca.db.models.resources import resource_keywords, resource_regions

GMD = "http://www.isotc211.org/2005/gmd"
# Every record is held as ISO 19139, as GeoNode's are; pycsw converts it to the other schemas.
TYPENAME = "gmd:MD_Metadata"
DOWNLOAD_PROTOCOL = "WWW:DOWNLOAD-1.0-http--download"
LINK_PROTOCOL = "WWW:LINK-1.0-http--link"


def _keyword_names() -> ColumnElement[str]:
    return (select(func.aggregate_strings(Keyword.name, ","))
            .select_from(resource_keywords.join(Keyword))
            .where(resource_keywords.c.resource_id == Resource.id)
            .scalar_subquery())


def _region_names() -> ColumnElement[str]:
    return (select(func.aggregate_strings(Region.name, ","))
            .select_from(resource_regions.join(Region))
            .where(resource_regions.c.resource_id == Resource.id)
            .scalar_subquery())


def _lookup(column, key) -> ColumnElement[str]:
    """The ``column`` of the row ``key`` points at (category, licence, owner ...)."""
    return select(column).where(column.table.c.id == key).scalar_subquery()


def _dated(kind: str) -> ColumnElement:
    return case((Resource.date_type == kind, Resource.date), else_=null())


def _scope_code() -> ColumnElement[str]:
    # ISO MD_ScopeCode, as the ISO document writes it in hierarchyLevel
    return case((Resource.resource_type == "dataset", "dataset"),
                (Resource.resource_type == "service", "service"), else_="nonGeographicDataset")


def _anytext(keywords, regions, category, owner) -> ColumnElement[str]:
    parts = [Resource.title, Resource.abstract, Resource.purpose, Resource.supplemental_information,
             Resource.alternate, keywords, regions, category, owner]
    text: ColumnElement[str] = func.coalesce(parts[0], "")
    for part in parts[1:]:
        text = text + " " + func.coalesce(part, "")
    return text


def record_columns() -> dict[str, ColumnElement]:
    """pycsw core property name → SQL over ``resources`` (queryable and sortable properties)."""
    keywords, regions = _keyword_names(), _region_names()
    category = _lookup(Category.identifier, Resource.category_id)
    owner = _lookup(User.username, Resource.owner_id)
    return {
        "pycsw:Identifier": Resource.uuid,
        "pycsw:Typename": literal(TYPENAME),
        "pycsw:Schema": literal(GMD),
        "pycsw:MdSource": literal("local"),
        "pycsw:InsertDate": Resource.created,
        "pycsw:AnyText": _anytext(keywords, regions, category, owner),
        "pycsw:Language": Resource.language,
        "pycsw:ResourceLanguage": Resource.language,
        "pycsw:Title": Resource.title,
        "pycsw:Abstract": Resource.abstract,
        "pycsw:Edition": Resource.edition,
        "pycsw:Keywords": keywords,
        "pycsw:Type": _scope_code(),
        "pycsw:Date": Resource.date,
        "pycsw:Modified": Resource.last_updated,
        "pycsw:CreationDate": _dated("creation"),
        "pycsw:PublicationDate": _dated("publication"),
        "pycsw:RevisionDate": _dated("revision"),
        "pycsw:TempExtent_begin": Resource.temporal_extent_start,
        "pycsw:TempExtent_end": Resource.temporal_extent_end,
        "pycsw:CRS": Resource.srid,
        "pycsw:TopicCategory": category,
        "pycsw:Creator": owner,
        "pycsw:OrganizationName": owner,
        "pycsw:AccessConstraints": _lookup(RestrictionCodeType.identifier,
                                           Resource.restriction_code_type_id),
        "pycsw:OtherConstraints": Resource.constraints_other,
        "pycsw:ConditionApplyingToAccessAndUse": _lookup(License.identifier, Resource.license_id),
        "pycsw:Lineage": Resource.data_quality_statement,
        "pycsw:GeographicDescriptionCode": regions,
    }


# The lon/lat box is what spatial filters and spatial sorting read.
BOX_COLUMNS = ("ll_minx", "ll_miny", "ll_maxx", "ll_maxy")


def records_select(mappings: Mapping[str, str], where: ColumnElement[bool]) -> Select:
    """One row per visible resource: its id, its box and every queryable property, each
    labelled with the attribute name pycsw's ``mappings`` give it."""
    columns = [Resource.id.label("resource_id")]
    columns += [getattr(Resource, name).label(name) for name in BOX_COLUMNS]
    columns += [expr.label(mappings[name]) for name, expr in record_columns().items()]
    return select(*columns).where(where)


class CatalogueRecord:
    """One resource as pycsw reads it: queryable properties from its row, the rest (links,
    contacts, the ISO document, the footprint) from the loaded resource."""

    def __init__(self, values: Mapping[str, Any], resource: Resource, site: str):
        self._values = values
        self._resource = resource
        self._site = site

    def __getattr__(self, name: str) -> Any:
        # pycsw asks for every property of its model; the ones the catalogue has no value for
        # are absent, which pycsw writes as missing elements. Text is cleaned here because
        # pycsw writes it into XML itself and one stored control character would fail the
        # whole response.
        try:
            value = self._values[name]
        except KeyError:
            raise AttributeError(name) from None
        return xmlsafe.clean(value) if isinstance(value, str) else value

    @cached_property
    def _links(self) -> list[Link]:
        return [link for link in resource_links(self._site, self._resource)
                if link.link_type != "metadata"]

    @cached_property
    def xml(self) -> bytes:
        return etree.tostring(iso_export.iso_document(self._resource, self._links), encoding="UTF-8")

    @cached_property
    def links(self) -> str:
        return json.dumps([{"name": xmlsafe.clean(link.name),
                            "description": xmlsafe.clean(f"{link.name} ({link.mime})"),
                            "protocol": _protocol(link), "url": xmlsafe.clean(link.url)}
                           for link in self._links])

    @cached_property
    def wkt_geometry(self) -> str | None:
        r = self._resource
        if r.ll_minx is None:
            return None
        x0, y0, x1, y1 = (float(v) for v in (r.ll_minx, r.ll_miny, r.ll_maxx, r.ll_maxy))
        return f"POLYGON(({x0} {y0}, {x0} {y1}, {x1} {y1}, {x1} {y0}, {x0} {y0}))"

    @cached_property
    def contacts(self) -> str:
        people = [(c.user, c.role) for c in self._resource.contacts]
        if not people:
            people = [(self._resource.owner, "pointOfContact")]
        return json.dumps([_contact(user, role) for user, role in people])

    @cached_property
    def publisher(self) -> str | None:
        name = next((c.user.username for c in self._resource.contacts if c.role == "publisher"), None)
        return None if name is None else xmlsafe.clean(name)

    @cached_property
    def contributor(self) -> str | None:
        names = [c.user.username for c in self._resource.contacts if c.role == "processor"]
        return xmlsafe.clean(",".join(names)) or None


def _protocol(link: Link) -> str:
    if link.link_type.startswith("OGC:"):
        return link.link_type
    return DOWNLOAD_PROTOCOL if link.link_type in ("original", "data") else LINK_PROTOCOL


def _contact(user: User, role: str) -> dict[str, str | None]:
    name = " ".join(p for p in (user.first_name, user.last_name) if p) or user.username
    return {"name": xmlsafe.clean(name), "organization": None, "position": None,
            "email": xmlsafe.clean(user.email) or None,
            "role": iso_export.ROLE_CODES.get(role, role)}
