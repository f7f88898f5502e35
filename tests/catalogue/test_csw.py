"""scratch"""
from lxml import etree
from tests.factories import make_user, make_resource


def test_smoke(client, db, settings):
    owner = make_user(db, "owner")
    make_resource(db, settings, owner, "Wells of the valley", abstract="Water wells", keywords=["water"],
                  extent=(-10, 40, 10, 50))
    r = make_resource(db, settings, owner, "Private roads", public=False, extent=(0, 0, 1, 1))
    for params in [
        {"service": "CSW", "version": "2.0.2", "request": "GetCapabilities"},
        {"service": "CSW", "request": "GetCapabilities"},
        {"service": "CSW", "version": "2.0.2", "request": "GetRecords", "typenames": "csw:Record",
         "resulttype": "results", "elementsetname": "full", "constraintlanguage": "CQL_TEXT",
         "constraint": "csw:AnyText like '%water%'"},
        {"service": "CSW", "version": "2.0.2", "request": "GetRecordById", "id": r.uuid,
         "outputschema": "http://www.isotc211.org/2005/gmd", "elementsetname": "full"},
    ]:
        resp = client.get("/catalogue/csw", params=params)
        print(resp.status_code, resp.headers["content-type"])
        print(resp.text[:3000])
    assert 0
