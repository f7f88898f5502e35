"""Bad input never reaches the database as a crash: 4xx with the GeoNode error triple, and SQL
looking text is data. Raw bytes (invalid UTF-8) are sent through httpx untouched."""

from __future__ import annotations

import pytest

from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user

LISTS = ("/api/v2/resources", "/api/v2/regions", "/api/v2/categories", "/api/v2/keywords",
         "/api/v2/tkeywords")


def assert_error(response, status: int, *, code: str | None = None, names: str | None = None) -> dict:
    """The GeoNode triple; ``names`` must appear in the first message (the offending parameter)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["success"] is False
    assert isinstance(body["errors"], list) and body["errors"]
    assert all(isinstance(e, str) for e in body["errors"])
    assert isinstance(body["code"], str) and body["code"]
    if code is not None:
        assert body["code"] == code
    if names is not None:
        assert names in body["errors"][0], body["errors"]
    return body


@pytest.fixture
def rows(db, settings):
    owner = make_user(db, "ana")
    public = make_resource(db, settings, owner, "Public rivers", keywords=["hydro"], regions=["ITA"])
    private = make_resource(db, settings, owner, "Private roads", public=False)
    return public, private


# -- query parameters of the wrong type or shape -------------------------------------------

QUERY_CASES = [
    ("filter{pk}=abc", "invalid", "filter{pk}"),
    ("filter{pk}=1e5", "invalid", "filter{pk}"),
    ("filter{pk}=99999999999999999999", "invalid", "filter{pk}"),
    ("filter{pk.in}=1&filter{pk.in}=x", "invalid", "filter{pk.in}"),
    ("filter{pk.range}=1", "invalid", "filter{pk.range}"),
    ("page=abc", "invalid", "page"),
    ("page=0", "invalid", "page"),
    ("page=-3", "invalid", "page"),
    ("page_size=0", "invalid", "page_size"),
    ("page_size=-1", "invalid", "page_size"),
    ("page_size=100000", "invalid", "page_size"),
    ("page_size=1e3", "invalid", "page_size"),
    ("page_size=ten", "invalid", "page_size"),
    ("sort[]=nosuch", "invalid", "nosuch"),
    ("sort[]=-nosuch", "invalid", "nosuch"),
    ("ordering=nosuch", "invalid", "nosuch"),
    ("filter{nosuch}=1", "invalid", "nosuch"),
    ("filter{-nosuch}=1", "invalid", "nosuch"),
    ("filter{name.badop}=x", "invalid", "name.badop"),
    ("filter{name=x", "parse_error", "filter{name"),
    ("filter{}=x", "parse_error", "filter{}"),
    ("filter{.name}=x", "parse_error", "filter{.name}"),
    ("filterx=1", "parse_error", "filterx"),
    ("search=x&search_fields=nosuch", "invalid", "nosuch"),
    ("filter{pk.icontains}=1", "invalid", "filter{pk.icontains}"),
]


@pytest.mark.parametrize("path", ("/api/v2/regions", "/api/v2/keywords", "/api/v2/categories"))
def test_reference_lists_reject_bad_parameters(client, path):
    for query, code, names in QUERY_CASES:
        if path.endswith("categories"):
            query, names = query.replace("name", "identifier"), names.replace("name", "identifier")
        assert_error(client.get(f"{path}?{query}"), 400, code=code, names=names)


RESOURCE_CASES = [
    (q.replace("name", "title"), c, n.replace("name", "title")) for q, c, n in QUERY_CASES
] + [
    ("extent=1,2,3", "invalid", "extent"),
    ("extent=a,b,c,d", "invalid", "extent"),
    ("extent=1,2,3,4,5", "invalid", "extent"),
    ("extent=nan,1,2,3", "invalid", "extent"),
    ("extent=0,100,10,120", "invalid", "extent"),
    ("extent=", "invalid", "extent"),
    ("favorite=maybe", "invalid", "favorite"),
    ("filter{date.gte}=notadate", "invalid", "filter{date.gte}"),
    ("filter{date}=2020-13-45", "invalid", "filter{date}"),
    ("filter{title}=%00", "invalid", "filter{title}"),
    ("filter{owner.pk}=99999999999999999999", "invalid", "filter{owner.pk}"),
    ("filter{keywords.id}=x", "invalid", "filter{keywords.id}"),
]


def test_resource_list_rejects_bad_parameters(client, admin_auth):
    for query, code, names in RESOURCE_CASES:
        assert_error(client.get(f"/api/v2/resources?{query}"), 400, code=code, names=names)
        as_admin = client.get(f"/api/v2/resources?{query}", headers=admin_auth)
        assert_error(as_admin, 400, code=code, names=names)


def test_with_resources_must_be_a_boolean_word(client):
    for path in ("/api/v2/categories", "/api/v2/regions"):
        for value in ("maybe", "1", "yes", ""):
            assert_error(client.get(path, params={"with_resources": value}), 400, code="invalid",
                         names="with_resources")


def test_huge_page_numbers_are_invalid_pages(client, rows):
    for path in LISTS:
        for page in ("999999", "99999999999999999999999"):
            response = client.get(path, params={"page": page, "page_size": 5})
            body = assert_error(response, 404, code="not_found")
            assert body["errors"] == ["Invalid page."]


# -- SQL-looking text is data ---------------------------------------------------------------

INJECTIONS = ("' OR 1=1 --", "\" OR \"\"=\"", "1; DROP TABLE resources; --", "%' OR '%'='",
              "') OR ('a'='a", "\\'; SELECT 1; --", "_%", "%")


@pytest.mark.parametrize("text", INJECTIONS)
def test_sql_in_filters_and_search_matches_nothing(client, rows, text):
    for params in ({"filter{title}": text}, {"filter{title.icontains}": text},
                   {"filter{keywords.name}": text}, {"filter{owner.username}": text},
                   {"search": text}, {"search": text, "search_fields": "title"},
                   {"filter{title.in}": [text, "nothing"]}):
        response = client.get("/api/v2/resources", params=params)
        assert response.status_code == 200, (params, response.text)
        assert response.json()["total"] == 0, params
    for path, key in (("/api/v2/regions", "filter{name}"), ("/api/v2/regions", "filter{name.icontains}"),
                      ("/api/v2/keywords", "filter{name}"), ("/api/v2/categories", "filter{identifier}"),
                      ("/api/v2/regions", "search")):
        response = client.get(path, params={key: text})
        assert response.status_code == 200 and response.json()["total"] == 0, (path, key)
    # The tables are intact and the real rows still match.
    assert client.get("/api/v2/resources").json()["total"] == 1
    assert client.get("/api/v2/regions", params={"filter{code}": "ITA"}).json()["total"] == 1


def test_sql_text_stored_in_a_title_round_trips(client, admin_auth):
    title = "Robert'); DROP TABLE resources;--"
    created = client.post("/api/v2/resources", json={"title": title}, headers=admin_auth)
    assert created.status_code == 201
    found = client.get("/api/v2/resources", params={"filter{title}": title}, headers=admin_auth).json()
    assert [r["title"] for r in found["resources"]] == [title]


# -- invalid UTF-8 -----------------------------------------------------------------------

RAW_QUERIES = (b"filter{title}=%FF%FE", b"search=%C3%28", b"filter{%FF}=1", b"%FF=1",
               b"search=ok&search_fields=%E2%82")


@pytest.mark.parametrize("path", ("/api/v2/resources", "/api/v2/regions"))
def test_invalid_utf8_in_query_strings(client, path):
    for raw in RAW_QUERIES:
        # httpx would re-encode a str query; bytes in the URL's query are sent as they are.
        url = client.base_url.join(path).copy_with(query=raw)
        body = assert_error(client.get(url), 400, code="invalid", names="Invalid UTF-8")
        name = raw.split(b"&")[-1].split(b"=")[0].decode("ascii")
        if "%" not in name:
            assert name in body["errors"][0], raw


BAD_BODIES = (
    b'{"title": "\xff\xfe"}',
    b'\xff\xfe{"title": "x"}',
    b'{"title": "caf\xe9"}',  # latin-1, not UTF-8
    b'{"title": "\xed\xa0\x80"}',  # an encoded surrogate
)


def test_invalid_utf8_in_json_bodies(client, rows, admin_auth):
    public, _ = rows
    headers = {**admin_auth, "Content-Type": "application/json"}
    for raw in BAD_BODIES:
        assert_error(client.post("/api/v2/resources", content=raw, headers=headers), 400, code="parse_error")
        assert_error(client.patch(f"/api/v2/resources/{public.id}", content=raw, headers=headers), 400,
                     code="parse_error")
    assert client.get(f"/api/v2/resources/{public.id}").json()["resource"]["title"] == "Public rivers"
    assert client.get("/api/v2/resources", headers=admin_auth).json()["total"] == 2


def test_invalid_utf8_in_form_bodies(client, rows, admin_auth):
    public, _ = rows
    headers = {**admin_auth, "Content-Type": "application/x-www-form-urlencoded"}
    for raw in (b"title=%FF", b"title=caf\xe9"):
        assert_error(client.patch(f"/api/v2/resources/{public.id}", content=raw, headers=headers), 400,
                     code="parse_error")


# -- JSON bodies of the wrong shape ----------------------------------------------------------

WRONG_SHAPES = [
    (b"[1, 2]", None),
    (b'"a string"', None),
    (b"null", None),
    (b"42", None),
    (b"[]", None),
    (b'{"title": 5}', "title"),
    (b'{"title": {"a": 1}}', "title"),
    (b'{"title": ["x"]}', "title"),
    (b'{"title": "x", "keywords": "hydro"}', "keywords"),
    (b'{"title": "x", "keywords": [{"name": 5}]}', "keywords"),
    (b'{"title": "x", "category": 5.5}', "category"),
    (b'{"title": "x", "category": {"identifier": "nosuch"}}', "category"),
    (b'{"title": "x", "date": "not a date"}', "date"),
    (b'{"title": "x", "date_type": "yesterday"}', "date_type"),
    (b'{"title": "x", "owner": 5}', "owner"),
    (b'{"title": "x", "poc": "ana"}', "poc"),
    (b'{"title": "x", "poc": [{"pk": 99999999}]}', "poc"),
    (b'{"title": "x", "group": "nosuch"}', "group"),
    (b'{"title": "x", "tkeywords": [{"id": 999999}]}', "tkeywords"),
    (b'{"title": "x\\u0000y"}', "title"),
    (b'{"title": "x"', None),
]


def test_wrong_json_shapes_on_post_and_patch(client, rows, admin_auth):
    public, _ = rows
    headers = {**admin_auth, "Content-Type": "application/json"}
    for raw, field in WRONG_SHAPES:
        for response in (client.post("/api/v2/resources", content=raw, headers=headers),
                         client.patch(f"/api/v2/resources/{public.id}", content=raw, headers=headers)):
            body = assert_error(response, 400)
            if field is not None:
                assert field in body["errors"][0], (raw, body["errors"])
    assert client.get("/api/v2/resources", headers=admin_auth).json()["total"] == 2  # nothing created
    assert client.get(f"/api/v2/resources/{public.id}").json()["resource"]["title"] == "Public rivers"


def test_unsupported_body_type(client, rows, admin_auth):
    public, _ = rows
    response = client.patch(f"/api/v2/resources/{public.id}", content=b"<title>x</title>",
                            headers={**admin_auth, "Content-Type": "application/xml"})
    assert_error(response, 415, code="unsupported_media_type")


# -- ids and credentials -------------------------------------------------------------------

@pytest.mark.parametrize("collection", ("resources", "categories", "keywords", "tkeywords", "regions"))
def test_non_numeric_or_out_of_range_ids_are_404(client, collection):
    for raw in ("abc", "1.5", "-1", "0", "1e3", "99999999999999999999999", "%FF", "'%20OR%201=1"):
        body = assert_error(client.get(f"/api/v2/{collection}/{raw}"), 404, code="not_found")
        assert body["detail"] == "Not found.", raw


def test_writes_on_non_numeric_ids_are_404(client, admin_auth):
    for method in ("PATCH", "PUT", "DELETE"):
        response = client.request(method, "/api/v2/resources/abc", json={"title": "x"}, headers=admin_auth)
        assert_error(response, 404, code="not_found")


def test_private_data_needs_credentials(client, rows):
    _, private = rows
    for response in (client.get(f"/api/v2/resources/{private.id}"),
                     client.get(f"/api/v2/resources/{private.id}/keywords"),
                     client.get("/api/v2/resources/favorites"),
                     client.patch(f"/api/v2/resources/{private.id}", json={"title": "stolen"}),
                     client.delete(f"/api/v2/resources/{private.id}")):
        assert_error(response, 401, code="not_authenticated")
        assert response.headers["www-authenticate"].startswith("Basic")
        assert "Private roads" not in response.text


def test_wrong_password_is_401_with_challenge(client, rows):
    _, private = rows
    response = client.get(f"/api/v2/resources/{private.id}", headers=basic("ana", "wrong-" + PASSWORD))
    assert_error(response, 401)
    assert response.headers["www-authenticate"].startswith("Basic")


def test_malformed_authorization_headers(client, rows):
    _, private = rows
    for header in ("Basic !!!notbase64", "Basic " + "QQ==", "Bearer", "Digest abc", "Basic"):
        response = client.get(f"/api/v2/resources/{private.id}", headers={"Authorization": header})
        assert 400 <= response.status_code < 500, header
        assert_error(response, response.status_code)
        assert "Private roads" not in response.text
