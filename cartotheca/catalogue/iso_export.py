"""cartotheca.catalogue.iso_export: a resource as an ISO 19139 document (the "ISO" metadata link).

The document is the one ``iso_metadata.read_iso`` reads back to the same values, so a record
exported from one catalogue and imported into another keeps its fields; the CSW answers its
``gmd`` output schema with it too.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from lxml import etree

from cartotheca import xmlsafe
from cartotheca.catalogue.iso_metadata import GMD, ROLES, XLINK
from cartotheca.db.models import Resource, ThesaurusKeyword, User

GCO = "http://www.isotc211.org/2005/gco"
GML = "http://www.opengis.net/gml"
CODELISTS = "http://standards.iso.org/iso/19139/resources/gmxCodelists.xml"
GMX = "http://www.isotc211.org/2005/gmx"
ISO_NS = {"gmd": GMD, "gco": GCO, "gmx": GMX, "gml": GML, "xlink": XLINK}
# The resource's contact role → ISO CI_RoleCode
ROLE_CODES = {role: code for code, role in ROLES.items()}


def _el(parent: etree._Element | None, name: str, text: str | None = None,
        **attrs: str) -> etree._Element:
    prefix, local = name.split(":")
    tag = f"{{{ISO_NS[prefix]}}}{local}"
    if parent is not None:
        return xmlsafe.sub_element(parent, tag, text, attrs)
    el = etree.Element(tag, {k: xmlsafe.clean(v) for k, v in attrs.items()}, nsmap=ISO_NS)
    if text is not None:
        el.text = xmlsafe.clean(text)
    return el


def _string(parent: etree._Element, name: str, text: str | None) -> None:
    if text:
        _el(_el(parent, name), "gco:CharacterString", text)


def _codelist(parent: etree._Element, name: str, code: str, value: str) -> None:
    _el(_el(parent, name), f"gmd:{code}", value, codeList=f"{CODELISTS}#{code}", codeListValue=value)


def _iso_date(value: dt.datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def _responsible(parent: etree._Element, name: str, user: User, role: str) -> None:
    party = _el(_el(parent, name), "gmd:CI_ResponsibleParty")
    _string(party, "gmd:individualName", user.username)
    full = " ".join(p for p in (user.first_name, user.last_name) if p)
    _string(party, "gmd:positionName", full or None)
    if user.email:
        address = _el(_el(_el(_el(party, "gmd:contactInfo"), "gmd:CI_Contact"), "gmd:address"),
                      "gmd:CI_Address")
        _string(address, "gmd:electronicMailAddress", user.email)
    _codelist(party, "gmd:role", "CI_RoleCode", role)


def iso_document(resource: Resource, links: Sequence[Any] = ()) -> etree._Element:
    """An ISO 19139 ``gmd:MD_Metadata`` of ``resource`` (relations loaded), which
    ``read_iso`` reads back to the same values; ``links`` become online resources."""
    md = _el(None, "gmd:MD_Metadata")
    _string(md, "gmd:fileIdentifier", resource.uuid)
    _el(_el(md, "gmd:language"), "gmd:LanguageCode", resource.language,
        codeList="http://www.loc.gov/standards/iso639-2/", codeListValue=resource.language)
    _codelist(md, "gmd:hierarchyLevel", "MD_ScopeCode",
              "dataset" if resource.resource_type == "dataset" else "nonGeographicDataset")
    authors = [c.user for c in resource.contacts if c.role == "metadata_author"] or [resource.owner]
    for user in authors:
        _responsible(md, "gmd:contact", user, "author")
    _el(_el(md, "gmd:dateStamp"), "gco:DateTime", _iso_date(resource.last_updated))
    if resource.srid:
        code = _el(_el(_el(_el(md, "gmd:referenceSystemInfo"), "gmd:MD_ReferenceSystem"),
                       "gmd:referenceSystemIdentifier"), "gmd:RS_Identifier")
        _string(code, "gmd:code", resource.srid)
    _identification(_el(_el(md, "gmd:identificationInfo"), "gmd:MD_DataIdentification"), resource)
    if links:
        _distribution(md, links)
    if resource.data_quality_statement:
        quality = _el(_el(md, "gmd:dataQualityInfo"), "gmd:DQ_DataQuality")
        # DQ_DataQuality requires its scope
        _codelist(_el(_el(quality, "gmd:scope"), "gmd:DQ_Scope"), "gmd:level", "MD_ScopeCode", "dataset")
        _string(_el(_el(quality, "gmd:lineage"), "gmd:LI_Lineage"), "gmd:statement",
                resource.data_quality_statement)
    return md


def _identification(info: etree._Element, resource: Resource) -> None:
    citation = _el(_el(info, "gmd:citation"), "gmd:CI_Citation")
    _string(citation, "gmd:title", resource.title)
    date = _el(_el(citation, "gmd:date"), "gmd:CI_Date")
    _el(_el(date, "gmd:date"), "gco:DateTime", _iso_date(resource.date))
    _codelist(date, "gmd:dateType", "CI_DateTypeCode", resource.date_type or "publication")
    _string(citation, "gmd:edition", resource.edition)
    # gmd:abstract is mandatory, even when there is nothing to say
    _el(_el(info, "gmd:abstract"), "gco:CharacterString", resource.abstract or "")
    _string(info, "gmd:purpose", resource.purpose)
    for contact in resource.contacts:
        if contact.role != "metadata_author" and contact.role in ROLE_CODES:
            _responsible(info, "gmd:pointOfContact", contact.user, ROLE_CODES[contact.role])
    if resource.maintenance_frequency:
        maintenance = _el(_el(info, "gmd:resourceMaintenance"), "gmd:MD_MaintenanceInformation")
        _codelist(maintenance, "gmd:maintenanceAndUpdateFrequency", "MD_MaintenanceFrequencyCode",
                  resource.maintenance_frequency)
    _keyword_blocks(info, resource)
    _constraint_block(info, resource)
    if resource.spatial_representation_type is not None:
        _codelist(info, "gmd:spatialRepresentationType", "MD_SpatialRepresentationTypeCode",
                  resource.spatial_representation_type.identifier)
    _el(_el(info, "gmd:language"), "gmd:LanguageCode", resource.language,
        codeList="http://www.loc.gov/standards/iso639-2/", codeListValue=resource.language)
    if resource.category is not None:
        _el(_el(info, "gmd:topicCategory"), "gmd:MD_TopicCategoryCode", resource.category.identifier)
    _extent(info, resource)
    _string(info, "gmd:supplementalInformation", resource.supplemental_information)


def _keyword_blocks(info: etree._Element, resource: Resource) -> None:
    if resource.keywords:
        block = _el(_el(info, "gmd:descriptiveKeywords"), "gmd:MD_Keywords")
        for keyword in resource.keywords:
            _string(block, "gmd:keyword", keyword.name)
    by_thesaurus: dict[int, list[ThesaurusKeyword]] = {}
    for tkeyword in resource.tkeywords:
        by_thesaurus.setdefault(tkeyword.thesaurus_id, []).append(tkeyword)
    for words in by_thesaurus.values():
        block = _el(_el(info, "gmd:descriptiveKeywords"), "gmd:MD_Keywords")
        for word in words:
            if word.about:
                _el(_el(block, "gmd:keyword"), "gmx:Anchor", word.alt_label,
                    **{f"{{{XLINK}}}href": word.about})
            else:
                _string(block, "gmd:keyword", word.alt_label)
        thesaurus = words[0].thesaurus
        name = _el(_el(block, "gmd:thesaurusName"), "gmd:CI_Citation")
        _string(name, "gmd:title", thesaurus.title)


def _constraint_block(info: etree._Element, resource: Resource) -> None:
    texts = []
    if resource.license is not None:
        texts.append(resource.license.identifier)
    if resource.constraints_other:
        texts.append(resource.constraints_other)
    if not texts and resource.restriction_code_type is None:
        return
    legal = _el(_el(info, "gmd:resourceConstraints"), "gmd:MD_LegalConstraints")
    # ISO 19139 order: useLimitation (of MD_Constraints) before accessConstraints
    if resource.license is not None:
        _string(legal, "gmd:useLimitation", resource.license.identifier)
    if resource.restriction_code_type is not None:
        _codelist(legal, "gmd:accessConstraints", "MD_RestrictionCode",
                  resource.restriction_code_type.identifier)
    if resource.constraints_other:
        _string(legal, "gmd:otherConstraints", resource.constraints_other)


def _extent(info: etree._Element, resource: Resource) -> None:
    has_box = resource.ll_minx is not None
    has_time = resource.temporal_extent_start is not None or resource.temporal_extent_end is not None
    if not has_box and not has_time:
        return
    extent = _el(_el(info, "gmd:extent"), "gmd:EX_Extent")
    if has_box:
        box = _el(_el(extent, "gmd:geographicElement"), "gmd:EX_GeographicBoundingBox")
        for name, value in (("westBoundLongitude", resource.ll_minx),
                            ("eastBoundLongitude", resource.ll_maxx),
                            ("southBoundLatitude", resource.ll_miny),
                            ("northBoundLatitude", resource.ll_maxy)):
            _el(_el(box, f"gmd:{name}"), "gco:Decimal", repr(float(value)))
    if has_time:
        period = _el(_el(_el(_el(extent, "gmd:temporalElement"), "gmd:EX_TemporalExtent"),
                         "gmd:extent"), "gml:TimePeriod")
        period.set(f"{{{GML}}}id", f"period-{resource.uuid}")
        _el(period, "gml:beginPosition", _iso_date(resource.temporal_extent_start) or "")
        _el(period, "gml:endPosition", _iso_date(resource.temporal_extent_end) or "")


def _distribution(md: etree._Element, links: Sequence[Any]) -> None:
    transfer = _el(_el(_el(_el(md, "gmd:distributionInfo"), "gmd:MD_Distribution"),
                       "gmd:transferOptions"), "gmd:MD_DigitalTransferOptions")
    for link in links:
        online = _el(_el(transfer, "gmd:onLine"), "gmd:CI_OnlineResource")
        _el(_el(online, "gmd:linkage"), "gmd:URL", link.url)
        _string(online, "gmd:protocol", link.link_type if link.link_type.startswith("OGC:")
                else "WWW:DOWNLOAD-1.0-http--download")
        _string(online, "gmd:name", link.name)
        _string(online, "gmd:description", f"{link.name} ({link.mime})")
