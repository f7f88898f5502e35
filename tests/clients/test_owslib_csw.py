"""OWSLib's CatalogueServiceWeb (CSW 2.0.2) against a live Cartotheca server.

Records are the catalogue's own resources (one published through the real ingest); OWSLib
reads the capabilities, searches by text and by box, and reads records back in ISO 19139 and
Dublin Core. A private resource is seen only by a requester allowed to view it.
"""

from __future__ import annotations

import pytest
from owslib.csw import CatalogueServiceWeb
from owslib.fes import And, BBox, PropertyIsLike

from tests.factories import PASSWORD, make_resource, make_user
from tests.geodata.fixtures import publish_file, write_points

pytestmark = pytest.mark.clients
ISO = "http://www.isotc211.org/2005/gmd"


@pytest.fixture
def catalogue(db, settings, tmp_path):
    owner = make_user(db, "owner")
    make_user(db, "other")
    # points at lon -10..8, lat 40..49
    wells = publish_file(db, settings, owner, write_points(tmp_path), title="Wells of the valley")
    rivers = make_resource(db, settings, owner, "Rivers of the plain", abstract="Rivers and streams",
                           keywords=["hydrography"], extent=(20, 40, 30, 50))
    secret = make_resource(db, settings, owner, "Secret wells", public=False, extent=(-5, 42, 5, 48))
    return {"wells": wells, "rivers": rivers, "secret": secret}


def service(live_server, user: str | None = None) -> CatalogueServiceWeb:
    credentials = {"username": user, "password": PASSWORD} if user else {}
    return CatalogueServiceWeb(f"{live_server.url}catalogue/csw", version="2.0.2", timeout=30,
                               **credentials)


def found(csw: CatalogueServiceWeb) -> set[str]:
    return {record.title for record in csw.records.values()}


def test_owslib_reads_capabilities(live_server, catalogue):
    csw = service(live_server)
    assert csw.identification.type == "CSW"
    assert csw.identification.title == "Cartotheca catalogue"
    operations = {op.name for op in csw.operations}
    assert {"GetRecords", "GetRecordById", "DescribeRecord", "GetDomain"} <= operations
    get_records = csw.get_operation_by_name("GetRecords")
    assert get_records.methods[0]["url"] == f"{live_server.url}catalogue/csw"
    assert ISO in get_records.parameters["outputSchema"]["values"]


def test_owslib_searches_by_text_and_box(live_server, catalogue):
    csw = service(live_server)
    wells = PropertyIsLike("csw:AnyText", "%wells%")
    csw.getrecords2(constraints=[wells], esn="full", maxrecords=10)
    assert found(csw) == {"Wells of the valley"}  # not the private "Secret wells"
    assert csw.results["matches"] == 1
    # EPSG:4326 axis order: latitude first; the box covers the rivers only
    csw.getrecords2(constraints=[BBox([35, 15, 55, 35])], esn="full")
    assert found(csw) == {"Rivers of the plain"}
    everything = BBox([30, -20, 60, 40])
    csw.getrecords2(constraints=[And([wells, everything])], esn="full")
    assert found(csw) == {"Wells of the valley"}
    record = next(iter(csw.records.values()))
    # OWSLib reads the urn's latitude-first corners back into x = longitude
    box = record.bbox
    assert [float(v) for v in (box.minx, box.miny, box.maxx, box.maxy)] == pytest.approx([-10, 40, 8, 49])
    owner = service(live_server, "owner")
    owner.getrecords2(constraints=[wells], esn="full")
    assert found(owner) == {"Wells of the valley", "Secret wells"}
    other = service(live_server, "other")
    other.getrecords2(constraints=[wells], esn="full")
    assert found(other) == {"Wells of the valley"}


def test_owslib_reads_records_by_id_in_iso_and_dublin_core(live_server, catalogue):
    wells, secret = catalogue["wells"], catalogue["secret"]
    csw = service(live_server)
    csw.getrecordbyid([wells.uuid], esn="full", outputschema=ISO)
    iso = csw.records[wells.uuid]
    assert iso.identifier == wells.uuid
    assert iso.identification[0].title == "Wells of the valley"
    extent = iso.identification[0].bbox
    assert (float(extent.minx), float(extent.maxx), float(extent.miny), float(extent.maxy)) == \
        pytest.approx((-10.0, 8.0, 40.0, 49.0))
    assert any("service=WMS" in (online.url or "") for online in iso.distribution.online)
    csw.getrecordbyid([wells.uuid], esn="full")
    record = csw.records[wells.uuid]
    assert (record.identifier, record.title, record.type) == (wells.uuid, "Wells of the valley", "dataset")
    csw.getrecordbyid([secret.uuid], esn="full", outputschema=ISO)
    assert csw.records == {}
    owner = service(live_server, "owner")
    owner.getrecordbyid([secret.uuid], esn="full", outputschema=ISO)
    assert owner.records[secret.uuid].identification[0].title == "Secret wells"
