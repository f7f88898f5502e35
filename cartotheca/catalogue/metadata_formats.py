"""cartotheca.catalogue.metadata_formats: a resource's metadata record in the catalogue formats.

The ``metadata`` links of every record (Atom, DIF, Dublin Core, ebRIM, FGDC, ISO) are CSW
GetRecordById URLs, as in GeoNode; ``record_response`` builds the answer for one resource in
the asked output schema, wrapped in ``csw:GetRecordByIdResponse`` as pycsw wraps it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from lxml import etree

from cartotheca.catalogue import iso_metadata
from cartotheca.catalogue.links import METADATA_SCHEMAS, Link, resource_links
from cartotheca.db.models import Resource
from cartotheca.errors import InvalidInput

CSW = "http://www.opengis.net/cat/csw/2.0.2"
DC = "http://purl.org/dc/elements/1.1/"
DCT = "http://purl.org/dc/terms/"
OWS = "http://www.opengis.net/ows"
ATOM = "http://www.w3.org/2005/Atom"
GEORSS = "http://www.georss.org/georss"
DIF = "http://gcmd.gsfc.nasa.gov/Aboutus/xml/dif/"
RIM = "urn:oasis:names:tc:ebxml-regrep:xsd:rim:3.0"
SCHEMAS = dict(METADATA_SCHEMAS)
XSL_PATH = "showmetadata/xsl/metadata.xsl"


def _sub(parent: etree._Element, tag: str, text: str | None = None, **attrs: str) -> etree._Element:
    el = etree.SubElement(parent, tag, {k: v for k, v in attrs.items() if v is not None})
    if text is not None:
        el.text = text
    return el


def _when(value: dt.datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def _box(r: Resource) -> tuple[float, float, float, float] | None:
    if r.ll_minx is None:
        return None
    return float(r.ll_minx), float(r.ll_miny), float(r.ll_maxx), float(r.ll_maxy)


def _keywords(r: Resource) -> list[str]:
    return [k.name for k in r.keywords] + [t.alt_label for t in r.tkeywords]


def _rights(r: Resource) -> list[str]:
    return [text for text in ((r.license.name if r.license else None), r.constraints_other) if text]


def dublin_core(r: Resource, links: Sequence[Link]) -> etree._Element:
    record = etree.Element(f"{{{CSW}}}Record", nsmap={"csw": CSW, "dc": DC, "dct": DCT, "ows": OWS})
    _sub(record, f"{{{DC}}}identifier", r.uuid)
    _sub(record, f"{{{DC}}}title", r.title)
    _sub(record, f"{{{DC}}}type", r.resource_type)
    for word in _keywords(r):
        _sub(record, f"{{{DC}}}subject", word)
    if r.category is not None:
        _sub(record, f"{{{DC}}}subject", r.category.identifier)
    _sub(record, f"{{{DCT}}}abstract", r.abstract or "")
    _sub(record, f"{{{DC}}}description", r.abstract or "")
    _sub(record, f"{{{DC}}}date", _when(r.date))
    _sub(record, f"{{{DCT}}}modified", _when(r.last_updated))
    _sub(record, f"{{{DC}}}creator", r.owner.username)
    _sub(record, f"{{{DC}}}language", r.language)
    for text in _rights(r):
        _sub(record, f"{{{DC}}}rights", text)
    for link in links:
        _sub(record, f"{{{DCT}}}references", link.url, scheme=link.link_type)
    box = _box(r)
    if box is not None:
        bbox = _sub(record, f"{{{OWS}}}BoundingBox", crs="urn:ogc:def:crs:EPSG:6.11:4326",
                    dimensions="2")
        # EPSG:4326 in a URN is latitude first
        _sub(bbox, f"{{{OWS}}}LowerCorner", f"{box[1]!r} {box[0]!r}")
        _sub(bbox, f"{{{OWS}}}UpperCorner", f"{box[3]!r} {box[2]!r}")
    return record


def atom(r: Resource, links: Sequence[Link]) -> etree._Element:
    entry = etree.Element(f"{{{ATOM}}}entry", nsmap={None: ATOM, "georss": GEORSS})
    _sub(entry, f"{{{ATOM}}}id", f"urn:uuid:{r.uuid}")
    _sub(entry, f"{{{ATOM}}}title", r.title)
    _sub(entry, f"{{{ATOM}}}updated", _when(r.last_updated))
    _sub(entry, f"{{{ATOM}}}published", _when(r.date))
    _sub(_sub(entry, f"{{{ATOM}}}author"), f"{{{ATOM}}}name", r.owner.username)
    _sub(entry, f"{{{ATOM}}}summary", r.abstract or "")
    for word in _keywords(r):
        _sub(entry, f"{{{ATOM}}}category", term=word)
    for text in _rights(r):
        _sub(entry, f"{{{ATOM}}}rights", text)
    for link in links:
        _sub(entry, f"{{{ATOM}}}link", href=link.url, type=link.mime, title=link.name,
             rel="enclosure" if link.link_type in ("data", "original") else "related")
    box = _box(r)
    if box is not None:
        _sub(entry, f"{{{GEORSS}}}box", f"{box[1]!r} {box[0]!r} {box[3]!r} {box[2]!r}")
    return entry


def dif(r: Resource, links: Sequence[Link]) -> etree._Element:
    root = etree.Element(f"{{{DIF}}}DIF", nsmap={None: DIF})
    _sub(root, f"{{{DIF}}}Entry_ID", r.uuid)
    _sub(root, f"{{{DIF}}}Entry_Title", r.title)
    for word in _keywords(r):
        _sub(root, f"{{{DIF}}}Keyword", word)
    if r.temporal_extent_start or r.temporal_extent_end:
        coverage = _sub(root, f"{{{DIF}}}Temporal_Coverage")
        _sub(coverage, f"{{{DIF}}}Start_Date", _when(r.temporal_extent_start))
        _sub(coverage, f"{{{DIF}}}Stop_Date", _when(r.temporal_extent_end))
    box = _box(r)
    if box is not None:
        spatial = _sub(root, f"{{{DIF}}}Spatial_Coverage")
        for name, value in (("Southernmost_Latitude", box[1]), ("Northernmost_Latitude", box[3]),
                            ("Westernmost_Longitude", box[0]), ("Easternmost_Longitude", box[2])):
            _sub(spatial, f"{{{DIF}}}{name}", repr(value))
    if r.category is not None:
        _sub(root, f"{{{DIF}}}ISO_Topic_Category", r.category.identifier)
    for text in _rights(r):
        _sub(root, f"{{{DIF}}}Use_Constraints", text)
    for link in links:
        related = _sub(root, f"{{{DIF}}}Related_URL")
        _sub(related, f"{{{DIF}}}URL", link.url)
        _sub(related, f"{{{DIF}}}Description", link.name)
    _sub(_sub(root, f"{{{DIF}}}Summary"), f"{{{DIF}}}Abstract", r.abstract or "")
    _sub(root, f"{{{DIF}}}Metadata_Name", "CEOS IDN DIF")
    _sub(root, f"{{{DIF}}}Metadata_Version", "9.7")
    _sub(root, f"{{{DIF}}}Last_DIF_Revision_Date", (r.last_updated or r.created).strftime("%Y-%m-%d"))
    return root


def fgdc(r: Resource, links: Sequence[Link]) -> etree._Element:
    metadata = etree.Element("metadata")
    idinfo = _sub(metadata, "idinfo")
    _sub(idinfo, "datasetid", r.uuid)
    cite = _sub(_sub(idinfo, "citation"), "citeinfo")
    _sub(cite, "origin", r.owner.username)
    _sub(cite, "pubdate", r.date.strftime("%Y%m%d") if r.date else "Unknown")
    _sub(cite, "title", r.title)
    for link in links:
        _sub(cite, "onlink", link.url)
    descript = _sub(idinfo, "descript")
    _sub(descript, "abstract", r.abstract or "")
    _sub(descript, "purpose", r.purpose or "")
    if r.supplemental_information:
        _sub(descript, "supplinf", r.supplemental_information)
    if r.temporal_extent_start or r.temporal_extent_end:
        dates = _sub(_sub(_sub(idinfo, "timeperd"), "timeinfo"), "rngdates")
        _sub(dates, "begdate", r.temporal_extent_start.strftime("%Y%m%d") if r.temporal_extent_start
             else "Unknown")
        _sub(dates, "enddate", r.temporal_extent_end.strftime("%Y%m%d") if r.temporal_extent_end
             else "Present")
    box = _box(r)
    if box is not None:
        bounding = _sub(_sub(idinfo, "spdom"), "bounding")
        for name, value in (("westbc", box[0]), ("eastbc", box[2]), ("northbc", box[3]),
                            ("southbc", box[1])):
            _sub(bounding, name, repr(value))
    theme = _sub(_sub(idinfo, "keywords"), "theme")
    _sub(theme, "themekt", "None")
    for word in _keywords(r):
        _sub(theme, "themekey", word)
    rights = _rights(r)
    _sub(idinfo, "accconst", r.restriction_code_type.identifier if r.restriction_code_type else "None")
    _sub(idinfo, "useconst", "; ".join(rights) if rights else "None")
    metainfo = _sub(metadata, "metainfo")
    _sub(metainfo, "metd", (r.last_updated or r.created).strftime("%Y%m%d"))
    _sub(metainfo, "metstdn", "FGDC Content Standard for Digital Geospatial Metadata")
    _sub(metainfo, "metstdv", "FGDC-STD-001-1998")
    return metadata


def ebrim(r: Resource, links: Sequence[Link]) -> etree._Element:
    obj = etree.Element(f"{{{RIM}}}ExtrinsicObject", nsmap={"rim": RIM},
                        id=f"urn:uuid:{r.uuid}", objectType="urn:ogc:def:ebRIM-ObjectType:OGC:Dataset")
    _sub(_sub(obj, f"{{{RIM}}}Name"), f"{{{RIM}}}LocalizedString", value=r.title)
    _sub(_sub(obj, f"{{{RIM}}}Description"), f"{{{RIM}}}LocalizedString", value=r.abstract or "")

    def slot(name: str, values: Sequence[str]) -> None:
        if values:
            value_list = _sub(_sub(obj, f"{{{RIM}}}Slot", name=name), f"{{{RIM}}}ValueList")
            for value in values:
                _sub(value_list, f"{{{RIM}}}Value", value)

    slot("http://purl.org/dc/elements/1.1/subject", _keywords(r))
    slot("http://purl.org/dc/terms/modified", [_when(r.last_updated) or ""])
    slot("http://purl.org/dc/elements/1.1/rights", _rights(r))
    slot("http://purl.org/dc/terms/references", [link.url for link in links])
    box = _box(r)
    if box is not None:
        slot("http://purl.org/dc/terms/spatial", [f"{box[1]!r} {box[0]!r} {box[3]!r} {box[2]!r}"])
    return obj


def iso(r: Resource, links: Sequence[Link]) -> etree._Element:
    return iso_metadata.iso_document(r, links)


BUILDERS: dict[str, Callable[[Resource, Sequence[Link]], etree._Element]] = {
    SCHEMAS["Atom"]: atom,
    SCHEMAS["DIF"]: dif,
    SCHEMAS["Dublin Core"]: dublin_core,
    SCHEMAS["ebRIM"]: ebrim,
    SCHEMAS["FGDC"]: fgdc,
    SCHEMAS["ISO"]: iso,
}


def record_element(resource: Resource, site: str, schema: str) -> etree._Element:
    builder = BUILDERS.get(schema)
    if builder is None:
        raise InvalidInput(f"outputSchema {schema} is not supported")
    links = [link for link in resource_links(site, resource) if link.link_type != "metadata"]
    return builder(resource, links)


def record_response(resources: Sequence[Resource], site: str, schema: str) -> bytes:
    """A ``csw:GetRecordByIdResponse`` holding the records of ``resources`` in ``schema``."""
    response = etree.Element(f"{{{CSW}}}GetRecordByIdResponse", nsmap={"csw": CSW})
    for resource in resources:
        response.append(record_element(resource, site, schema))
    if not resources and schema not in BUILDERS:
        raise InvalidInput(f"outputSchema {schema} is not supported")
    return etree.tostring(response, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def iso_with_xsl(resource: Resource, site: str) -> bytes:
    """The ISO record with a stylesheet instruction, so a browser shows it as a page."""
    root = record_element(resource, site, SCHEMAS["ISO"])
    href = f"{site.rstrip('/')}/{XSL_PATH}"
    instruction = etree.ProcessingInstruction("xml-stylesheet", f'type="text/xsl" href="{href}"')
    root.addprevious(instruction)
    return etree.tostring(root.getroottree(), xml_declaration=True, encoding="UTF-8", pretty_print=True)


# A small stylesheet showing the main ISO elements as HTML (title, abstract, keywords, contacts).
METADATA_XSL = """<?xml version="1.0" encoding="UTF-8"?>
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:gmd="http://www.isotc211.org/2005/gmd" xmlns:gco="http://www.isotc211.org/2005/gco"
    xmlns:gmx="http://www.isotc211.org/2005/gmx">
  <xsl:output method="html" encoding="UTF-8"/>
  <xsl:template match="/gmd:MD_Metadata">
    <xsl:variable name="info" select="gmd:identificationInfo/*"/>
    <html><head><title><xsl:value-of select="$info/gmd:citation/*/gmd:title/*"/></title></head>
    <body>
      <h1><xsl:value-of select="$info/gmd:citation/*/gmd:title/*"/></h1>
      <p><xsl:value-of select="$info/gmd:abstract/*"/></p>
      <h2>Keywords</h2>
      <ul><xsl:for-each select="$info/gmd:descriptiveKeywords/*/gmd:keyword/*">
        <li><xsl:value-of select="."/></li></xsl:for-each></ul>
      <h2>Contacts</h2>
      <ul><xsl:for-each select="gmd:contact/*|$info/gmd:pointOfContact/*">
        <li><xsl:value-of select="gmd:individualName/*"/>
          (<xsl:value-of select="gmd:role/*/@codeListValue"/>)</li></xsl:for-each></ul>
      <h2>Links</h2>
      <ul><xsl:for-each select="gmd:distributionInfo//gmd:CI_OnlineResource">
        <li><a href="{gmd:linkage/gmd:URL}"><xsl:value-of select="gmd:name/*"/></a></li>
      </xsl:for-each></ul>
      <p>Identifier: <xsl:value-of select="gmd:fileIdentifier/*"/></p>
    </body></html>
  </xsl:template>
</xsl:stylesheet>
"""


def exception_report(code: str, message: str, locator: str | None = None) -> bytes:
    root = etree.Element(f"{{{OWS}}}ExceptionReport", nsmap={"ows": OWS}, version="1.2.0")
    exc = _sub(root, f"{{{OWS}}}Exception", exceptionCode=code, locator=locator)
    _sub(exc, f"{{{OWS}}}ExceptionText", message)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def visible_records(session, principal, settings, uuids: Sequence[str]) -> list[Resource]:
    """The resources with these uuids the principal may view, relations loaded for export."""
    from sqlalchemy import select

    from cartotheca.catalogue import permissions as perms
    from cartotheca.catalogue.resources import LOAD_OPTIONS

    if not uuids:
        return []
    stmt = select(Resource).where(Resource.uuid.in_(list(uuids))).options(*LOAD_OPTIONS)
    if not principal.is_superuser:
        stmt = stmt.where(perms.visible_to(principal, settings, check_advertised=False))
    found = {r.uuid: r for r in session.scalars(stmt).unique()}
    return [found[u] for u in uuids if u in found]
