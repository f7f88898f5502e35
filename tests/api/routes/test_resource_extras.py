"""Linked resources, extra metadata and ratings on every resource type."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from cartotheca.catalogue import linked_resources
from cartotheca.db.models import ExtraMetadata, LinkedResource, Resource
from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import PASSWORD, make_resource, make_user


@pytest.fixture
def scene(db, settings):
    ana = make_user(db, "ana")
    bob = make_user(db, "bob")
    return {
        "ana": ana, "bob": bob,
        "dataset": make_resource(db, settings, ana, "Rivers dataset"),
        "document": make_resource(db, settings, ana, "Rivers report", resource_type="document"),
        "map": make_resource(db, settings, ana, "Rivers map", resource_type="map"),
        "story": make_resource(db, settings, ana, "Rivers story", resource_type="geostory"),
        "private": make_resource(db, settings, ana, "Private survey", public=False),
        "bobs": make_resource(db, settings, bob, "Bob's dataset"),
    }


ANA, BOB = basic("ana", PASSWORD), basic("bob", PASSWORD)


def link(client, source, targets, headers=ANA, method="POST", path="resources"):
    return client.request(method, f"/api/v2/{path}/{source.id}/linked_resources", headers=headers,
                          json={"target": [t.id if isinstance(t, Resource) else t for t in targets]})


# -- linked resources -----------------------------------------------------------------------------


def test_links_both_directions(client, scene):
    document, dataset, story = scene["document"], scene["dataset"], scene["story"]
    added = link(client, document, [dataset, story])
    assert added.status_code == 200, added.text
    assert added.json() == {"success": [dataset.id, story.id], "error": [],
                            "message": "Resources updated successfully"}
    body = client.get(f"/api/v2/resources/{document.id}/linked_resources").json()
    assert set(body) == {"linked_to", "linked_by"}
    assert [i["pk"] for i in body["linked_to"]] == [story.id, dataset.id]  # newest first
    item = body["linked_to"][1]
    assert item == {"internal": False, "pk": dataset.id, "title": "Rivers dataset",
                    "resource_type": "dataset",
                    "detail_url": f"http://testserver/catalogue/#/dataset/{dataset.id}",
                    "thumbnail_url": None}
    assert body["linked_by"] == []
    back = client.get(f"/api/v2/datasets/{dataset.id}/linked_resources").json()
    assert [i["pk"] for i in back["linked_by"]] == [document.id] and back["linked_to"] == []
    typed = client.get(f"/api/v2/documents/{document.id}/linked_resources").json()
    assert typed == body
    only = client.get(f"/api/v2/resources/{document.id}/linked_resources?resource_type=geostory,map"
                      "&link_type=linked_to").json()
    assert list(only) == ["linked_to"] and [i["pk"] for i in only["linked_to"]] == [story.id]
    paged = client.get(f"/api/v2/resources/{document.id}/linked_resources?page_size=5").json()
    assert paged["WARNINGS"] == {"PAGINATION": "Pagination is not supported on this call"}
    assert client.get(f"/api/v2/resources/{document.id}/linked_resources?link_type=x").status_code == 400


def test_typed_paths_check_the_type(client, scene):
    document = scene["document"]
    assert client.get(f"/api/v2/datasets/{document.id}/linked_resources").status_code == 404
    assert client.get(f"/api/v2/geoapps/{scene['story'].id}/linked_resources").status_code == 200
    assert client.get(f"/api/v2/geostories/{scene['story'].id}/linked_resources").status_code == 200
    assert client.get("/api/v2/resources/999999/linked_resources").status_code == 404


def test_errors_are_listed_per_target(client, db, scene):
    document = scene["document"]
    response = link(client, document, [scene["dataset"], document, 999999, "abc", None,
                                       scene["dataset"].id])
    assert response.status_code == 400
    body = response.json()
    assert body["success"] == [scene["dataset"].id]
    assert body["error"] == [document.id, 999999, "abc", None]
    assert body["message"] == "Some error has occurred during the saving"
    again = link(client, document, [scene["dataset"]])
    assert again.status_code == 400 and again.json()["error"] == [scene["dataset"].id]
    db.rollback()
    assert db.scalar(select(LinkedResource.target_id).where(
        LinkedResource.source_id == document.id)) == scene["dataset"].id
    for bad in ({}, {"target": []}, {"target": 5}, [1, 2]):
        assert client.post(f"/api/v2/resources/{document.id}/linked_resources", headers=ANA,
                           json=bad).status_code == 400


def test_only_viewable_ends_are_shown_or_linked(client, db, scene):
    document, private = scene["document"], scene["private"]
    # bob may not link to a resource he cannot see, nor from one he cannot change
    refused = link(client, scene["bobs"], [private], headers=BOB)
    assert refused.status_code == 400 and refused.json()["error"] == [private.id]
    assert link(client, document, [scene["bobs"]], headers=BOB).status_code == 403
    assert link(client, document, [scene["bobs"]], headers={}).status_code == 401
    # ana links her document to her private survey: others never see that end
    assert link(client, document, [private, scene["bobs"]]).status_code == 200
    assert link(client, private, [document]).status_code == 200
    for headers in ({}, BOB):
        body = client.get(f"/api/v2/resources/{document.id}/linked_resources", headers=headers)
        assert [i["pk"] for i in body.json()["linked_to"]] == [scene["bobs"].id]
        assert body.json()["linked_by"] == [] and "Private survey" not in body.text
    assert client.get(f"/api/v2/resources/{private.id}/linked_resources", headers=BOB).status_code == 403
    mine = client.get(f"/api/v2/resources/{document.id}/linked_resources", headers=ANA).json()
    assert {i["pk"] for i in mine["linked_to"]} == {private.id, scene["bobs"].id}
    assert [i["pk"] for i in mine["linked_by"]] == [private.id]


def test_delete_links(client, db, scene):
    document, dataset, story = scene["document"], scene["dataset"], scene["story"]
    link(client, document, [dataset, story])
    removed = link(client, document, [dataset, 424242], method="DELETE")
    assert removed.status_code == 400
    assert removed.json()["success"] == [dataset.id] and removed.json()["error"] == [424242]
    assert link(client, document, [story], method="DELETE").status_code == 200
    assert client.get(f"/api/v2/resources/{document.id}/linked_resources").json()["linked_to"] == []
    assert link(client, document, [story], headers=BOB, method="DELETE").status_code == 403


def test_links_go_with_their_resources(client, db, scene):
    document, dataset = scene["document"], scene["dataset"]
    link(client, document, [dataset])
    assert client.delete(f"/api/v2/resources/{dataset.id}", headers=ANA).status_code == 204
    db.rollback()
    assert db.scalar(select(LinkedResource.id)) is None


def test_internal_links(db, client, scene):
    source, dataset, story = scene["map"], scene["dataset"], scene["story"]
    link(client, source, [story])
    linked_resources.set_internal_links(db, source.id, [dataset.id, story.id])
    db.commit()
    body = client.get(f"/api/v2/resources/{source.id}/linked_resources").json()
    assert {(i["pk"], i["internal"]) for i in body["linked_to"]} == {(dataset.id, True), (story.id, False)}
    linked_resources.set_internal_links(db, source.id, [])
    db.commit()
    body = client.get(f"/api/v2/resources/{source.id}/linked_resources").json()
    assert [(i["pk"], i["internal"]) for i in body["linked_to"]] == [(story.id, False)]


# -- extra metadata ------------------------------------------------------------------------------

ITEM = {"filter_header": "Sources", "field_name": "source", "field_label": "Source",
        "field_value": "survey 2024"}


def test_extra_metadata_lifecycle(client, db, scene):
    dataset = scene["dataset"]
    path = f"/api/v2/resources/{dataset.id}/extra_metadata"
    assert client.get(path).json() == []
    added = client.post(path, headers=ANA, json=[ITEM, ITEM | {"field_value": "lidar"}])
    assert added.status_code == 200, added.text
    items = added.json()
    assert [i["field_value"] for i in items] == ["survey 2024", "lidar"]
    assert all(isinstance(i["id"], int) for i in items)
    assert client.get(path).json() == items
    assert client.get(f"{path}?field_value=lidar").json() == [items[1]]
    assert client.get(f"{path}?field_value=nothing").json() == []
    updated = client.put(path, headers=ANA, json=[items[0] | {"field_value": "survey 2025"}])
    assert updated.status_code == 200
    assert [i["field_value"] for i in updated.json()] == ["survey 2025", "lidar"]
    deleted = client.request("DELETE", path, headers=ANA, json=[items[1]["id"]])
    assert deleted.status_code == 204
    assert [i["id"] for i in client.get(path).json()] == [items[0]["id"]]
    typed = client.get(f"/api/v2/datasets/{dataset.id}/extra_metadata").json()
    assert typed == client.get(path).json()


@pytest.mark.parametrize("body,named", [
    ([ITEM, {"field_name": "x"}], "index 1"),
    ([ITEM | {"extra": 1}], "index 0"),
    ([ITEM | {"id": "seven"}], "index 0"),
    (["not an object"], "item 0"),
    ("nothing", "list"),
    ([], "list"),
])
def test_invalid_items_name_the_item_and_change_nothing(client, db, scene, body, named):
    dataset = scene["dataset"]
    path = f"/api/v2/resources/{dataset.id}/extra_metadata"
    response = client.post(path, headers=ANA, json=body)
    assert response.status_code == 400, response.text
    assert named in response.json()["errors"][0]
    db.rollback()
    assert db.scalar(select(ExtraMetadata.id)) is None


def test_updates_need_known_ids(client, scene):
    path = f"/api/v2/resources/{scene['dataset'].id}/extra_metadata"
    other = f"/api/v2/resources/{scene['document'].id}/extra_metadata"
    theirs = client.post(other, headers=ANA, json=[ITEM]).json()[0]
    missing_id = client.put(path, headers=ANA, json=[ITEM])
    assert missing_id.status_code == 400 and "id" in missing_id.json()["errors"][0]
    foreign = client.put(path, headers=ANA, json=[theirs | {"field_value": "x"}])
    assert foreign.status_code == 400
    assert client.request("DELETE", path, headers=ANA, json=[theirs["id"]]).status_code == 204
    assert client.get(other).json() == [theirs]
    assert client.request("DELETE", path, headers=ANA, json={"a": 1}).status_code == 400


def test_schema_per_type_from_settings(make_app, db, settings):
    ana = make_user(db, "ana")
    story = make_resource(db, settings, ana, "Story", resource_type="geostory")
    document = make_resource(db, settings, ana, "Doc", resource_type="document")
    schema = {"type": "object", "required": ["source"],
              "properties": {"source": {"type": "string", "maxLength": 10}}}
    app = make_app(EXTRA_METADATA_SCHEMA={"geoapp": schema})
    with TestClient(app) as client:
        ok = client.post(f"/api/v2/resources/{story.id}/extra_metadata", headers=ANA,
                         json=[{"source": "lidar"}])
        assert ok.status_code == 200 and ok.json()[0]["source"] == "lidar"
        long = client.post(f"/api/v2/resources/{story.id}/extra_metadata", headers=ANA,
                           json=[{"source": "x" * 20}])
        assert long.status_code == 400 and "index 0" in long.json()["errors"][0]
        none = client.post(f"/api/v2/resources/{document.id}/extra_metadata", headers=ANA,
                           json=[{"source": "x"}])
        assert none.status_code == 400 and "not available for resource document" in none.json()["errors"][0]


def test_extra_metadata_permissions(client, scene):
    private = scene["private"]
    path = f"/api/v2/resources/{private.id}/extra_metadata"
    assert client.post(path, headers=ANA, json=[ITEM]).status_code == 200
    assert client.get(path).status_code == 401
    assert client.get(path, headers=BOB).status_code == 403
    public = f"/api/v2/resources/{scene['dataset'].id}/extra_metadata"
    assert client.post(public, headers=BOB, json=[ITEM]).status_code == 403
    assert client.post(public, json=[ITEM]).status_code == 401
    assert client.get(public, headers=BOB).json() == []


# -- ratings -------------------------------------------------------------------------------------


def test_ratings(client, db, scene):
    dataset = scene["dataset"]
    path = f"/api/v2/resources/{dataset.id}/ratings"
    assert client.get(path).json() == {"rating": 0, "overall_rating": 0}
    assert client.post(path, headers=ANA, json={"rating": 4}).json() == {"rating": 4, "overall_rating": 4.0}
    assert client.post(path, headers=BOB, json={"rating": 1}).json() == {"rating": 1, "overall_rating": 2.5}
    # a second rating by the same user replaces the first
    assert client.post(path, headers=BOB, json={"rating": 2}).json() == {"rating": 2, "overall_rating": 3.0}
    assert client.get(path, headers=ANA).json() == {"rating": 4, "overall_rating": 3.0}
    assert client.get(path).json() == {"rating": 0, "overall_rating": 3.0}
    record = client.get(f"/api/v2/resources/{dataset.id}").json()["resource"]
    assert record["rating"] == "3"
    client.post(path, headers=BOB, json={"rating": 5})  # average 4.5: the column rounds half up
    assert client.get(f"/api/v2/datasets/{dataset.id}").json()["dataset"]["rating"] == "5"
    sorted_ = client.get("/api/v2/resources?sort[]=-rating").json()["resources"]
    assert sorted_[0]["pk"] == str(dataset.id)


def test_rating_rules(client, db, scene):
    dataset, private = scene["dataset"], scene["private"]
    path = f"/api/v2/resources/{dataset.id}/ratings"
    before = client.get(f"/api/v2/resources/{dataset.id}").json()["resource"]["last_updated"]
    for bad in ({"rating": 0}, {"rating": 6}, {"rating": "x"}, {"rating": 2.5}, {}, {"rating": True}):
        assert client.post(path, headers=ANA, json=bad).status_code == 400, bad
    assert client.post(path, json={"rating": 3}).status_code == 401
    assert client.post(f"/api/v2/resources/{private.id}/ratings", headers=BOB,
                       json={"rating": 3}).status_code == 403
    assert client.get(f"/api/v2/resources/{private.id}/ratings").status_code == 401
    assert client.post(path, headers=ANA, json={"rating": "5"}).json()["rating"] == 5
    after = client.get(f"/api/v2/resources/{dataset.id}").json()["resource"]["last_updated"]
    assert after == before  # rating is not editing
    admin = basic("admin", ADMIN_PASSWORD)
    assert client.post(f"/api/v2/resources/{private.id}/ratings", headers=admin,
                       json={"rating": 1}).status_code == 200
    db.rollback()
    assert db.scalar(select(Resource.rating).where(Resource.id == private.id)) == 1
