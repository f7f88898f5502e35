"""Authorization matrix: role × endpoint family × kind of resource, with zero leaks.

Every cell asserts the status GeoNode gives and that no title or id of a resource the role
may not see appears anywhere in the body.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from cartotheca.catalogue import maps
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, principal_for
from cartotheca.db.models import ResourcePermission
from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import PASSWORD, make_group, make_resource, make_user
from tests.geodata.fixtures import publish_file, write_polygons
from tests.ows.conftest import make_private

ROLES = ("anonymous", "registered", "owner", "member", "manager", "admin")
KINDS = ("public", "private", "group_shared", "unpublished")

# Who sees each kind in lists and details (GeoNode's rules).
SEES = {
    "public": set(ROLES),
    "private": {"owner", "admin"},
    "group_shared": {"owner", "admin", "member", "manager"},
    "unpublished": {"owner", "admin", "member", "manager"},
}
MANAGES = {"owner", "admin"}


@pytest.fixture
def world(db, settings):
    owner = make_user(db, "olga")
    member = make_user(db, "mario")
    manager = make_user(db, "mona")
    make_user(db, "rex")
    team = make_group(db, "Hydro Team", members=[member], managers=[manager])
    resources = {
        "public": make_resource(db, settings, owner, "Matrix public title", keywords=["kw-public"]),
        "private": make_resource(db, settings, owner, "Matrix private title", public=False,
                                 keywords=["kw-private"]),
        "group_shared": make_resource(db, settings, owner, "Matrix shared title", public=False,
                                      shared_with_group=team, keywords=["kw-shared"]),
        "unpublished": make_resource(db, settings, owner, "Matrix unpublished title",
                                     is_published=False, group=team, keywords=["kw-unpub"]),
    }
    return resources


def headers_for(role: str) -> dict[str, str]:
    return {
        "anonymous": {},
        "registered": basic("rex", PASSWORD),
        "owner": basic("olga", PASSWORD),
        "member": basic("mario", PASSWORD),
        "manager": basic("mona", PASSWORD),
        "admin": basic("admin", ADMIN_PASSWORD),
    }[role]


def hidden_markers(world, role: str) -> list[str]:
    markers = []
    for kind, resource in world.items():
        if role not in SEES[kind]:
            markers += [resource.title, f'"pk":"{resource.id}"', f"/resources/{resource.id}\"",
                        resource.uuid, f"kw-{kind.split('_')[0][:6]}"]
    return markers


def assert_no_leak(response, world, role: str) -> None:
    text = response.text
    for marker in hidden_markers(world, role):
        assert marker not in text, f"{role} sees {marker!r} in {response.request.url}"


def detail_status(kind: str, role: str) -> int:
    if role in SEES[kind]:
        return 200
    if kind == "unpublished":
        return 404  # viewable by permission but hidden by publication
    return 401 if role == "anonymous" else 403


def manage_status(kind: str, role: str) -> int:
    if role == "anonymous":
        return 401  # never allowed, so answered before the resource is even looked up
    seen = detail_status(kind, role)
    if seen != 200:
        return seen
    if role in MANAGES:
        return 200
    return 401 if role == "anonymous" else 403


@pytest.mark.parametrize("role", ROLES)
def test_lists_and_counts(client, world, role):
    headers = headers_for(role)
    for path in ("/api/v2/resources?page_size=100", "/api/v2/resources/published",
                 "/api/v2/resources/approved", "/api/v2/resources/featured",
                 "/api/v2/resources?search=Matrix&search_fields=title",
                 "/api/v2/resources?filter{keywords.name.in}=kw-private&filter{keywords.name.in}=kw-shared",
                 "/api/v2/resources/resource_types", "/api/v2/keywords?page_size=100",
                 "/api/v2/owners"):
        response = client.get(path, headers=headers)
        assert response.status_code == 200, (path, response.text)
        assert_no_leak(response, world, role)
    listed = client.get("/api/v2/resources?page_size=100", headers=headers).json()
    titles = {r["title"] for r in listed["resources"]}
    assert titles == {r.title for k, r in world.items() if role in SEES[k]}
    counts = client.get("/api/v2/resources/resource_types", headers=headers).json()
    dataset = next(t for t in counts["resource_types"] if t["name"] == "dataset")
    assert dataset["count"] == sum(1 for k in KINDS if role in SEES[k])


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("kind", KINDS)
def test_item_endpoints(client, world, role, kind):
    headers = headers_for(role)
    resource = world[kind]
    reads = {
        f"/api/v2/resources/{resource.id}": detail_status(kind, role),
        f"/api/v2/resources/{resource.id}/keywords": detail_status(kind, role),
        f"/api/v2/resources/{resource.id}/owner": detail_status(kind, role),
        f"/api/v2/resources/{resource.id}/permissions": manage_status(kind, role),
        f"/api/v2/resources/{resource.id}/get_perms": manage_status(kind, role),
    }
    for path, expected in reads.items():
        response = client.get(path, headers=headers)
        assert response.status_code == expected, (role, kind, path, response.text)
        if expected != 200:
            assert resource.title not in response.text
        assert_no_leak(response, world, role)

    favorite = client.post(f"/api/v2/resources/{resource.id}/favorite", headers=headers)
    expected = 401 if role == "anonymous" else detail_status(kind, role)
    assert favorite.status_code == expected
    assert_no_leak(favorite, world, role)

    writes = [
        ("put", f"/api/v2/resources/{resource.id}/update", {"vals": {"abstract": "x"}}),
        ("put", f"/api/v2/resources/{resource.id}/copy", {}),
        ("patch", f"/api/v2/resources/{resource.id}", {"abstract": "y"}),
        ("delete", f"/api/v2/resources/{resource.id}/delete", None),
    ]
    for method, path, body in writes:
        response = client.request(method, path, headers=headers, json=body)
        if method == "put" and path.endswith("/copy"):
            # copying a dataset needs download too; the group was only given view
            expected = 401 if role == "anonymous" else detail_status(kind, role)
            if expected == 200 and kind == "group_shared" and role in ("member", "manager"):
                expected = 403
        else:
            expected = manage_status(kind, role)
        assert response.status_code == expected, (role, kind, method, path, response.text)
        assert_no_leak(response, world, role)


def test_unapproved_resources_under_moderation(make_app, db, settings):
    """With ADMIN_MODERATE_UPLOADS, new resources wait for staff approval, as in GeoNode."""
    make_user(db, "olga")
    member = make_user(db, "mario")
    make_user(db, "rex")
    team = make_group(db, "Hydro Team", members=[member])
    app = make_app(ADMIN_MODERATE_UPLOADS=True)
    with TestClient(app) as client:
        created = client.post("/api/v2/resources", headers=basic("olga", PASSWORD),
                              json={"title": "Awaiting approval", "group": {"pk": team.id}})
        assert created.status_code == 201
        record = created.json()["resource"]
        assert record["is_approved"] is False
        pk = record["pk"]

        def titles(headers):
            body = client.get("/api/v2/resources", headers=headers).json()
            return {r["title"] for r in body["resources"]}

        assert "Awaiting approval" in titles(basic("olga", PASSWORD))
        assert "Awaiting approval" in titles(basic("mario", PASSWORD))
        for outsider in ({}, basic("rex", PASSWORD)):
            assert "Awaiting approval" not in titles(outsider)
            assert client.get(f"/api/v2/resources/{pk}", headers=outsider).status_code == 404
        # the owner may not approve their own resource; staff may
        denied = client.patch(f"/api/v2/resources/{pk}", headers=basic("olga", PASSWORD),
                              json={"is_approved": True})
        assert denied.status_code == 403
        approved = client.patch(f"/api/v2/resources/{pk}", headers=basic("admin", ADMIN_PASSWORD),
                                json={"is_approved": True})
        assert approved.status_code == 200 and approved.json()["resource"]["is_approved"] is True
        assert "Awaiting approval" in titles({})


# -- maps -------------------------------------------------------------------------------------
# Maps of each kind, each showing a public dataset and the owner's private one: the private
# dataset's layer is a leak probe inside maps the role may see.

MAP_PATHS = ("", "/maplayers", "/layers", "/local_layers", "/datasets", "/linked_resources", "/owner")


@pytest.fixture
def map_world(db, settings, tmp_path):
    owner = make_user(db, "olga")
    member = make_user(db, "mario")
    manager = make_user(db, "mona")
    make_user(db, "rex")
    team = make_group(db, "Hydro Team", members=[member], managers=[manager])
    visible = publish_file(db, settings, owner, write_polygons(tmp_path / "v", "matrix_open_layer"),
                           title="Matrix open layer")
    secret = publish_file(db, settings, owner, write_polygons(tmp_path / "s", "matrix_secret_layer"),
                          title="Matrix secret layer")
    make_private(db, settings, secret)
    anonymous_id, registered_id = internal_group_ids(db, settings)
    principal = principal_for(db, owner, InternalGroups(anonymous_id, registered_id), "test")
    out = {"open": visible, "secret": secret}
    for kind in KINDS:
        resource = maps.create_map(db, principal, settings, {
            "title": f"Matrix {kind} map", "data": {"note": f"blob-{kind}"},
            "maplayers": [{"dataset": visible.id}, {"dataset": secret.id}]})
        if kind != "public":
            db.execute(delete(ResourcePermission).where(ResourcePermission.resource_id == resource.id,
                                                        ResourcePermission.group_id == anonymous_id))
        if kind == "group_shared":
            perms.grant(db, resource.id, "view", group_id=team.id)
        if kind == "unpublished":
            perms.grant(db, resource.id, "view", group_id=anonymous_id)
            resource.is_published = False
            resource.group_id = team.id
        out[kind] = resource
    db.commit()
    return out


def map_markers(map_world, role: str) -> list[str]:
    markers = []
    for kind in KINDS:
        if role not in SEES[kind]:
            resource = map_world[kind]
            markers += [resource.title, resource.uuid, f"blob-{kind}", f"/maps/{resource.id}\""]
    if role not in SEES["private"]:
        secret = map_world["secret"]
        markers += [secret.title, secret.alternate, secret.uuid]
    return markers


def assert_no_map_leak(response, map_world, role: str) -> None:
    for marker in map_markers(map_world, role):
        assert marker not in response.text, f"{role} sees {marker!r} in {response.request.url}"


@pytest.mark.parametrize("role", ROLES)
def test_maps(client, map_world, role):
    headers = headers_for(role)
    seen = {map_world[k].title for k in KINDS if role in SEES[k]}
    open_layer = map_world["open"]
    lists = {
        "/api/v2/maps?page_size=100": "maps", "/api/v2/resources?filter{resource_type}=map": "resources",
        "/api/v2/layers?page_size=100": None, f"/api/v2/datasets/{open_layer.id}/maps": None,
        f"/api/v2/datasets/{open_layer.id}/maplayers": None,
        f"/api/v2/resources/{open_layer.id}/linked_resources": None,
    }
    for path, key in lists.items():
        response = client.get(path, headers=headers)
        assert response.status_code == 200, (path, response.text)
        assert_no_map_leak(response, map_world, role)
        if key:
            assert {r["title"] for r in response.json()[key]} == seen, (role, path)
    used_by = client.get(f"/api/v2/datasets/{open_layer.id}/maps", headers=headers).json()
    assert {m["title"] for m in used_by} == seen
    sees_secret = role in SEES["private"]
    for kind in KINDS:
        resource = map_world[kind]
        expected = detail_status(kind, role)
        for path in [f"/api/v2/maps/{resource.id}{p}" for p in MAP_PATHS] + [
                f"/maps/{resource.id}/image.png", f"/maps/{resource.id}/embed"]:
            response = client.get(path, headers=headers)
            assert response.status_code == expected, (role, kind, path, response.text)
            assert_no_map_leak(response, map_world, role)
        if expected == 200:
            layers = client.get(f"/api/v2/maps/{resource.id}/maplayers", headers=headers).json()
            names = [layer["name"] for layer in layers]
            assert names == [open_layer.alternate] + ([map_world["secret"].alternate] if sees_secret else [])
        manage = manage_status(kind, role)
        writes = [
            ("patch", f"/api/v2/maps/{resource.id}", {"abstract": "changed"}, manage),
            ("patch", f"/api/v2/maps/{resource.id}", {"maplayers": [{"dataset": open_layer.id}]}, manage),
            ("post", "/api/v2/layers", {"map": resource.id, "dataset": open_layer.id},
             201 if manage == 200 else manage),
        ]
        for method, path, body, status in writes:
            response = client.request(method, path, headers=headers, json=body)
            assert response.status_code == status, (role, kind, method, path, body, response.text)
            assert_no_map_leak(response, map_world, role)
