"""The API root and the OpenAPI document (YAML or JSON by Accept header or ?format=)."""

import json

import pytest
import yaml

YAML_TYPE = "application/vnd.oai.openapi"
JSON_TYPE = "application/vnd.oai.openapi+json"
EXPECTED = ("resources", "users", "groups", "categories", "keywords", "tkeywords", "regions", "owners")


@pytest.mark.parametrize("path", ("/api/v2/", "/api/v2"))
def test_root_lists_registered_collections(client, app, path):
    response = client.get(path)
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert list(body) == sorted(body)
    for name, url in body.items():
        assert url == f"http://testserver/api/v2/{name}"
    # Every collection the app registers is listed; the fixed ones are always there.
    registered = {p.split("/")[3] for p in app.openapi()["paths"] if p.count("/") >= 3}
    for name in EXPECTED:
        if name in registered:
            assert name in body, name
    assert {"resources", "categories", "keywords", "tkeywords", "regions"} <= set(body)
    assert not {"schema", "openapi.json", "docs", "resource-service"} & set(body)


def test_root_links_answer(client):
    for name, url in client.get("/api/v2/").json().items():
        response = client.get(url.replace("http://testserver", ""), params={"page_size": 1})
        assert response.status_code in (200, 401), name


def _paths(document: dict) -> set[str]:
    return set(document["paths"])


def test_schema_yaml_by_default(client):
    response = client.get("/api/v2/schema/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(YAML_TYPE)
    document = yaml.safe_load(response.text)
    assert document["openapi"].startswith("3.")
    assert {"/api/v2/resources", "/api/v2/regions", "/api/v2/categories/{item_id}"} <= _paths(document)


@pytest.mark.parametrize("query, accept, expected", [
    ({"format": "openapi-json"}, None, JSON_TYPE),
    ({"format": "openapi"}, None, YAML_TYPE),
    ({}, JSON_TYPE, JSON_TYPE),
    ({}, YAML_TYPE, YAML_TYPE),
    ({}, f"{JSON_TYPE}; q=1.0, */*", JSON_TYPE),
    ({"format": "openapi"}, JSON_TYPE, YAML_TYPE),  # an explicit format wins over Accept
])
def test_schema_negotiation(client, query, accept, expected):
    headers = {"Accept": accept} if accept else {}
    response = client.get("/api/v2/schema", params=query, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == expected
    document = json.loads(response.text) if expected == JSON_TYPE else yaml.safe_load(response.text)
    assert document["info"]["title"] == "Cartotheca"
    assert "/api/v2/schema" in _paths(document)


def test_schema_paths_are_the_real_routes(client):
    document = client.get("/api/v2/schema", params={"format": "openapi-json"}).json()
    # A path the router knows answers an unoffered method with 405; an unknown one with 404.
    for path in _paths(document):
        concrete = path.replace("{", "").replace("}", "")
        assert client.request("TRACE", concrete).status_code == 405, path
    assert client.request("TRACE", "/api/v2/nosuchcollection").status_code == 404
    for name in ("categories", "keywords", "tkeywords", "regions"):
        assert "get" in document["paths"][f"/api/v2/{name}"]
        assert "get" in document["paths"][f"/api/v2/{name}/{{item_id}}"]
        assert "post" not in document["paths"][f"/api/v2/{name}"]
    names = {p["name"] for p in document["paths"]["/api/v2/regions"]["get"]["parameters"]}
    assert {"page", "page_size", "search", "sort[]", "with_resources"} <= names
    keyword_names = {p["name"] for p in document["paths"]["/api/v2/keywords"]["get"]["parameters"]}
    assert "with_resources" not in keyword_names


def test_schema_yaml_and_json_agree(client):
    as_json = client.get("/api/v2/schema", params={"format": "openapi-json"}).json()
    as_yaml = yaml.safe_load(client.get("/api/v2/schema", params={"format": "openapi"}).text)
    assert as_json == as_yaml
