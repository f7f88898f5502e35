"""Authorization matrix for the catalogue's CSW endpoint: role × kind × request, zero leaks.

The worlds of the document/geostory and map matrices (public, private, shared with a group,
unpublished in a group) are searched with GetRecords (CSW 2.0.2 and 3.0, with and without a text
constraint) and read record by record with GetRecordById in every output schema. Each role gets
exactly the records it may view and no trace of the others.
"""

from __future__ import annotations

import pytest
from lxml import etree

from tests.api.test_authorization_matrix import (  # noqa: F401  (map_world: fixture)
    KINDS,
    ROLES,
    SEES,
    assert_no_map_leak,
    headers_for,
    map_world,
)
from tests.api.test_authorization_matrix_documents import (  # noqa: F401  (world: fixture)
    assert_no_leak,
    world,
)

DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
OUTPUT_SCHEMAS = (
    "http://www.opengis.net/cat/csw/2.0.2",
    "http://www.isotc211.org/2005/gmd",
    "http://www.w3.org/2005/Atom",
    "http://gcmd.gsfc.nasa.gov/Aboutus/xml/dif/",
    "http://www.opengis.net/cat/csw/csdgm",
    "urn:oasis:names:tc:ebxml-regrep:xsd:rim:3.0",
)
SEARCHES = (
    {"service": "CSW", "version": "2.0.2", "request": "GetRecords", "typenames": "csw:Record",
     "resulttype": "results", "elementsetname": "full", "maxrecords": "100"},
    {"service": "CSW", "version": "2.0.2", "request": "GetRecords", "typenames": "csw:Record",
     "resulttype": "results", "elementsetname": "summary", "maxrecords": "100",
     "constraintlanguage": "CQL_TEXT", "constraint_language_version": "1.1.0",
     "constraint": "csw:AnyText like '%Matrix%'"},
    {"service": "CSW", "version": "3.0.0", "request": "GetRecords", "typenames": "csw30:Record",
     "elementsetname": "full", "maxrecords": "100", "q": "Matrix"},
)


def titles(response) -> set[str]:
    return {t.text for t in etree.fromstring(response.content).iter(DC_TITLE)}


def get(client, headers, **params):
    response = client.get("/catalogue/csw", params=params, headers=headers)
    assert response.status_code == 200, (params, response.text)
    return response


def check_by_id(client, headers, resource, visible: bool, assert_clean) -> None:
    for schema in OUTPUT_SCHEMAS:
        response = get(client, headers, service="CSW", version="2.0.2", request="GetRecordById",
                       id=resource.uuid, outputschema=schema, elementsetname="full")
        records = len(etree.fromstring(response.content))
        assert records == (1 if visible else 0), (resource.title, schema)
        if visible:
            assert resource.uuid in response.text
        assert_clean(response)


@pytest.mark.parametrize("role", ROLES)
def test_documents_and_geostories_in_csw(client, world, role):  # noqa: F811
    headers = headers_for(role)
    expected = {r.title for (_family, kind), r in world.items() if kind == "hub" or role in SEES[kind]}
    for search in SEARCHES:
        response = get(client, headers, **search)
        assert titles(response) == expected, (role, search)
        assert_no_leak(response, world, role)
    for (_family, kind), resource in world.items():
        visible = kind == "hub" or role in SEES[kind]
        check_by_id(client, headers, resource, visible, lambda r: assert_no_leak(r, world, role))
    # Several identifiers at once answer only the visible ones.
    ids = ",".join(r.uuid for r in world.values())
    response = get(client, headers, service="CSW", version="2.0.2", request="GetRecordById", id=ids)
    assert titles(response) == expected
    assert_no_leak(response, world, role)


@pytest.mark.parametrize("role", ROLES)
def test_maps_and_datasets_in_csw(client, map_world, role):  # noqa: F811
    headers = headers_for(role)
    expected = {map_world[k].title for k in KINDS if role in SEES[k]} | {map_world["open"].title}
    if role in SEES["private"]:
        expected.add(map_world["secret"].title)
    for search in SEARCHES:
        response = get(client, headers, **search)
        assert titles(response) == expected, (role, search)
        assert_no_map_leak(response, map_world, role)
    for kind in KINDS:
        check_by_id(client, headers, map_world[kind], role in SEES[kind],
                    lambda r: assert_no_map_leak(r, map_world, role))
    check_by_id(client, headers, map_world["secret"], role in SEES["private"],
                lambda r: assert_no_map_leak(r, map_world, role))
