# ruff: noqa: E501
"""ISO 19115 metadata documents for the tests: one in each encoding (19139 gmd, 19115-3 mdb),
with every element the import reads, and the hostile variants an upload must refuse."""

from __future__ import annotations

GMD_DOCUMENT = """<?xml version="1.0" encoding="UTF-8"?>
<gmd:MD_Metadata xmlns:gmd="http://www.isotc211.org/2005/gmd" xmlns:gco="http://www.isotc211.org/2005/gco"
    xmlns:gmx="http://www.isotc211.org/2005/gmx" xmlns:gml="http://www.opengis.net/gml"
    xmlns:xlink="http://www.w3.org/1999/xlink">
  <gmd:fileIdentifier><gco:CharacterString>{uuid}</gco:CharacterString></gmd:fileIdentifier>
  <gmd:language><gmd:LanguageCode codeList="http://www.loc.gov/standards/iso639-2/" codeListValue="ita">ita</gmd:LanguageCode></gmd:language>
  <gmd:contact>
    <gmd:CI_ResponsibleParty>
      <gmd:individualName><gco:CharacterString>Somebody Unknown</gco:CharacterString></gmd:individualName>
      <gmd:contactInfo><gmd:CI_Contact><gmd:address><gmd:CI_Address>
        <gmd:electronicMailAddress><gco:CharacterString>AUTHOR@example.org</gco:CharacterString></gmd:electronicMailAddress>
      </gmd:CI_Address></gmd:address></gmd:CI_Contact></gmd:contactInfo>
      <gmd:role><gmd:CI_RoleCode codeList="x" codeListValue="author"/></gmd:role>
    </gmd:CI_ResponsibleParty>
  </gmd:contact>
  <gmd:dateStamp><gco:DateTime>2024-02-01T00:00:00</gco:DateTime></gmd:dateStamp>
  <gmd:identificationInfo>
    <gmd:MD_DataIdentification>
      <gmd:citation><gmd:CI_Citation>
        <gmd:title><gco:CharacterString>Rivers of the plain</gco:CharacterString></gmd:title>
        <gmd:date><gmd:CI_Date>
          <gmd:date><gco:Date>2019-05-04</gco:Date></gmd:date>
          <gmd:dateType><gmd:CI_DateTypeCode codeList="x" codeListValue="creation"/></gmd:dateType>
        </gmd:CI_Date></gmd:date>
        <gmd:date><gmd:CI_Date>
          <gmd:date><gco:DateTime>2020-06-07T08:09:10Z</gco:DateTime></gmd:date>
          <gmd:dateType><gmd:CI_DateTypeCode codeList="x" codeListValue="publication"/></gmd:dateType>
        </gmd:CI_Date></gmd:date>
        <gmd:edition><gco:CharacterString>2nd</gco:CharacterString></gmd:edition>
      </gmd:CI_Citation></gmd:citation>
      <gmd:abstract><gco:CharacterString>Every river of the plain, digitised from 1:10000 maps.</gco:CharacterString></gmd:abstract>
      <gmd:purpose><gco:CharacterString>Flood planning</gco:CharacterString></gmd:purpose>
      <gmd:pointOfContact>
        <gmd:CI_ResponsibleParty>
          <gmd:individualName><gco:CharacterString>ana</gco:CharacterString></gmd:individualName>
          <gmd:role><gmd:CI_RoleCode codeList="x" codeListValue="pointOfContact"/></gmd:role>
        </gmd:CI_ResponsibleParty>
      </gmd:pointOfContact>
      <gmd:pointOfContact>
        <gmd:CI_ResponsibleParty>
          <gmd:organisationName><gco:CharacterString>Water board</gco:CharacterString></gmd:organisationName>
          <gmd:contactInfo><gmd:CI_Contact><gmd:address><gmd:CI_Address>
            <gmd:electronicMailAddress><gco:CharacterString>ben@example.org</gco:CharacterString></gmd:electronicMailAddress>
          </gmd:CI_Address></gmd:address></gmd:CI_Contact></gmd:contactInfo>
          <gmd:role><gmd:CI_RoleCode codeList="x" codeListValue="publisher"/></gmd:role>
        </gmd:CI_ResponsibleParty>
      </gmd:pointOfContact>
      <gmd:pointOfContact>
        <gmd:CI_ResponsibleParty>
          <gmd:individualName><gco:CharacterString>nobody-here</gco:CharacterString></gmd:individualName>
          <gmd:role><gmd:CI_RoleCode codeList="x" codeListValue="custodian"/></gmd:role>
        </gmd:CI_ResponsibleParty>
      </gmd:pointOfContact>
      <gmd:resourceMaintenance><gmd:MD_MaintenanceInformation>
        <gmd:maintenanceAndUpdateFrequency><gmd:MD_MaintenanceFrequencyCode codeList="x" codeListValue="annually"/></gmd:maintenanceAndUpdateFrequency>
      </gmd:MD_MaintenanceInformation></gmd:resourceMaintenance>
      <gmd:descriptiveKeywords><gmd:MD_Keywords>
        <gmd:keyword><gco:CharacterString>hydrography</gco:CharacterString></gmd:keyword>
        <gmd:keyword><gco:CharacterString>rivers</gco:CharacterString></gmd:keyword>
      </gmd:MD_Keywords></gmd:descriptiveKeywords>
      <gmd:descriptiveKeywords><gmd:MD_Keywords>
        <gmd:keyword><gmx:Anchor xlink:href="http://example.org/themes/unknown">Floodplains</gmx:Anchor></gmd:keyword>
        <gmd:thesaurusName><gmd:CI_Citation><gmd:title><gco:CharacterString>Some thesaurus</gco:CharacterString></gmd:title></gmd:CI_Citation></gmd:thesaurusName>
      </gmd:MD_Keywords></gmd:descriptiveKeywords>
      <gmd:resourceConstraints><gmd:MD_LegalConstraints>
        <gmd:accessConstraints><gmd:MD_RestrictionCode codeList="x" codeListValue="copyright"/></gmd:accessConstraints>
        <gmd:useLimitation><gco:CharacterString>{licence}</gco:CharacterString></gmd:useLimitation>
        <gmd:otherConstraints><gco:CharacterString>Cite the water board.</gco:CharacterString></gmd:otherConstraints>
      </gmd:MD_LegalConstraints></gmd:resourceConstraints>
      <gmd:spatialRepresentationType><gmd:MD_SpatialRepresentationTypeCode codeList="x" codeListValue="vector"/></gmd:spatialRepresentationType>
      <gmd:language><gmd:LanguageCode codeList="x" codeListValue="ita">ita</gmd:LanguageCode></gmd:language>
      <gmd:topicCategory><gmd:MD_TopicCategoryCode>inlandWaters</gmd:MD_TopicCategoryCode></gmd:topicCategory>
      <gmd:extent><gmd:EX_Extent>
        <gmd:temporalElement><gmd:EX_TemporalExtent><gmd:extent>
          <gml:TimePeriod gml:id="t1">
            <gml:beginPosition>2001-01-01</gml:beginPosition>
            <gml:endPosition>2010-12-31T23:00:00+01:00</gml:endPosition>
          </gml:TimePeriod>
        </gmd:extent></gmd:EX_TemporalExtent></gmd:temporalElement>
      </gmd:EX_Extent></gmd:extent>
      <gmd:supplementalInformation><gco:CharacterString>Surveyed twice.</gco:CharacterString></gmd:supplementalInformation>
    </gmd:MD_DataIdentification>
  </gmd:identificationInfo>
  <gmd:dataQualityInfo><gmd:DQ_DataQuality><gmd:lineage><gmd:LI_Lineage>
    <gmd:statement><gco:CharacterString>Digitised by hand.</gco:CharacterString></gmd:statement>
  </gmd:LI_Lineage></gmd:lineage></gmd:DQ_DataQuality></gmd:dataQualityInfo>
</gmd:MD_Metadata>
"""

MDB_DOCUMENT = """<?xml version="1.0" encoding="UTF-8"?>
<mdb:MD_Metadata xmlns:mdb="http://standards.iso.org/iso/19115/-3/mdb/2.0"
    xmlns:mcc="http://standards.iso.org/iso/19115/-3/mcc/1.0"
    xmlns:mri="http://standards.iso.org/iso/19115/-3/mri/1.0"
    xmlns:cit="http://standards.iso.org/iso/19115/-3/cit/2.0"
    xmlns:gex="http://standards.iso.org/iso/19115/-3/gex/1.0"
    xmlns:mco="http://standards.iso.org/iso/19115/-3/mco/1.0"
    xmlns:lan="http://standards.iso.org/iso/19115/-3/lan/1.0"
    xmlns:gco="http://standards.iso.org/iso/19115/-3/gco/1.0"
    xmlns:gml="http://www.opengis.net/gml/3.2">
  <mdb:metadataIdentifier><mcc:MD_Identifier><mcc:code><gco:CharacterString>{uuid}</gco:CharacterString></mcc:code></mcc:MD_Identifier></mdb:metadataIdentifier>
  <mdb:defaultLocale><lan:PT_Locale><lan:language><lan:LanguageCode codeList="x" codeListValue="fra"/></lan:language></lan:PT_Locale></mdb:defaultLocale>
  <mdb:identificationInfo>
    <mri:MD_DataIdentification>
      <mri:citation><cit:CI_Citation>
        <cit:title><gco:CharacterString>Forêts du massif</gco:CharacterString></cit:title>
        <cit:date><cit:CI_Date>
          <cit:date><gco:DateTime>2021-03-04T05:06:07</gco:DateTime></cit:date>
          <cit:dateType><cit:CI_DateTypeCode codeList="x" codeListValue="revision"/></cit:dateType>
        </cit:CI_Date></cit:date>
      </cit:CI_Citation></mri:citation>
      <mri:abstract><gco:CharacterString>Forest stands.</gco:CharacterString></mri:abstract>
      <mri:pointOfContact>
        <cit:CI_Responsibility>
          <cit:role><cit:CI_RoleCode codeList="x" codeListValue="originator"/></cit:role>
          <cit:party><cit:CI_Individual>
            <cit:name><gco:CharacterString>ana</gco:CharacterString></cit:name>
          </cit:CI_Individual></cit:party>
        </cit:CI_Responsibility>
      </mri:pointOfContact>
      <mri:topicCategory><mri:MD_TopicCategoryCode>biota</mri:MD_TopicCategoryCode></mri:topicCategory>
      <mri:extent><gex:EX_Extent><gex:temporalElement><gex:EX_TemporalExtent><gex:extent>
        <gml:TimeInstant gml:id="i1"><gml:timePosition>2015-07-01</gml:timePosition></gml:TimeInstant>
      </gex:extent></gex:EX_TemporalExtent></gex:temporalElement></gex:EX_Extent></mri:extent>
      <mri:descriptiveKeywords><mri:MD_Keywords>
        <mri:keyword><gco:CharacterString>forest</gco:CharacterString></mri:keyword>
      </mri:MD_Keywords></mri:descriptiveKeywords>
      <mri:resourceConstraints><mco:MD_LegalConstraints>
        <mco:otherConstraints><gco:CharacterString>Free to reuse.</gco:CharacterString></mco:otherConstraints>
      </mco:MD_LegalConstraints></mri:resourceConstraints>
    </mri:MD_DataIdentification>
  </mdb:identificationInfo>
</mdb:MD_Metadata>
"""

XXE_DOCUMENT = """<?xml version="1.0"?>
<!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<gmd:MD_Metadata xmlns:gmd="http://www.isotc211.org/2005/gmd" xmlns:gco="http://www.isotc211.org/2005/gco">
  <gmd:identificationInfo><gmd:MD_DataIdentification><gmd:citation><gmd:CI_Citation>
    <gmd:title><gco:CharacterString>&xxe;</gco:CharacterString></gmd:title>
  </gmd:CI_Citation></gmd:citation></gmd:MD_DataIdentification></gmd:identificationInfo>
</gmd:MD_Metadata>
"""

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<gmd:MD_Metadata xmlns:gmd="http://www.isotc211.org/2005/gmd" xmlns:gco="http://www.isotc211.org/2005/gco">
  <gmd:identificationInfo><gmd:MD_DataIdentification><gmd:abstract>
    <gco:CharacterString>&lol4;</gco:CharacterString>
  </gmd:abstract></gmd:MD_DataIdentification></gmd:identificationInfo>
</gmd:MD_Metadata>
"""

# A parameter entity pulling an external DTD, with no DOCTYPE keyword in the first bytes
EXTERNAL_ENTITY_LATE = ("<?xml version='1.0'?>" + " " * 5000 +
                        "<!DOCTYPE x [<!ENTITY % remote SYSTEM 'http://127.0.0.1:9/evil.dtd'> %remote;]>"
                        "<gmd:MD_Metadata xmlns:gmd='http://www.isotc211.org/2005/gmd'/>")

MALFORMED = "<gmd:MD_Metadata xmlns:gmd='http://www.isotc211.org/2005/gmd'><gmd:title>unclosed"

NOT_ISO = """<?xml version="1.0"?><csw:Record xmlns:csw="http://www.opengis.net/cat/csw/2.0.2"
  xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Dublin Core is not ISO</dc:title></csw:Record>"""


def gmd(uuid: str, licence: str = "Creative Commons Attribution 4.0") -> str:
    return GMD_DOCUMENT.replace("{uuid}", uuid).replace("{licence}", licence)


def mdb(uuid: str) -> str:
    return MDB_DOCUMENT.replace("{uuid}", uuid)
