"""cartotheca.catalogue.service_metadata: what each OGC service says about itself.

The title, abstract, keywords, fees, access constraints, provider and contact that WMS, WFS,
WCS, WMTS and CSW capabilities carry, from the ``OWS_*`` settings. A setting left unset keeps
the service's own default, so an operator sets the identity once and every service follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cartotheca import siteurl

ANY_EPSG_NOTE = ("Layers are served in any EPSG coordinate reference system: give CRS (1.3.0) or "
                 "SRS (1.1.1) as EPSG:<code>, besides the ones listed.")

# service → (title, abstract, keywords) used when the OWS_SERVICE_* setting is not set
SERVICE_DEFAULTS: dict[str, tuple[str, str, list[str]]] = {
    "WMS": ("Cartotheca WMS", f"Web Map Service of the Cartotheca catalogue. {ANY_EPSG_NOTE}",
            ["WMS", "Cartotheca", "GeoNode"]),
    "WFS": ("Cartotheca Web Feature Service", "Vector datasets of the catalogue as features", []),
    "WCS": ("Cartotheca WCS", "Raster datasets of the Cartotheca catalogue as coverages.", []),
    "WMTS": ("Cartotheca WMTS", "Tiles of the Cartotheca catalogue's datasets.", []),
    "CSW": ("Cartotheca catalogue",
            "The records of the catalogue's datasets, maps, documents and apps",
            ["catalogue", "discovery", "metadata"]),
}


@dataclass(frozen=True)
class Contact:
    name: str
    organization: str
    position: str
    email: str
    phone: str
    fax: str
    address: str
    city: str
    state_or_province: str
    postal_code: str
    country: str
    url: str

    @property
    def has_address(self) -> bool:
        return any((self.address, self.city, self.state_or_province, self.postal_code, self.country))


@dataclass(frozen=True)
class ServiceMetadata:
    title: str
    abstract: str
    keywords: list[str]
    fees: str
    access_constraints: str
    contact: Contact


def service_metadata(settings: Any, service: str) -> ServiceMetadata:
    """The identification and provider of ``service`` ("WMS", "WFS", "WCS", "WMTS", "CSW")."""
    title, abstract, keywords = SERVICE_DEFAULTS[service]
    contact = Contact(
        name=settings.OWS_CONTACT_NAME if settings.OWS_CONTACT_NAME is not None else settings.ADMIN_USER,
        organization=settings.OWS_CONTACT_ORGANIZATION,
        position=settings.OWS_CONTACT_POSITION,
        email=settings.OWS_CONTACT_EMAIL if settings.OWS_CONTACT_EMAIL is not None else settings.ADMIN_EMAIL,
        phone=settings.OWS_CONTACT_PHONE,
        fax=settings.OWS_CONTACT_FAX,
        address=settings.OWS_CONTACT_ADDRESS,
        city=settings.OWS_CONTACT_CITY,
        state_or_province=settings.OWS_CONTACT_STATE_OR_PROVINCE,
        postal_code=settings.OWS_CONTACT_POSTAL_CODE,
        country=settings.OWS_CONTACT_COUNTRY,
        url=settings.OWS_CONTACT_URL or siteurl.url(settings),
    )
    return ServiceMetadata(
        title=settings.OWS_SERVICE_TITLE if settings.OWS_SERVICE_TITLE is not None else title,
        abstract=settings.OWS_SERVICE_ABSTRACT if settings.OWS_SERVICE_ABSTRACT is not None else abstract,
        keywords=list(settings.OWS_SERVICE_KEYWORDS if settings.OWS_SERVICE_KEYWORDS is not None
                      else keywords),
        fees=settings.OWS_SERVICE_FEES,
        access_constraints=settings.OWS_SERVICE_ACCESS_CONSTRAINTS,
        contact=contact,
    )
