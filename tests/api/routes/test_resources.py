"""The resources collection: envelope, detail, visibility, writes."""

from tests.conftest import basic
from tests.factories import PASSWORD, make_resource, make_user


def test_list_envelope_and_detail(client, db, settings):
    owner = make_user(db, "ana")
    make_resource(db, settings, owner, "Rivers", keywords=["hydro"])
    make_resource(db, settings, owner, "Private", public=False)
    body = client.get("/api/v2/resources/").json()
    assert set(body) == {"links", "total", "page", "page_size", "resources"}
    assert body["total"] == 1 and body["page"] == 1 and body["page_size"] == 20
    record = body["resources"][0]
    assert record["title"] == "Rivers" and record["pk"].isdigit()
    assert record["owner"]["username"] == "ana"
    assert record["keywords"] == [{"name": "hydro", "slug": "hydro"}]
    detail = client.get(f"/api/v2/resources/{record['pk']}")
    assert detail.status_code == 200 and detail.json()["resource"]["title"] == "Rivers"


def test_private_detail_needs_credentials(client, db, settings):
    owner = make_user(db, "ana")
    private = make_resource(db, settings, owner, "Secret", public=False)
    anonymous = client.get(f"/api/v2/resources/{private.id}")
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Basic")
    assert "Secret" not in anonymous.text
    other = make_user(db, "bob")
    assert client.get(f"/api/v2/resources/{private.id}",
                      headers=basic(other.username, PASSWORD)).status_code == 403
    mine = client.get(f"/api/v2/resources/{private.id}", headers=basic("ana", PASSWORD))
    assert mine.status_code == 200 and "delete_resourcebase" in mine.json()["resource"]["perms"]
