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

from lxml import etree
from sqlalchemy import func, or_, select
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import Session

from cartotheca import timeutil
from cartotheca.catalogue.reference import keywords_by_name
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
