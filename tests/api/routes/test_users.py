"""The users and owners collections: visibility, writes, deletion rules, ownership transfer."""

from fastapi.testclient import TestClient
from sqlalchemy import select

from cartotheca.db.models import GroupMember, Resource, User
from tests.conftest import basic
from tests.factories import PASSWORD, make_group, make_resource, make_user


def test_list_admin_sees_all_others_only_themselves(client, db, admin_auth):
    make_user(db, "ana", email="ana@example.org")
    make_user(db, "bob", email="bob@example.org")
    body = client.get("/api/v2/users", headers=admin_auth).json()
    assert set(body) == {"links", "total", "page", "page_size", "users"}
    assert [u["username"] for u in body["users"]] == ["admin", "ana", "bob"]
    mine = client.get("/api/v2/users/", headers=basic("ana", PASSWORD)).json()
    assert mine["total"] == 1 and [u["username"] for u in mine["users"]] == ["ana"]
    assert mine["users"][0]["perms"] == ["add_resource"]
    assert "bob@example.org" not in client.get("/api/v2/users", headers=basic("ana", PASSWORD)).text


def test_list_anonymous_is_401(client):
    response = client.get("/api/v2/users")
    assert response.status_code == 401
    assert response.json() == {"success": False, "code": "not_authenticated",
                               "errors": ["Authentication credentials were not provided."]}


def test_list_query_language(client, db, admin_auth):
    make_user(db, "ana", email="ana@example.org", first_name="Ana")
    make_user(db, "bob", email="bob@example.org", last_name="Rossi")
    by_name = client.get("/api/v2/users?filter{username}=ana", headers=admin_auth).json()
    assert [u["username"] for u in by_name["users"]] == ["ana"]
    by_mail = client.get("/api/v2/users?filter{email}=bob@example.org", headers=admin_auth).json()
    assert [u["username"] for u in by_mail["users"]] == ["bob"]
    searched = client.get("/api/v2/users?search=rossi", headers=admin_auth).json()
    assert [u["username"] for u in searched["users"]] == ["bob"]
    ordered = client.get("/api/v2/users?sort[]=-username&sort_by=pk", headers=admin_auth).json()
    assert [u["username"] for u in ordered["users"]] == ["bob", "ana", "admin"]
    bad = client.get("/api/v2/users?filter{password}=x", headers=admin_auth)
    assert bad.status_code == 400 and bad.json()["errors"][0] == "Invalid filter field: password"


def test_list_costs_constant_statements(client, db, admin_auth, count_statements):
    for i in range(50):
        db.add(User(username=f"bulk{i:02d}", email=f"bulk{i}@example.org"))
    db.commit()
    client.get("/api/v2/users?page_size=1", headers=admin_auth)  # warm the credential cache
    with count_statements() as small:
        assert client.get("/api/v2/users?page_size=5", headers=admin_auth).status_code == 200
    with count_statements() as large:
        body = client.get("/api/v2/users?page_size=50", headers=admin_auth).json()
    assert len(body["users"]) == 50
    assert small.value == large.value <= 5


def test_detail_self_admin_and_hidden_other(client, db, admin_auth):
    ana = make_user(db, "ana")
    bob = make_user(db, "bob")
    own = client.get(f"/api/v2/users/{ana.id}?page_size=80&page=1", headers=basic("ana", PASSWORD))
    assert own.status_code == 200 and own.json()["user"]["username"] == "ana"
    assert client.get(f"/api/v2/users/{bob.id}", headers=admin_auth).json()["user"]["pk"] == bob.id
    other = client.get(f"/api/v2/users/{bob.id}", headers=basic("ana", PASSWORD))
    assert other.status_code == 404 and "bob" not in other.text
    assert client.get("/api/v2/users/abc", headers=admin_auth).status_code == 404
    assert client.get(f"/api/v2/users/{ana.id}").status_code == 401


def test_create_by_staff_without_password(client, db, admin_auth):
    response = client.post("/api/v2/users", headers=admin_auth, json={
        "username": "carla", "email": "", "first_name": "", "last_name": "",
        "is_staff": True, "is_superuser": False})
    assert response.status_code == 200
    record = response.json()["user"]
    assert record["username"] == "carla" and record["is_staff"] is True
    assert isinstance(record["pk"], int)
    assert db.scalar(select(User.password).where(User.username == "carla")) is None
    duplicate = client.post("/api/v2/users", headers=admin_auth, json={"username": "carla"})
    assert duplicate.status_code == 400
    assert duplicate.json()["errors"] == ["A user with that username already exists."]
    maybe = client.post("/api/v2/users", headers=admin_auth, data={"username": "dora", "is_staff": "maybe"})
    assert maybe.status_code == 400 and "is_staff: must be a valid boolean." in maybe.text
    assert db.scalar(select(User.id).where(User.username == "dora")) is None


def test_create_duplicate_email_and_weak_password(client, db, admin_auth):
    make_user(db, "ana", email="ana@example.org")
    dup = client.post("/api/v2/users", headers=admin_auth,
                      json={"username": "ana2", "email": "ANA@example.org"})
    assert dup.status_code == 400
    assert dup.json()["errors"] == ["A user is already registered with that email"]
    assert client.post("/api/v2/users", headers=admin_auth,
                       json={"username": "x1", "email": ""}).status_code == 200
    assert client.post("/api/v2/users", headers=admin_auth,
                       json={"username": "x2", "email": ""}).status_code == 200
    weak = client.post("/api/v2/users", headers=admin_auth, json={"username": "x3", "password": "123"})
    assert weak.status_code == 400 and "too short" in weak.json()["errors"][0]


def test_create_by_non_staff_follows_open_signup(make_app, db):
    make_user(db, "ana")
    closed = TestClient(make_app(ACCOUNT_OPEN_SIGNUP=False))
    body = {"username": "newbie", "password": "a-long-pass-9", "is_staff": True}
    assert closed.post("/api/v2/users", headers=basic("ana", PASSWORD), json=body).status_code == 403
    assert closed.post("/api/v2/users", json=body).status_code == 401
    opened = TestClient(make_app(ACCOUNT_OPEN_SIGNUP=True, ACCOUNT_APPROVAL_REQUIRED=True))
    created = opened.post("/api/v2/users", json=body)
    assert created.status_code == 200 and created.json()["user"]["is_staff"] is False
    user = db.scalar(select(User).where(User.username == "newbie"))
    assert user.is_active is False and user.is_staff is False
    # Pending: cannot log in until staff approve.
    assert opened.get("/api/v2/users", headers=basic("newbie", "a-long-pass-9")).status_code == 401


def test_staff_approves_pending_user(client, db, admin_auth):
    pending = make_user(db, "pending", is_active=False)
    assert client.get("/api/v2/users", headers=basic("pending", PASSWORD)).status_code == 401
    response = client.patch(f"/api/v2/users/{pending.id}/", headers=admin_auth, json={"is_active": True})
    assert response.status_code == 200
    assert client.get("/api/v2/users", headers=basic("pending", PASSWORD)).status_code == 200


def test_patch_rules(client, db, admin_auth):
    ana = make_user(db, "ana")
    bob = make_user(db, "bob")
    me = basic("ana", PASSWORD)
    ok = client.patch(f"/api/v2/users/{ana.id}/", headers=me,
                      json={"first_name": "Ana", "is_staff": True, "is_superuser": True})
    assert ok.status_code == 200
    assert ok.json()["user"]["first_name"] == "Ana" and ok.json()["user"]["is_staff"] is False
    rename = client.patch(f"/api/v2/users/{ana.id}", headers=me, json={"username": "anna"})
    assert rename.status_code == 400 and rename.json()["errors"] == ["username cannot be updated"]
    assert client.patch(f"/api/v2/users/{bob.id}", headers=me, json={"first_name": "x"}).status_code == 404
    put = client.put(f"/api/v2/users/{bob.id}", headers=admin_auth, json={"last_name": "Bianchi"})
    assert put.status_code == 200 and put.json()["user"]["last_name"] == "Bianchi"
    assert put.json()["user"]["first_name"] == ""  # PUT is partial, like PATCH


def test_password_change_is_hashed_and_takes_effect(client, db):
    ana = make_user(db, "ana")
    response = client.patch(f"/api/v2/users/{ana.id}", headers=basic("ana", PASSWORD),
                            json={"password": "brand-new-pass-7"})
    assert response.status_code == 200
    db.expire_all()
    stored = db.scalar(select(User.password).where(User.id == ana.id))
    assert stored.startswith("$argon2") and "brand-new-pass-7" not in stored
    assert client.get("/api/v2/users", headers=basic("ana", PASSWORD)).status_code == 401
    assert client.get("/api/v2/users", headers=basic("ana", "brand-new-pass-7")).status_code == 200


def test_delete_checks_rules_first(client, db, settings, admin_auth):
    ana = make_user(db, "ana")
    make_resource(db, settings, ana, "Rivers")
    refused = client.delete(f"/api/v2/users/{ana.id}", headers=admin_auth)
    assert refused.status_code == 403
    assert refused.json()["errors"][0].startswith("One or more validation rules are violated:")
    bob = make_user(db, "bob")
    done = client.request("DELETE", f"/api/v2/users/{bob.id}", headers=admin_auth, json={})
    assert done.status_code == 200 and done.json() == "User deleted sucessfully"
    assert client.get(f"/api/v2/users/{bob.id}", headers=admin_auth).status_code == 404


def test_delete_with_custom_rule_and_by_others(make_app, db):
    app = make_app(USER_DELETION_RULES=["tests.api.routes.test_users.rule_no_carla"])
    client = TestClient(app)
    carla = make_user(db, "carla")
    dan = make_user(db, "dan")
    admin = basic("admin", "admin-pass")
    refused = client.delete(f"/api/v2/users/{carla.id}", headers=admin)
    assert refused.status_code == 403 and "carla is protected" in refused.json()["errors"][0]
    assert client.delete(f"/api/v2/users/{dan.id}", headers=basic("carla", PASSWORD)).status_code == 404
    assert client.delete(f"/api/v2/users/{dan.id}", headers=basic("dan", PASSWORD)).status_code == 200


def rule_no_carla(session, user):
    return "carla is protected" if user.username == "carla" else None


def test_bulk_delete(client, db, admin_auth):
    ana, bob = make_user(db, "ana"), make_user(db, "bob")
    assert client.request("DELETE", "/api/v2/users", headers=basic("ana", PASSWORD),
                          json=[{"id": bob.id}]).status_code == 403
    response = client.request("DELETE", "/api/v2/users", headers=admin_auth,
                              json={"users": [{"id": ana.id}, {"id": bob.id}]})
    assert response.status_code == 204
    assert db.scalar(select(User.id).where(User.username.in_(["ana", "bob"]))) is None


def test_user_groups_and_resources(client, db, settings, admin_auth):
    ana = make_user(db, "ana")
    bob = make_user(db, "bob")
    make_group(db, "Hydro Team", members=[ana])
    make_group(db, "Roads", managers=[ana], access="private")
    make_group(db, "Other", members=[bob])
    groups = client.get(f"/api/v2/users/{ana.id}/groups", headers=basic("ana", PASSWORD)).json()
    assert [g["title"] for g in groups] == ["Hydro Team", "Roads"]
    assert set(groups[0]) == {"pk", "title", "group", "slug", "logo", "description", "email",
                              "keywords", "access", "categories", "link"}
    assert client.get(f"/api/v2/users/{bob.id}/groups", headers=basic("ana", PASSWORD)).status_code == 404
    make_resource(db, settings, ana, "Ana public")
    make_resource(db, settings, ana, "Ana private", public=False)
    make_resource(db, settings, bob, "Bob public")
    own = client.get(f"/api/v2/users/{ana.id}/resources", headers=basic("ana", PASSWORD)).json()
    assert set(own) == {"links", "total", "page", "page_size", "resources"}
    assert sorted(r["title"] for r in own["resources"]) == ["Ana private", "Ana public"]
    seen = client.get(f"/api/v2/users/{ana.id}/resources", headers=admin_auth).json()
    assert seen["total"] == 2


def test_transfer_resources_both_body_forms(client, db, settings, admin_auth):
    ana, bob = make_user(db, "ana"), make_user(db, "bob")
    r1 = make_resource(db, settings, ana, "One")
    r2 = make_resource(db, settings, ana, "Two")
    gn5 = client.post(f"/api/v2/users/{ana.id}/transfer_resources", headers=admin_auth,
                      json={"newOwner": bob.id, "currentOwner": ana.id, "resources": [r1.id]})
    assert gn5.status_code == 200 and gn5.json() == "Resources transfered successfully"
    db.expire_all()
    assert db.get(Resource, r1.id).owner_id == bob.id and db.get(Resource, r2.id).owner_id == ana.id
    gn4 = client.post(f"/api/v2/users/{ana.id}/transfer_resources", headers=admin_auth,
                      json={"owner": "DEFAULT"})
    assert gn4.status_code == 200
    db.expire_all()
    admin_id = db.scalar(select(User.id).where(User.username == "admin"))
    assert db.get(Resource, r2.id).owner_id == admin_id
    self_move = client.post(f"/api/v2/users/{bob.id}/transfer_resources", headers=admin_auth,
                            json={"owner": bob.id})
    assert self_move.status_code == 400 and self_move.json()["errors"] == ["Cannot reassign to self"]
    assert client.post(f"/api/v2/users/{bob.id}/transfer_resources", headers=admin_auth,
                       json={"owner": 999999}).status_code == 404
    mismatch = client.post(f"/api/v2/users/{bob.id}/transfer_resources", headers=admin_auth,
                           json={"newOwner": ana.id, "currentOwner": ana.id, "resources": []})
    assert mismatch.status_code == 400
    forbidden = client.post(f"/api/v2/users/{bob.id}/transfer_resources",
                            headers=basic("bob", PASSWORD), json={"owner": ana.id})
    assert forbidden.status_code == 403
    db.expire_all()
    assert db.get(Resource, r1.id).owner_id == bob.id


def test_remove_from_group_manager(client, db, admin_auth):
    ana = make_user(db, "ana")
    make_group(db, "Hydro Team", managers=[ana])
    make_group(db, "Roads", managers=[ana])
    make_group(db, "Other", members=[ana])
    pids = {g["title"]: g["pk"] for g in client.get("/api/v2/groups", headers=admin_auth).json()[
        "group_profiles"]}
    url = f"/api/v2/users/{ana.id}/remove_from_group_manager"
    empty = client.post(url, headers=admin_auth, json={"groups": []})
    assert empty.status_code == 400 and empty.json()["errors"] == ["No groups IDs were provided"]
    wrong = client.post(url, headers=admin_auth, json={"groups": [pids["Hydro Team"], pids["Other"]]})
    assert wrong.status_code == 400 and "not manager" in wrong.json()["errors"][0]
    ok = client.post(url, headers=admin_auth, json={"groups": [pids["Hydro Team"]]})
    assert ok.status_code == 200
    assert ok.json() == {"success": "User removed as a group manager from : Hydro Team"}
    rest = client.post(url, headers=basic("ana", PASSWORD), json={"groups": "ALL"})
    assert rest.json() == {"success": "User removed as a group manager from : Roads"}
    roles = set(db.scalars(select(GroupMember.role).where(GroupMember.user_id == ana.id)))
    assert roles == {"member"}


def test_owners_only_with_visible_resources(client, db, settings, admin_auth):
    ana, bob, carla = make_user(db, "ana"), make_user(db, "bob"), make_user(db, "carla")
    make_resource(db, settings, ana, "A1")
    make_resource(db, settings, ana, "A2", resource_type="map")
    make_resource(db, settings, bob, "Hidden", public=False)
    anonymous = client.get("/api/v2/owners").json()
    assert set(anonymous) == {"links", "total", "page", "page_size", "owners"}
    assert [(o["username"], o["count"]) for o in anonymous["owners"]] == [("ana", 2)]
    assert "email" not in anonymous["owners"][0] and anonymous["owners"][0]["perms"] == ["add_resource"]
    admin = client.get("/api/v2/owners", headers=admin_auth).json()
    assert [(o["username"], o["count"]) for o in admin["owners"]] == [("ana", 2), ("bob", 1)]
    maps = client.get("/api/v2/owners?type=map").json()
    assert [(o["username"], o["count"]) for o in maps["owners"]] == [("ana", 1)]
    detail = client.get(f"/api/v2/owners/{ana.id}/")
    assert detail.status_code == 200 and detail.json()["owners"]["count"] == 2
    assert client.get(f"/api/v2/owners/{bob.id}").status_code == 404
    assert client.get(f"/api/v2/owners/{carla.id}", headers=admin_auth).status_code == 404
    assert client.get("/api/v2/owners?filter{email}=x").status_code == 400
