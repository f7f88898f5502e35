"""NUL characters a client sends in a path, a query, a field or a user name are bad input: a
clear 400 (PostgreSQL cannot store them), never a server error, and nothing is changed."""

from __future__ import annotations

import base64

from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user


def test_nul_characters_are_a_client_error_not_a_server_error(client, db, settings):
    owner = make_user(db, "ana")
    resource = make_resource(db, settings, owner, "Rivers")
    answers = {
        "path": client.get("/datasets/a%00b/dataset_download"),
        "filter": client.get("/api/v2/resources?filter{title}=a%00b"),
        "search": client.get("/api/v2/resources?search=a%00b"),
        "user name": client.get("/api/v2/resources", headers={
            "Authorization": "Basic " + base64.b64encode(b"an\x00a:" + PASSWORD.encode()).decode()}),
        "field": client.patch(f"/api/v2/resources/{resource.id}", json={"title": "Riv\u0000ers"},
                              headers=basic("ana", PASSWORD)),
    }
    statuses = {where: answer.status_code for where, answer in answers.items()}
    # As the README has it: text with a NUL is a 400, a name with one finds nothing.
    assert statuses == {"path": 404, "filter": 400, "search": 400, "user name": 401, "field": 400}
    assert answers["search"].json()["errors"] == ["Invalid value for search: it contains a NUL character"]
    # The refused edit changed nothing.
    detail = client.get(f"/api/v2/resources/{resource.id}").json()["resource"]
    assert detail["title"] == "Rivers"


def test_nul_characters_in_ows_requests_get_an_exception_report(client):
    for query in ("service=WMS&version=1.3.0&request=GetMap&layers=geonode:a%00b&styles=&crs=EPSG:4326"
                  "&bbox=0,0,1,1&width=8&height=8&format=image/png",
                  "service=WFS&version=2.0.0&request=GetFeature&typeNames=geonode:a%00b",
                  "service=WMS&version=1.3.0&request=GetLegendGraphic&layer=geonode:a%00b&format=image/png"):
        answer = client.get(f"/ows?{query}")
        assert answer.status_code < 500, (query, answer.status_code, answer.text)
        assert b"ExceptionReport" in answer.content or b"ServiceException" in answer.content, answer.text
