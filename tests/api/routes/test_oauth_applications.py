"""/api/v2/oauth-applications: staff register, list and delete OAuth2 clients (the staff page's API)."""

from __future__ import annotations

import pytest

from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import PASSWORD, make_user

PATH = "/api/v2/oauth-applications"
ADMIN = basic("admin", ADMIN_PASSWORD)


def test_staff_register_list_and_delete(client, db):
    make_user(db, "keeper", is_staff=True)
    make_user(db, "ana")
    staff = basic("keeper", PASSWORD)
    created = client.post(PATH, headers=staff, json={
        "name": "scripts", "grant_types": ["password"], "redirect_uris": ["https://a.example/cb"]})
    assert created.status_code == 201, created.text
    body = created.json()
    client_id, secret = body["application"]["client_id"], body["client_secret"]
    assert body["application"]["grant_types"] == ["password"] and secret
    token = client.post("/o/token/", data={"grant_type": "password", "username": "ana",
                                           "password": PASSWORD, "client_id": client_id,
                                           "client_secret": secret})
    assert token.status_code == 200, token.text

    listed = client.get(PATH, headers=staff).json()["applications"]
    assert [a["client_id"] for a in listed] == [client_id] and secret not in str(listed)
    assert client.delete(f"{PATH}/{client_id}", headers=staff).status_code == 204
    assert client.get(PATH, headers=staff).json()["applications"] == []
    assert client.delete(f"{PATH}/{client_id}", headers=staff).status_code == 404


@pytest.mark.parametrize("body, message", [
    ({"name": ""}, "an application needs a name"),
    ({"name": "x", "grant_types": ["authorization_code"]}, "grant types must be among"),
    ({"name": "x", "grant_types": "password", "client_type": "secretive"}, "client type must be one of"),
    ({"name": "x", "redirect_uris": ["ftp://a.example/"]}, "a redirect URI must be"),
    ({"name": "x", "redirect_uris": [1]}, "redirect_uris must be a list of texts"),
    ({"name": ["x"]}, "name, client_type and user must be text"),
    ({"name": "x", "user": "nobody"}, "No user named 'nobody'"),
    (["x"], "expected a JSON object"),
])
def test_bad_bodies_are_refused_and_nothing_is_created(client, db, body, message):
    answer = client.post(PATH, headers=ADMIN, json=body)
    assert 400 <= answer.status_code < 500 and message in answer.text, answer.text
    assert client.get(PATH, headers=ADMIN).json()["applications"] == []


def test_only_staff_and_only_superusers_name_another_owner(client, db):
    make_user(db, "keeper", is_staff=True)
    make_user(db, "ana")
    assert client.get(PATH, headers=basic("ana", PASSWORD)).status_code == 403
    assert client.post(PATH, headers=basic("ana", PASSWORD), json={"name": "x"}).status_code == 403
    assert client.get(PATH).status_code == 401
    for_ana = client.post(PATH, headers=basic("keeper", PASSWORD), json={"name": "x", "user": "ana"})
    assert for_ana.status_code == 403
    own = client.post(PATH, headers=basic("keeper", PASSWORD), json={"name": "x", "user": "keeper"})
    assert own.status_code == 201 and own.json()["application"]["user"] == "keeper"
    by_admin = client.post(PATH, headers=ADMIN, json={"name": "y", "user": "ana",
                                                         "grant_types": "password,client_credentials"})
    assert by_admin.status_code == 201
    assert by_admin.json()["application"]["grant_types"] == ["password", "client_credentials"]
