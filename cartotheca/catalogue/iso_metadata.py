"""cartotheca.catalogue.iso_metadata: ISO 19115 metadata (19139 XML, and 19115-3) onto a resource.

``read_iso`` turns a metadata document into plain values without touching the database;
``apply_iso_metadata`` looks those values up (categories, licences, users, keywords) and sets
them on the resource. Fields the document does not carry are left as they are, so a partial
file never blanks a record. Both ISO encodings name their elements alike (``title``,
``abstract``, ``keyword`` ...) under different namespaces and wrappers, so paths are matched on
local names below the verified ``MD_Metadata`` root.

The caller parses the XML with ``cartotheca.xmlsafe.parse`` (no DTDs, no entities) and owns
the transaction: a document refused half-way must leave nothing changed.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from lxml import etree
from sqlalchemy import func, or_, select
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import Session

from cartotheca import timeutil, xmlsafe
from cartotheca.db.base import utcnow
from cartotheca.db.models import (
    Category,
    ContactRole,
    License,
    Resource,
    RestrictionCodeType,
    SpatialRepresentationType,
    ThesaurusKeyword,
    User,
)
from cartotheca.errors import InvalidInput
from cartotheca.xmlsafe import local_name

GMD = "http://www.isotc211.org/2005/gmd"
GMI = "http://www.isotc211.org/2005/gmi"
MDB_PREFIX = "http://standards.iso.org/iso/19115/-3/mdb/"
ROOT_NAMES = {"MD_Metadata", "MI_Metadata"}
DATE_TYPES = ("creation", "publication", "revision")
# ISO CI_RoleCode → the resource's contact role; "owner" is left to the permission system.
ROLES = {
    "pointOfContact": "poc", "author": "metadata_author", "publisher": "publisher",
    "custodian": "custodian", "distributor": "distributor", "user": "resource_user",
    "resourceProvider": "resource_provider", "originator": "originator",
    "principalInvestigator": "principal_investigator", "processor": "processor",
}
VALUE_ELEMENTS = {"CharacterString", "Anchor", "Date", "DateTime", "Decimal", "Integer", "Real",
                  "Boolean", "LocalisedCharacterString", "URL", "Measure"}
MAX_SHORT = 255
XLINK = "http://www.w3.org/1999/xlink"


@dataclass
class Party:
    role: str  # the resource's contact role (poc, metadata_author ...)
    emails: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


@dataclass
class KeywordGroup:
    words: list[str]
    anchors: list[str | None]  # each word's gmx:Anchor href (matched to thesaurus keyword URIs)
    thesaurus: str | None


@dataclass
class IsoRecord:
    """What an ISO document says about a resource; None/empty where it says nothing."""

    identifier: str | None = None
    title: str | None = None
    abstract: str | None = None
    purpose: str | None = None
    edition: str | None = None
    supplemental_information: str | None = None
    data_quality_statement: str | None = None
    maintenance_frequency: str | None = None
    language: str | None = None
    date: dt.datetime | None = None
    date_type: str | None = None
    temporal_extent: tuple[dt.datetime | None, dt.datetime | None] | None = None
    topic_categories: list[str] = field(default_factory=list)
    keywords: list[KeywordGroup] = field(default_factory=list)
    parties: list[Party] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    licence_hints: list[str] = field(default_factory=list)
    restriction_codes: list[str] = field(default_factory=list)
    spatial_representation: str | None = None


# ---------------------------------------------------------------------------------------
# reading


@lru_cache(maxsize=256)
def _xpath(path: str) -> etree.XPath:
    """``a/*/b`` → an XPath over local names (``*`` is any element)."""
    steps = []
    for step in path.split("/"):
        if step == "*":
            steps.append("*")
        elif step.startswith("/"):
            steps.append(step)
        else:
            steps.append(f"*[local-name()='{step}']")
    return etree.XPath("/".join(steps))


def _all(el: etree._Element, path: str) -> list[etree._Element]:
    return [e for e in _xpath(path)(el) if isinstance(e.tag, str)]


def _first(el: etree._Element, path: str) -> etree._Element | None:
    found = _all(el, path)
    return found[0] if found else None


def _value(el: etree._Element | None) -> str | None:
    """The text an ISO property holds: its gco:CharacterString (or Anchor, Date ...) child,
    or its own text for a bare element."""
    if el is None:
        return None
    for child in el:
        if isinstance(child.tag, str) and local_name(child) in VALUE_ELEMENTS:
            text = child.text
            break
    else:
        text = el.text
    text = (text or "").strip()
    return text or None


def _text(el: etree._Element, path: str) -> str | None:
    return _value(_first(el, path))


def _code(el: etree._Element | None) -> str | None:
    """A codelist value: ``codeListValue`` of the code element, else its text."""
    if el is None:
        return None
    value = el.get("codeListValue") or (el.text or "").strip()
    return value or None


def metadata_root(root: etree._Element) -> etree._Element:
    """The ``MD_Metadata`` element of the document (also inside a CSW GetRecordById answer)."""
    if local_name(root) in ROOT_NAMES and _iso_namespace(root):
        return root
    for el in root.iter():
        if isinstance(el.tag, str) and local_name(el) in ROOT_NAMES and _iso_namespace(el):
            return el
    raise InvalidInput("metadata_file is not an ISO 19115 metadata document (gmd:MD_Metadata)")


def _iso_namespace(el: etree._Element) -> bool:
    namespace = etree.QName(el).namespace or ""
    return namespace in (GMD, GMI) or namespace.startswith(MDB_PREFIX)


def read_identifier(root: etree._Element) -> str | None:
    md = metadata_root(root)
    return _text(md, "fileIdentifier") or _text(md, "metadataIdentifier/*/code")


def check_identifier(root: etree._Element, resource_uuid: str) -> None:
    """A file about another resource is refused (GeoNode compares the file's identifier)."""
    identifier = read_identifier(root)
    if identifier is not None and identifier.strip().lower() != resource_uuid.lower():
        raise InvalidInput("The UUID identifier from the XML Metadata, is different from the one saved")


def read_iso(root: etree._Element) -> IsoRecord:
    md = metadata_root(root)
    info = _first(md, "identificationInfo/*")
    record = IsoRecord(identifier=read_identifier(md))
    record.parties = [_party(p, "metadata_author") for p in _all(md, "contact/*")]
    record.data_quality_statement = _text(md, "dataQualityInfo/*/lineage/*/statement") or \
        _text(md, "resourceLineage/*/statement")
    if info is None:
        return record
    citation = _first(info, "citation/*")
    if citation is not None:
        record.title = _text(citation, "title")
        record.edition = _text(citation, "edition")
        record.date, record.date_type = _citation_date(citation)
    record.abstract = _text(info, "abstract")
    record.purpose = _text(info, "purpose")
    record.supplemental_information = _text(info, "supplementalInformation")
    record.maintenance_frequency = _code(_first(
        info, "resourceMaintenance/*/maintenanceAndUpdateFrequency/*"))
    record.language = _language(info) or _language(md)
    record.topic_categories = [c for c in (_value(e) for e in _all(info, "topicCategory/*")) if c] or \
        [c for c in (_value(e) for e in _all(info, "topicCategory")) if c]
    record.keywords = [_keywords(block) for block in _all(info, "descriptiveKeywords/*")]
    record.parties += [_party(p, "poc") for p in _all(info, "pointOfContact/*")]
    record.temporal_extent = _temporal_extent(info)
    record.spatial_representation = _code(_first(info, "spatialRepresentationType/*"))
    _constraints(info, record)
    return record


def _citation_date(citation: etree._Element) -> tuple[dt.datetime | None, str | None]:
    for entry in _all(citation, "date/*"):
        kind = _code(_first(entry, "dateType/*"))
        value = timeutil.read_datetime(_text(entry, "date"), any_z=True, reduced=True)
        if kind in DATE_TYPES and value is not None:
            return value, kind
    return None, None


def _language(el: etree._Element) -> str | None:
    code = _first(el, "language/*")
    if code is None:
        code = _first(el, "defaultLocale/*/language/*")
    value = _code(code) if code is not None else _value(_first(el, "language"))
    if value and re.fullmatch(r"[A-Za-z]{2,3}", value):
        return value.lower()
    return None


def _keywords(block: etree._Element) -> KeywordGroup:
    words: list[str] = []
    anchors: list[str | None] = []
    for keyword in _all(block, "keyword"):
        text = _value(keyword)
        if text:
            words.append(text)
            anchors.append(next((c.get(f"{{{XLINK}}}href") for c in keyword
                                 if isinstance(c.tag, str) and c.get(f"{{{XLINK}}}href")), None))
    thesaurus = _text(block, "thesaurusName/*/title")
    return KeywordGroup(words, anchors, thesaurus)


def _party(el: etree._Element, default_role: str) -> Party:
    code = _code(_first(el, "role/*"))
    role = ROLES.get(code or "", default_role) if default_role == "poc" else default_role
    emails = [e for e in (_value(x) for x in el.iter() if isinstance(x.tag, str)
                          and local_name(x) == "electronicMailAddress") if e]
    names = [n for n in (_value(x) for x in el.iter() if isinstance(x.tag, str)
                         and local_name(x) == "individualName") if n]
    names += [n for n in (_text(x, "name") for x in el.iter()
                          if isinstance(x.tag, str) and local_name(x) == "CI_Individual") if n]
    return Party(role, emails, names)


def _temporal_extent(info: etree._Element) -> tuple[dt.datetime | None, dt.datetime | None] | None:
    for extent in _all(info, "extent/*/temporalElement/*/extent/*"):
        if local_name(extent) == "TimePeriod":
            start = timeutil.read_datetime(_text(extent, "beginPosition") or
                                           _text(extent, "begin/*/timePosition"), any_z=True, reduced=True)
            end = timeutil.read_datetime(_text(extent, "endPosition") or
                                         _text(extent, "end/*/timePosition"), any_z=True, reduced=True)
        elif local_name(extent) == "TimeInstant":
            start = end = timeutil.read_datetime(_text(extent, "timePosition"), any_z=True, reduced=True)
        else:
            continue
        if start is not None or end is not None:
            return start, end
    return None


def _constraints(info: etree._Element, record: IsoRecord) -> None:
    for block in _all(info, "resourceConstraints/*"):
        for other in _all(block, "otherConstraints") + _all(block, "useLimitation"):
            text = _value(other)
            if text:
                if local_name(other) == "otherConstraints":
                    record.constraints.append(text)
                record.licence_hints.append(text)
            for child in other:
                href = child.get(f"{{{XLINK}}}href") if isinstance(child.tag, str) else None
                if href:
                    record.licence_hints.append(href)
        for code in _all(block, "accessConstraints/*") + _all(block, "useConstraints/*"):
            value = _code(code)
            if value:
                record.restriction_codes.append(value)


# ---------------------------------------------------------------------------------------
# applying


def apply_iso_metadata(session: Session, resource: Resource, root: etree._Element) -> None:
    """Set what the ISO document ``root`` says on ``resource`` (no commit). Unknown contacts,
    categories and licences are ignored; a document that is not ISO 19115 is refused."""
    record = read_iso(root)
    _load_relations(session, resource)
    _apply_text(resource, record)
    if record.date is not None:
        resource.date, resource.date_type = record.date, record.date_type
    if record.temporal_extent is not None:
        start, end = record.temporal_extent
        resource.temporal_extent_start, resource.temporal_extent_end = start, end
    _apply_lookups(session, resource, record)
    _apply_keywords(session, resource, record)
    _apply_contacts(session, resource, record)
    resource.last_updated = utcnow()
    session.flush()


def _load_relations(session: Session, resource: Resource) -> None:
    """Relations are ``lazy="raise"``; a resource loaded without them gets them here."""
    unloaded = sa_inspect(resource).unloaded
    names = [n for n in ("keywords", "tkeywords", "contacts") if n in unloaded]
    if names and resource.id is not None:
        session.refresh(resource, names)


def _clip(value: str | None, size: int = MAX_SHORT) -> str | None:
    return value[:size] if value is not None else None


def _apply_text(resource: Resource, record: IsoRecord) -> None:
    if record.title:
        resource.title = _clip(record.title)
    for name in ("abstract", "purpose", "supplemental_information", "data_quality_statement"):
        value = getattr(record, name)
        if value is not None:
            setattr(resource, name, value)
    if record.edition is not None:
        resource.edition = _clip(record.edition)
    if record.maintenance_frequency is not None:
        resource.maintenance_frequency = _clip(record.maintenance_frequency)
    if record.language:
        resource.language = record.language
    if record.constraints:
        resource.constraints_other = "\n".join(record.constraints)


def _apply_lookups(session: Session, resource: Resource, record: IsoRecord) -> None:
    for topic in record.topic_categories:
        found = session.scalar(select(Category.id).where(Category.identifier == topic))
        if found is not None:
            resource.category_id = found
            break
    licence = _licence(session, record.licence_hints)
    if licence is not None:
        resource.license_id = licence
    for code in record.restriction_codes:
        found = session.scalar(select(RestrictionCodeType.id).where(RestrictionCodeType.identifier == code))
        if found is not None:
            resource.restriction_code_type_id = found
            break
    if record.spatial_representation:
        found = session.scalar(select(SpatialRepresentationType.id).where(
            SpatialRepresentationType.identifier == record.spatial_representation))
        if found is not None:
            resource.spatial_representation_type_id = found
    # The foreign keys changed; the loaded related objects would show the old values.
    session.expire(resource, ["category", "license", "restriction_code_type",
                              "spatial_representation_type"])


def _licence(session: Session, hints: Sequence[str]) -> int | None:
    wanted = {h.strip().lower() for h in hints if h and len(h) <= 2000}
    if not wanted:
        return None
    return session.scalar(select(License.id).where(or_(
        func.lower(License.identifier).in_(wanted), func.lower(License.name).in_(wanted),
        func.lower(License.abbreviation).in_(wanted), func.lower(License.url).in_(wanted),
    )).order_by(License.id).limit(1))


def _apply_keywords(session: Session, resource: Resource, record: IsoRecord) -> None:
    from cartotheca.catalogue.reference import keywords_by_name

    if not record.keywords:
        return
    free: list[str] = []
    candidates: list[tuple[str, str | None]] = []
    for group in record.keywords:
        if group.thesaurus:
            candidates += list(zip(group.words, group.anchors, strict=True))
        else:
            free += group.words
    uris = [a for _, a in candidates if a]
    labels = [w for w, _ in candidates]
    matched = list(session.scalars(select(ThesaurusKeyword).where(or_(
        ThesaurusKeyword.about.in_(uris), ThesaurusKeyword.alt_label.in_(labels))))
    ) if candidates else []
    by_uri = {t.about: t for t in matched if t.about}
    by_label = {t.alt_label: t for t in matched}
    found = []
    for word, anchor in candidates:
        keyword = by_uri.get(anchor) if anchor else None
        keyword = keyword or by_label.get(word)
        if keyword is None:
            free.append(word)  # a keyword of a thesaurus we do not hold stays a free keyword
        else:
            found.append(keyword)
    matched = found
    names = [w.strip() for w in free if w.strip() and len(w.strip()) <= MAX_SHORT]
    resource.keywords = keywords_by_name(session, list(dict.fromkeys(names)))
    if matched:
        resource.tkeywords = list({t.id: t for t in matched}.values())


def _apply_contacts(session: Session, resource: Resource, record: IsoRecord) -> None:
    emails = {e.lower() for p in record.parties for e in p.emails}
    names = {n for p in record.parties for n in p.names}
    if not emails and not names:
        return
    users = list(session.scalars(select(User).where(or_(
        func.lower(User.email).in_(emails), User.username.in_(names)))))
    by_email = {u.email.lower(): u for u in users if u.email}
    by_name = {u.username: u for u in users}
    roles: dict[str, list[User]] = {}
    for party in record.parties:
        user = next((by_email[e.lower()] for e in party.emails if e.lower() in by_email), None) or \
            next((by_name[n] for n in party.names if n in by_name), None)
        if user is not None:
            roles.setdefault(party.role, []).append(user)
    for role, role_users in roles.items():
        # Keep rows of users already in the role: the unit of work inserts before it deletes.
        existing = {c.user_id: c for c in resource.contacts if c.role == role}
        resource.contacts = [c for c in resource.contacts if c.role != role] + [
            existing.get(u.id) or ContactRole(role=role, user_id=u.id, user=u)
            for u in dict.fromkeys(role_users)
        ]


# ---------------------------------------------------------------------------------------
# writing: the resource as an ISO 19139 document (the "ISO" metadata link)

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
