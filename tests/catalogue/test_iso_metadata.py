"""ISO 19115 metadata: reading both encodings, applying to a resource, writing and reading back."""

from __future__ import annotations

import datetime as dt

import pytest
from lxml import etree
from sqlalchemy import select

from cartotheca import xmlsafe
from cartotheca.catalogue import iso_export, iso_metadata
from cartotheca.catalogue.query.resource_list import LOAD_OPTIONS
from cartotheca.db.models import Resource, Thesaurus, ThesaurusKeyword
from cartotheca.errors import InvalidInput
from tests.catalogue.iso_documents import BILLION_LAUGHS, NOT_ISO, XXE_DOCUMENT, gmd, mdb
from tests.factories import make_resource, make_user

UUID = "0b6f4a3e-8f4c-4d2e-9a51-3c1f2b7d9e10"


def parse(text: str):
    return xmlsafe.parse(text, "metadata_file")


def load(db, resource_id: int) -> Resource:
    db.expire_all()
    stmt = select(Resource).where(Resource.id == resource_id).options(*LOAD_OPTIONS)
    return db.scalars(stmt).unique().one()


def test_read_19139():
    record = iso_metadata.read_iso(parse(gmd(UUID)))
    assert record.identifier == UUID
    assert record.title == "Rivers of the plain"
    assert record.abstract.startswith("Every river")
    assert record.purpose == "Flood planning" and record.edition == "2nd"
    assert (record.date, record.date_type) == (dt.datetime(2019, 5, 4), "creation")
    assert record.temporal_extent == (dt.datetime(2001, 1, 1), dt.datetime(2010, 12, 31, 22, 0))
    assert record.topic_categories == ["inlandWaters"]
    assert [g.words for g in record.keywords] == [["hydrography", "rivers"], ["Floodplains"]]
    assert record.keywords[1].anchors == ["http://example.org/themes/unknown"]
    assert record.keywords[1].thesaurus == "Some thesaurus"
    assert [(p.role, p.emails, p.names) for p in record.parties] == [
        ("metadata_author", ["AUTHOR@example.org"], ["Somebody Unknown"]),
        ("poc", [], ["ana"]),
        ("publisher", ["ben@example.org"], []),
        ("custodian", [], ["nobody-here"]),
    ]
    assert record.constraints == ["Cite the water board."]
    assert record.restriction_codes == ["copyright"]
    assert record.language == "ita" and record.maintenance_frequency == "annually"
    assert record.spatial_representation == "vector"
    assert record.supplemental_information == "Surveyed twice."
    assert record.data_quality_statement == "Digitised by hand."


def test_read_19115_3():
    record = iso_metadata.read_iso(parse(mdb(UUID)))
    assert record.identifier == UUID
    assert record.title == "Forêts du massif" and record.abstract == "Forest stands."
    assert (record.date, record.date_type) == (dt.datetime(2021, 3, 4, 5, 6, 7), "revision")
    assert record.temporal_extent == (dt.datetime(2015, 7, 1), dt.datetime(2015, 7, 1))
    assert record.language == "fra" and record.topic_categories == ["biota"]
    assert [(p.role, p.names) for p in record.parties] == [("originator", ["ana"])]
    assert record.keywords[0].words == ["forest"] and record.constraints == ["Free to reuse."]


@pytest.mark.parametrize("text", [XXE_DOCUMENT, BILLION_LAUGHS])
def test_hostile_documents_are_refused_by_the_parser(text):
    with pytest.raises(InvalidInput):
        parse(text)


def test_other_documents_are_not_iso():
    with pytest.raises(InvalidInput, match="not an ISO 19115"):
        iso_metadata.read_iso(parse(NOT_ISO))


def test_identifier_must_match():
    iso_metadata.check_identifier(parse(gmd(UUID)), UUID.upper())
    with pytest.raises(InvalidInput, match="UUID"):
        iso_metadata.check_identifier(parse(gmd(UUID)), "11111111-2222-3333-4444-555555555555")


def test_apply_sets_fields_contacts_and_lookups(db, settings):
    owner = make_user(db, "owner")
    ana = make_user(db, "ana")
    ben = make_user(db, "ben", email="ben@example.org")
    writer = make_user(db, "writer", email="author@example.org")
    resource = make_resource(db, settings, owner, "Before", keywords=["old"], abstract="old abstract",
                             attribution="kept")
    resource = load(db, resource.id)
    iso_metadata.apply_iso_metadata(db, resource, parse(gmd(resource.uuid)))
    db.commit()
    resource = load(db, resource.id)
    assert resource.title == "Rivers of the plain" and resource.attribution == "kept"
    assert resource.purpose == "Flood planning" and resource.edition == "2nd"
    assert (resource.date, resource.date_type) == (dt.datetime(2019, 5, 4), "creation")
    assert resource.temporal_extent_end == dt.datetime(2010, 12, 31, 22, 0)
    assert sorted(k.name for k in resource.keywords) == ["Floodplains", "hydrography", "rivers"]
    assert resource.category.identifier == "inlandWaters"
    assert resource.license.identifier == "CC-BY-4.0"
    assert resource.restriction_code_type.identifier == "copyright"
    assert resource.spatial_representation_type.identifier == "vector"
    assert resource.constraints_other == "Cite the water board."
    assert resource.language == "ita" and resource.maintenance_frequency == "annually"
    roles = sorted((c.role, c.user_id) for c in resource.contacts)
    # poc was the owner (factory); the file names ana; unknown custodian ignored
    assert roles == sorted([("poc", ana.id), ("publisher", ben.id), ("metadata_author", writer.id)])


def test_apply_matches_thesaurus_keywords_by_uri(db, settings):
    owner = make_user(db, "owner")
    thesaurus = Thesaurus(identifier="themes", title="Themes", about="http://example.org/themes")
    db.add(thesaurus)
    db.flush()
    db.add(ThesaurusKeyword(about="http://example.org/themes/unknown", alt_label="Floodplains areas",
                            thesaurus_id=thesaurus.id))
    db.commit()
    resource = load(db, make_resource(db, settings, owner).id)
    iso_metadata.apply_iso_metadata(db, resource, parse(gmd(resource.uuid)))
    db.commit()
    resource = load(db, resource.id)
    assert [t.alt_label for t in resource.tkeywords] == ["Floodplains areas"]
    assert "Floodplains" not in [k.name for k in resource.keywords]


def test_a_partial_document_leaves_the_rest(db, settings):
    owner = make_user(db, "owner")
    resource = make_resource(db, settings, owner, "Kept title", keywords=["kept"], abstract="kept abstract")
    resource = load(db, resource.id)
    partial = ('<gmd:MD_Metadata xmlns:gmd="http://www.isotc211.org/2005/gmd" '
               'xmlns:gco="http://www.isotc211.org/2005/gco"><gmd:identificationInfo>'
               '<gmd:MD_DataIdentification><gmd:purpose><gco:CharacterString>New purpose'
               '</gco:CharacterString></gmd:purpose></gmd:MD_DataIdentification>'
               '</gmd:identificationInfo></gmd:MD_Metadata>')
    iso_metadata.apply_iso_metadata(db, resource, parse(partial))
    db.commit()
    resource = load(db, resource.id)
    assert (resource.title, resource.abstract) == ("Kept title", "kept abstract")
    assert resource.purpose == "New purpose"
    assert [k.name for k in resource.keywords] == ["kept"]


def test_relations_not_loaded_are_loaded_first(db, settings):
    """Ingest hands over a resource it loaded without relations; they are lazy="raise"."""
    owner = make_user(db, "owner")
    resource_id = make_resource(db, settings, owner, keywords=["old"]).id
    db.expire_all()
    bare = db.get(Resource, resource_id)
    iso_metadata.apply_iso_metadata(db, bare, parse(gmd(bare.uuid)))
    db.commit()
    assert "rivers" in [k.name for k in load(db, resource_id).keywords]


def test_written_document_reads_back_to_the_same_values(db, settings):
    owner = make_user(db, "owner", email="owner@example.org")
    ben = make_user(db, "ben", email="ben@example.org")
    make_user(db, "writer", email="author@example.org")
    resource = load(db, make_resource(db, settings, owner, "Source").id)
    iso_metadata.apply_iso_metadata(db, resource, parse(gmd(resource.uuid)))
    db.commit()
    resource = load(db, resource.id)
    written = iso_export.iso_document(resource)
    record = iso_metadata.read_iso(parse(iso_metadata_bytes(written)))
    assert record.identifier == resource.uuid and record.title == resource.title
    assert (record.date, record.date_type) == (resource.date, resource.date_type)
    assert record.temporal_extent == (resource.temporal_extent_start, resource.temporal_extent_end)
    assert record.topic_categories == ["inlandWaters"] and record.restriction_codes == ["copyright"]
    assert sorted(w for g in record.keywords for w in g.words) == sorted(k.name for k in resource.keywords)
    assert record.constraints == [resource.constraints_other]
    assert record.language == "ita" and record.maintenance_frequency == "annually"
    assert ("publisher", ["ben@example.org"]) in [(p.role, p.emails) for p in record.parties]

    # applied to a blank resource, the written document gives the same record
    other = load(db, make_resource(db, settings, owner, "Blank").id)
    iso_metadata.apply_iso_metadata(db, other, parse(iso_metadata_bytes(written)))
    db.commit()
    other = load(db, other.id)
    for name in ("title", "abstract", "purpose", "edition", "date", "date_type", "language",
                 "temporal_extent_start", "temporal_extent_end", "constraints_other", "category_id",
                 "license_id", "restriction_code_type_id", "maintenance_frequency",
                 "supplemental_information", "data_quality_statement"):
        assert getattr(other, name) == getattr(resource, name), name
    assert sorted((c.role, c.user_id) for c in other.contacts) == \
        sorted((c.role, c.user_id) for c in resource.contacts)
    assert ben.id in [c.user_id for c in other.contacts]


def iso_metadata_bytes(element) -> bytes:
    return etree.tostring(element, xml_declaration=True, encoding="UTF-8")
