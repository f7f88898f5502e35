"""Authorization matrix for documents, geoapps and geostories: role × endpoint × kind, zero leaks.

The same roles and kinds as the resource matrix (public, private, shared with a group,
unpublished in a group). Documents are real uploads with stored files; every kind is linked to
and from a public hub, so the linked-resource lists are checked for leaks from both ends.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import delete

from cartotheca.catalogue import documents, geoapps, linked_resources
from cartotheca.catalogue import permissions as perms
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, principal_for
from cartotheca.catalogue.documents import NewDocument
from cartotheca.db.models import ResourcePermission
from tests.api.test_authorization_matrix import KINDS, ROLES, SEES, detail_status, headers_for
from tests.factories import make_group, make_user

FAMILIES = ("document", "geostory")
COLLECTION = {"document": ("documents", "document"), "geostory": ("geostories", "geostory")}


def _principal(db, settings, user):
    anonymous_id, registered_id = internal_group_ids(db, settings)
    return principal_for(db, user, InternalGroups(anonymous_id, registered_id), "test")


def _make(db, settings, tmp_path, principal, family: str, kind: str):
    title = f"Matrix {family} {kind} title"
    if family == "document":
        staged = tmp_path / f"{family}-{kind}.txt"
        staged.write_text(f"content of the {kind} document\n")
        resource = documents.create_document(db, principal, settings, NewDocument(
            title=title, file=staged, file_name=f"matrix-{kind}-file.txt"))
    else:
        resource = geoapps.create_geoapp(db, principal, settings, {
            "name": f"matrix-{kind}-app", "title": title, "data": {"secret": f"data-{kind}"}},
            resource_type="geostory")
    return resource


@pytest.fixture
def world(db, settings, tmp_path):
    owner = make_user(db, "olga")
    member = make_user(db, "mario")
    manager = make_user(db, "mona")
    make_user(db, "rex")
    team = make_group(db, "Hydro Team", members=[member], managers=[manager])
    principal = _principal(db, settings, owner)
    anonymous_id, _ = internal_group_ids(db, settings)
    out = {}
    for family in FAMILIES:
        for kind in KINDS:
            resource = _make(db, settings, tmp_path, principal, family, kind)
            if kind != "public":
                db.execute(delete(ResourcePermission).where(ResourcePermission.resource_id == resource.id))
            if kind == "group_shared":
                perms.grant(db, resource.id, "view", group_id=team.id)
            if kind == "unpublished":
                perms.grant(db, resource.id, "download", group_id=anonymous_id)
                resource.is_published = False
                resource.group_id = team.id
            out[(family, kind)] = resource
        hub = _make(db, settings, tmp_path, principal, family, "hub")
        out[(family, "hub")] = hub
        linked_resources.set_internal_links(db, hub.id, [out[(family, k)].id for k in KINDS])
        for kind in KINDS:
            linked_resources.set_internal_links(db, out[(family, kind)].id, [hub.id])
    db.commit()
    return out


def hidden_markers(world, role: str) -> list[str]:
    markers = []
    for (_family, kind), resource in world.items():
        if kind != "hub" and role not in SEES[kind]:
            markers += [resource.title, resource.uuid, f"matrix-{kind}-", f"data-{kind}",
                        f"content of the {kind}"]
    return markers


def hidden_ids(world, role: str) -> list[int]:
    return [r.id for (_family, kind), r in world.items() if kind != "hub" and role not in SEES[kind]]


def assert_no_leak(response, world, role: str) -> None:
    text = response.text
    for marker in hidden_markers(world, role):
        assert marker not in text, f"{role} sees {marker!r} in {response.request.url}"
    for pk in hidden_ids(world, role):
        # resource records carry "pk" as text, linked items as a number followed by the title
        pattern = rf'"pk":"{pk}"|"pk":{pk},"title"|/(documents|geoapps|geostories|resources)/{pk}\b'
        assert not re.search(pattern, text), f"{role} sees id {pk} in {response.request.url}"


def download_status(kind: str, role: str) -> int:
    status = detail_status(kind, role)
    if status == 200 and kind == "group_shared" and role in ("member", "manager"):
        return 403  # the group may view, not download
    return status


@pytest.mark.parametrize("role", ROLES)
def test_lists_and_links(client, world, role):
    headers = headers_for(role)
    for path in ("/api/v2/documents?page_size=100", "/api/v2/geoapps?page_size=100",
                 "/api/v2/geostories?page_size=100", "/api/v2/resources?page_size=100",
                 "/api/v2/resources?search=Matrix", "/api/v2/resources/resource_types",
                 "/api/v2/documents?filter{title.icontains}=private",
                 "/api/v2/geoapps?search=matrix"):
        response = client.get(path, headers=headers)
        assert response.status_code == 200, (path, response.text)
        assert_no_leak(response, world, role)
    for family in FAMILIES:
        collection, _ = COLLECTION[family]
        listed = client.get(f"/api/v2/{collection}?page_size=100", headers=headers).json()[collection]
        expected = {r.title for (f, k), r in world.items()
                    if f == family and (k == "hub" or role in SEES[k])}
        assert {r["title"] for r in listed} == expected, (role, family)
        # the hub links to and is linked by every kind: each side lists only what the role sees
        hub = world[(family, "hub")]
        visible = {world[(family, k)].id for k in KINDS if role in SEES[k]}
        for prefix in ("resources", collection):
            response = client.get(f"/api/v2/{prefix}/{hub.id}/linked_resources", headers=headers)
            assert response.status_code == 200
            assert {i["pk"] for i in response.json()["linked_to"]} == visible
            assert {i["pk"] for i in response.json()["linked_by"]} == visible
            assert_no_leak(response, world, role)


def check_reads(client, world, family: str, kind: str, role: str) -> None:
    headers = headers_for(role)
    resource = world[(family, kind)]
    collection, singular = COLLECTION[family]
    seen = detail_status(kind, role)
    reads = {f"/api/v2/{collection}/{resource.id}": seen, f"/api/v2/resources/{resource.id}": seen,
             f"/api/v2/{collection}/{resource.id}/linked_resources": seen,
             f"/api/v2/resources/{resource.id}/linked_resources": seen,
             f"/api/v2/resources/{resource.id}/extra_metadata": seen,
             f"/api/v2/resources/{resource.id}/ratings": seen,
             f"/api/v2/{collection}/{resource.id}/owner": seen}
    if family == "document":
        reads[f"/documents/{resource.id}/download"] = download_status(kind, role)
        reads[f"/documents/{resource.id}/link"] = download_status(kind, role)
    else:
        reads[f"/api/v2/geoapps/{resource.id}"] = seen
    for path, expected in reads.items():
        response = client.get(path, headers=headers)
        assert response.status_code == expected, (role, kind, path, response.text)
        if expected != 200:
            assert resource.title not in response.text
        assert_no_leak(response, world, role)
    if family == "document" and download_status(kind, role) == 200:
        body = client.get(f"/documents/{resource.id}/download", headers=headers).content
        assert body == f"content of the {kind} document\n".encode()
    if seen == 200 and family == "geostory":
        record = client.get(f"/api/v2/{collection}/{resource.id}", headers=headers).json()[singular]
        assert record["data"] == {"secret": f"data-{kind}"}


def check_writes(client, world, family: str, kind: str, role: str) -> None:
    headers = headers_for(role)
    resource, hub = world[(family, kind)], world[(family, "hub")]
    collection, _ = COLLECTION[family]
    seen = detail_status(kind, role)
    manage = 401 if role == "anonymous" else (seen if seen != 200 else
                                              (200 if role in ("owner", "admin") else 403))
    writes = [
        ("patch", f"/api/v2/{collection}/{resource.id}", {"abstract": "changed"}),
        ("post", f"/api/v2/resources/{resource.id}/extra_metadata",
         [{"filter_header": "a", "field_name": "b", "field_label": "c", "field_value": "d"}]),
    ]
    for method, path, body in writes:
        response = client.request(method, path, headers=headers, json=body)
        assert response.status_code == manage, (role, kind, method, path, response.text)
        assert_no_leak(response, world, role)
    linking = client.post(f"/api/v2/resources/{resource.id}/linked_resources", headers=headers,
                          json={"target": [hub.id]})
    # the link already exists (internal), so even the owner's answer lists it as an error
    assert linking.status_code == (400 if manage == 200 else manage), (role, kind)
    rating = client.post(f"/api/v2/resources/{resource.id}/ratings", headers=headers,
                         json={"rating": 3})
    assert rating.status_code == (401 if role == "anonymous" else seen), (role, kind)
    if role not in ("owner", "admin"):
        # linking from the public hub is refused before the hidden target is even looked at
        towards = client.post(f"/api/v2/resources/{hub.id}/linked_resources", headers=headers,
                              json={"target": [resource.id]})
        assert towards.status_code == (401 if role == "anonymous" else 403)
        assert_no_leak(towards, world, role)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("kind", KINDS)
def test_items(client, world, kind, role):
    for family in FAMILIES:
        check_reads(client, world, family, kind, role)
        check_writes(client, world, family, kind, role)
