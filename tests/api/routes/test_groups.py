"""The groups collection: profiles only, visibility by access, writes by staff and managers."""

from sqlalchemy import select

from cartotheca.db.models import Group, GroupProfile, Resource
from tests.conftest import basic
from tests.factories import PASSWORD, make_group, make_resource, make_user


def _titles(body):
    return [g["title"] for g in body["group_profiles"]]


def test_list_shape_and_no_internal_groups(client, db):
    make_group(db, "Hydro Team")
    response = client.get("/api/v2/groups/")
    body = response.json()
    assert set(body) == {"links", "total", "page", "page_size", "group_profiles"}
    assert _titles(body) == ["Hydro Team"]
    record = body["group_profiles"][0]
    group = db.scalar(select(Group).where(Group.name == "hydro-team"))
    assert record["group"] == {"pk": group.id, "name": "hydro-team"}
    assert record["slug"] == "hydro-team" and record["access"] == "public"
    assert record["link"] == f"http://testserver/api/v2/groups/{record['pk']}"
    assert "anonymous" not in response.text and "registered-members" not in response.text


def test_private_groups_only_for_members_and_staff(client, db, admin_auth):
    ana, bob = make_user(db, "ana"), make_user(db, "bob")
    make_group(db, "Open")
    make_group(db, "Invite", access="public-invite")
    secret = make_group(db, "Secret", members=[ana], access="private")
    secret_pk = db.scalar(select(GroupProfile.id).where(GroupProfile.group_id == secret.id))
    assert _titles(client.get("/api/v2/groups").json()) == ["Invite", "Open"]
    assert _titles(client.get("/api/v2/groups", headers=basic("bob", PASSWORD)).json()) == \
        ["Invite", "Open"]
    assert _titles(client.get("/api/v2/groups", headers=basic("ana", PASSWORD)).json()) == \
        ["Invite", "Open", "Secret"]
    assert _titles(client.get("/api/v2/groups", headers=admin_auth).json()) == ["Invite", "Open", "Secret"]
    hidden = client.get(f"/api/v2/groups/{secret_pk}")
    assert hidden.status_code == 404 and "Secret" not in hidden.text
    assert client.get(f"/api/v2/groups/{secret_pk}", headers=basic("bob", PASSWORD)).status_code == 404
    shown = client.get(f"/api/v2/groups/{secret_pk}", headers=basic("ana", PASSWORD))
    assert shown.status_code == 200 and shown.json()["group_profile"]["title"] == "Secret"
    assert bob


def test_filters_search_and_sort(client, db):
    make_group(db, "Hydro Team")
    make_group(db, "Roads")
    assert _titles(client.get("/api/v2/groups?filter{slug}=roads").json()) == ["Roads"]
    assert _titles(client.get("/api/v2/groups?filter{title}=Hydro Team").json()) == ["Hydro Team"]
    assert _titles(client.get("/api/v2/groups?filter{title.icontains}=hyd").json()) == ["Hydro Team"]
    assert _titles(client.get("/api/v2/groups?search=road").json()) == ["Roads"]
    assert _titles(client.get("/api/v2/groups?sort[]=-title&sort_by=pk").json()) == ["Roads", "Hydro Team"]
    assert client.get("/api/v2/groups?filter{nosuch}=1").status_code == 400


def test_list_costs_constant_statements(client, db, count_statements):
    for i in range(50):
        group = Group(name=f"g{i:02d}")
        db.add(group)
        db.flush()
        db.add(GroupProfile(group_id=group.id, title=f"G {i:02d}", slug=f"g{i:02d}"))
    db.commit()
    with count_statements() as small:
        assert len(client.get("/api/v2/groups?page_size=5").json()["group_profiles"]) == 5
    with count_statements() as large:
        assert len(client.get("/api/v2/groups?page_size=50").json()["group_profiles"]) == 50
    assert small.value == large.value <= 3


def test_create_staff_only(client, db, admin_auth):
    make_user(db, "ana")
    body = {"title": "Hydro Team", "slug": "hydro-team", "description": "Water data"}
    assert client.post("/api/v2/groups", json=body).status_code == 401
    assert client.post("/api/v2/groups", headers=basic("ana", PASSWORD), json=body).status_code == 403
    created = client.post("/api/v2/groups", headers=admin_auth, json=body)
    assert created.status_code == 201
    record = created.json()["group_profile"]
    assert record["title"] == "Hydro Team" and record["description"] == "Water data"
    assert record["group"]["name"] == "hydro-team" and isinstance(record["pk"], int)
    again = client.post("/api/v2/groups", headers=admin_auth, json=body)
    assert again.status_code == 400
    no_title = client.post("/api/v2/groups", headers=admin_auth, json={"slug": "x"})
    assert no_title.status_code == 400
    bad_access = client.post("/api/v2/groups", headers=admin_auth,
                             json={"title": "Z", "access": "everyone"})
    assert bad_access.status_code == 400
    detail = client.get(f"/api/v2/groups/{record['pk']}")
    assert detail.json() == {"group_profile": record}


def test_patch_by_manager_put_and_delete_by_staff(client, db, admin_auth):
    ana, bob = make_user(db, "ana"), make_user(db, "bob")
    group = make_group(db, "Hydro Team", managers=[ana], members=[bob])
    pk = db.scalar(select(GroupProfile.id).where(GroupProfile.group_id == group.id))
    manager, member = basic("ana", PASSWORD), basic("bob", PASSWORD)
    patched = client.patch(f"/api/v2/groups/{pk}/", headers=manager,
                           json={"description": "Rivers and lakes", "keywords": ["Water"]})
    assert patched.status_code == 200
    assert patched.json()["group_profile"]["description"] == "Rivers and lakes"
    assert patched.json()["group_profile"]["keywords"] == ["water"]
    assert client.patch(f"/api/v2/groups/{pk}", headers=member, json={"title": "x"}).status_code == 403
    assert client.put(f"/api/v2/groups/{pk}", headers=manager, json={"title": "x"}).status_code == 403
    put = client.put(f"/api/v2/groups/{pk}", headers=admin_auth, json={"title": "Hydrology"})
    assert put.status_code == 200 and put.json()["group_profile"]["title"] == "Hydrology"
    assert client.request("DELETE", f"/api/v2/groups/{pk}/", headers=manager, json={}).status_code == 403
    deleted = client.request("DELETE", f"/api/v2/groups/{pk}/", headers=admin_auth, json={})
    assert deleted.status_code == 204
    assert client.get(f"/api/v2/groups/{pk}").status_code == 404
    assert db.scalar(select(Group.id).where(Group.id == group.id)) is None


def test_bulk_delete(client, db, admin_auth):
    ids = []
    for title in ("One", "Two"):
        group = make_group(db, title)
        ids.append(db.scalar(select(GroupProfile.id).where(GroupProfile.group_id == group.id)))
    response = client.request("DELETE", "/api/v2/groups", headers=admin_auth,
                              json=[{"id": i} for i in ids])
    assert response.status_code == 204
    assert client.get("/api/v2/groups").json()["total"] == 0


def test_members_and_managers(client, db, admin_auth):
    ana, bob, carla = make_user(db, "ana"), make_user(db, "bob"), make_user(db, "carla")
    group = make_group(db, "Hydro Team", managers=[ana], members=[bob])
    pk = db.scalar(select(GroupProfile.id).where(GroupProfile.group_id == group.id))
    members = client.get(f"/api/v2/groups/{pk}/members", headers=admin_auth)
    assert members.status_code == 200 and [u["username"] for u in members.json()] == ["ana", "bob"]
    managers = client.get(f"/api/v2/groups/{pk}/managers", headers=basic("ana", PASSWORD)).json()
    assert [u["username"] for u in managers] == ["ana"]
    # Member lists carry e-mail addresses: plain members and outsiders do not get them.
    assert client.get(f"/api/v2/groups/{pk}/members", headers=basic("bob", PASSWORD)).status_code == 403
    assert client.get(f"/api/v2/groups/{pk}/members", headers=basic("carla", PASSWORD)).status_code == 403
    assert client.get(f"/api/v2/groups/{pk}/members").status_code == 401
    assert carla


def test_group_resources(client, db, settings):
    ana = make_user(db, "ana")
    group = make_group(db, "Hydro Team", members=[ana])
    pk = db.scalar(select(GroupProfile.id).where(GroupProfile.group_id == group.id))
    make_resource(db, settings, ana, "In group", group=group)
    make_resource(db, settings, ana, "Private in group", group=group, public=False)
    make_resource(db, settings, ana, "Elsewhere")
    public = client.get(f"/api/v2/groups/{pk}/resources").json()
    assert set(public) == {"links", "total", "page", "page_size", "resources"}
    assert [r["title"] for r in public["resources"]] == ["In group"]
    mine = client.get(f"/api/v2/groups/{pk}/resources", headers=basic("ana", PASSWORD)).json()
    assert sorted(r["title"] for r in mine["resources"]) == ["In group", "Private in group"]
    assert db.scalar(select(Resource.id).where(Resource.title == "Elsewhere"))
