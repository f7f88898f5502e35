"""cartotheca.catalogue.metadata_formats: the ISO record as a browser page.

Every metadata link of a record is a CSW GetRecordById URL answered by the catalogue's CSW
(``catalogue/csw``); GeoNode's "ISO with XSL" link shows the same ISO record with a stylesheet
instruction, so a browser renders it as a page.
"""

from __future__ import annotations

from lxml import etree

from cartotheca.catalogue import iso_export
from cartotheca.catalogue.links import resource_links
from cartotheca.db.models import Resource

XSL_PATH = "showmetadata/xsl/metadata.xsl"


def iso_with_xsl(resource: Resource, site: str) -> bytes:
    """The ISO record with a stylesheet instruction, so a browser shows it as a page."""
    links = [link for link in resource_links(site, resource) if link.link_type != "metadata"]
    root = iso_export.iso_document(resource, links)
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
