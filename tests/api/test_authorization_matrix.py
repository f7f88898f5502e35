"""Authorization matrix: role × endpoint family × kind of resource, with zero leaks.

Every cell asserts the status GeoNode gives and that no title or id of a resource the role
may not see appears anywhere in the body.
"""

from __future__ import annotations

import pytest

from tests.conftest import ADMIN_PASSWORD, basic
from tests.factories import PASSWORD, make_group, make_resource, make_user

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
    from fastapi.testclient import TestClient

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
