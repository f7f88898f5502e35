"""cartotheca.ows.service_identity: the service identification, provider and contact elements of
capabilities documents, written from one ``ServiceMetadata`` for every service.

OWS Common (WFS 1.1/2.0, WCS 2.0, WMTS 1.0) writes ``ServiceIdentification`` and
``ServiceProvider``; WMS 1.1.1/1.3.0 writes the ``Service`` element's keywords and
``ContactInformation``. Optional elements with no value are left out.
"""

from __future__ import annotations

from collections.abc import Iterable

from lxml import etree

from cartotheca import xmlsafe
from cartotheca.catalogue.service_metadata import ServiceMetadata

XLINK = "http://www.w3.org/1999/xlink"


def _el(parent: etree._Element, ns: str | None, tag: str, text: str | None = None,
        **attrs: str) -> etree._Element:
    return xmlsafe.sub_element(parent, f"{{{ns}}}{tag}" if ns else tag, text, attrs)


def _href(node: etree._Element, url: str) -> etree._Element:
    node.set(f"{{{XLINK}}}href", url)
    return node


def ows_identification(parent: etree._Element, ows: str, meta: ServiceMetadata, service_type: str,
                       versions: Iterable[str], *, profiles: Iterable[str] = (),
                       code_space: str | None = None) -> etree._Element:
    """``ows:ServiceIdentification`` (OWS Common 1.0, 1.1 and 2.0 share its order)."""
    ident = _el(parent, ows, "ServiceIdentification")
    _el(ident, ows, "Title", meta.title)
    _el(ident, ows, "Abstract", meta.abstract)
    if meta.keywords:
        keywords = _el(ident, ows, "Keywords")
        for word in meta.keywords:
            _el(keywords, ows, "Keyword", word)
    _el(ident, ows, "ServiceType", service_type, **({"codeSpace": code_space} if code_space else {}))
    for version in versions:
        _el(ident, ows, "ServiceTypeVersion", version)
    for profile in profiles:
        _el(ident, ows, "Profile", profile)
    _el(ident, ows, "Fees", meta.fees)
    _el(ident, ows, "AccessConstraints", meta.access_constraints)
    return ident


def ows_provider(parent: etree._Element, ows: str, meta: ServiceMetadata) -> etree._Element:
    """``ows:ServiceProvider`` with its ``ServiceContact``."""
    contact = meta.contact
    provider = _el(parent, ows, "ServiceProvider")
    _el(provider, ows, "ProviderName", contact.organization)
    _href(_el(provider, ows, "ProviderSite"), contact.url)
    service_contact = _el(provider, ows, "ServiceContact")
    if contact.name:
        _el(service_contact, ows, "IndividualName", contact.name)
    if contact.position:
        _el(service_contact, ows, "PositionName", contact.position)
    info = _el(service_contact, ows, "ContactInfo")
    if contact.phone or contact.fax:
        phone = _el(info, ows, "Phone")
        if contact.phone:
            _el(phone, ows, "Voice", contact.phone)
        if contact.fax:
            _el(phone, ows, "Facsimile", contact.fax)
    if contact.has_address or contact.email:
        address = _el(info, ows, "Address")
        for tag, value in (("DeliveryPoint", contact.address), ("City", contact.city),
                           ("AdministrativeArea", contact.state_or_province),
                           ("PostalCode", contact.postal_code), ("Country", contact.country),
                           ("ElectronicMailAddress", contact.email)):
            if value:
                _el(address, ows, tag, value)
    _href(_el(info, ows, "OnlineResource"), contact.url)
    _el(service_contact, ows, "Role", "pointOfContact")
    return provider


def wms_keywords(service: etree._Element, ns: str | None, meta: ServiceMetadata) -> None:
    if meta.keywords:
        keywords = _el(service, ns, "KeywordList")
        for word in meta.keywords:
            _el(keywords, ns, "Keyword", word)


def wms_contact_information(service: etree._Element, ns: str | None, meta: ServiceMetadata) -> None:
    """WMS ``ContactInformation`` (the same element order in 1.1.1 and 1.3.0)."""
    contact = meta.contact
    info = _el(service, ns, "ContactInformation")
    primary = _el(info, ns, "ContactPersonPrimary")
    _el(primary, ns, "ContactPerson", contact.name)
    _el(primary, ns, "ContactOrganization", contact.organization)
    if contact.position:
        _el(info, ns, "ContactPosition", contact.position)
    if contact.has_address:  # every child is mandatory once the address is given
        address = _el(info, ns, "ContactAddress")
        for tag, value in (("AddressType", "postal"), ("Address", contact.address),
                           ("City", contact.city), ("StateOrProvince", contact.state_or_province),
                           ("PostCode", contact.postal_code), ("Country", contact.country)):
            _el(address, ns, tag, value)
    if contact.phone:
        _el(info, ns, "ContactVoiceTelephone", contact.phone)
    if contact.fax:
        _el(info, ns, "ContactFacsimileTelephone", contact.fax)
    if contact.email:
        _el(info, ns, "ContactElectronicMailAddress", contact.email)
