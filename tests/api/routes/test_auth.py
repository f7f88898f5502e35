"""OAuth2 tokens, userinfo, revocation, cookie sessions, sign-up and lockdown."""

import base64

from fastapi.testclient import TestClient
from sqlalchemy import select

from cartotheca.catalogue import oauth
from cartotheca.db.models import AccessToken, User, WebSession
from tests.conftest import basic
from tests.factories import PASSWORD, make_group, make_resource, make_user


def _app(db, *, client_type="confidential", grants=("password",), user=None):
    app, secret = oauth.create_application(db, name="cli", client_type=client_type,
                                           grant_types=grants, user=user)
    db.commit()
    return app, secret


def _client_basic(app, secret):
    raw = base64.b64encode(f"{app.client_id}:{secret}".encode()).decode()
    return {"Authorization": f"Basic {raw}"}


def test_password_grant_with_basic_client_auth(client, db, settings):
    make_user(db, "ana", first_name="Ana", last_name="Rossi", email="ana@example.org")
    app, secret = _app(db)
    response = client.post("/o/token/", headers=_client_basic(app, secret),
                           data={"grant_type": "password", "username": "ana", "password": PASSWORD})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == settings.ACCESS_TOKEN_EXPIRE_SECONDS
    assert body["scope"] == "openid read write" and body["refresh_token"]
    # Only a digest is stored; the token works as a Bearer credential.
    assert db.scalar(select(AccessToken.id).where(AccessToken.token_hash == body["access_token"])) is None
    me = client.get("/api/v2/users", headers={"Authorization": f"Bearer {body['access_token']}"})
    assert me.status_code == 200 and me.json()["users"][0]["username"] == "ana"


def test_password_grant_with_form_client_auth_and_errors(client, db):
    make_user(db, "ana")
    app, secret = _app(db)
    form = {"grant_type": "password", "username": "ana", "password": PASSWORD,
            "client_id": app.client_id, "client_secret": secret}
    assert client.post("/o/token", data=form).status_code == 200
    wrong = client.post("/o/token", data={**form, "password": "nope-nope"})
    assert wrong.status_code == 400
    assert wrong.json() == {"error": "invalid_grant", "error_description": "Invalid credentials given."}
    bad_client = client.post("/o/token", data={**form, "client_secret": "wrong"})
    assert bad_client.status_code == 401 and bad_client.json()["error"] == "invalid_client"
    unknown = client.post("/o/token", data={**form, "grant_type": "magic"})
    assert unknown.status_code == 400 and unknown.json()["error"] == "unsupported_grant_type"
    not_allowed = client.post("/o/token", data={**form, "grant_type": "client_credentials"})
    assert not_allowed.status_code == 400 and not_allowed.json()["error"] == "unauthorized_client"
    bad_scope = client.post("/o/token", data={**form, "scope": "admin"})
    assert bad_scope.status_code == 400 and bad_scope.json()["error"] == "invalid_scope"


def test_inactive_user_gets_no_token(client, db):
    make_user(db, "ana", is_active=False)
    app, secret = _app(db)
    response = client.post("/o/token", headers=_client_basic(app, secret),
                           data={"grant_type": "password", "username": "ana", "password": PASSWORD})
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"


def test_public_client_password_grant(client, db):
    make_user(db, "ana")
    app, secret = _app(db, client_type="public")
    assert secret is None
    response = client.post("/o/token", data={"grant_type": "password", "username": "ana",
                                             "password": PASSWORD, "client_id": app.client_id})
    assert response.status_code == 200


def test_client_credentials_acts_for_the_application_owner(client, db):
    ana = make_user(db, "ana")
    app, secret = _app(db, grants=("client_credentials",), user=ana)
    response = client.post("/o/token", headers=_client_basic(app, secret),
                           data={"grant_type": "client_credentials"})
    assert response.status_code == 200 and "refresh_token" not in response.json()
    token = response.json()["access_token"]
    info = client.get("/o/userinfo/", headers={"Authorization": f"Bearer {token}"})
    assert info.json()["preferred_username"] == "ana"


def test_refresh_and_revoke(client, db):
    make_user(db, "ana")
    app, secret = _app(db)
    auth = _client_basic(app, secret)
    first = client.post("/o/token", headers=auth, data={"grant_type": "password", "username": "ana",
                                                         "password": PASSWORD}).json()
    second = client.post("/o/token", headers=auth, data={"grant_type": "refresh_token",
                                                          "refresh_token": first["refresh_token"]})
    assert second.status_code == 200
    fresh = second.json()["access_token"]
    # The refreshed token replaces the old one.
    assert client.get("/o/userinfo", headers={"Authorization": f"Bearer {first['access_token']}"}
                      ).status_code == 401
    bearer = {"Authorization": f"Bearer {fresh}"}
    assert client.get("/o/userinfo", headers=bearer).status_code == 200
    revoked = client.post("/o/revoke_token/", headers=auth, data={"token": fresh})
    assert revoked.status_code == 200
    assert client.get("/o/userinfo", headers=bearer).status_code == 401
    anonymous = client.post("/o/revoke_token", data={"token": fresh})
    assert anonymous.status_code == 401 and anonymous.json()["error"] == "invalid_client"


def test_userinfo_claims(client, db):
    ana = make_user(db, "ana", first_name="Ana", last_name="Rossi", email="ana@example.org")
    make_group(db, "Hydro Team", members=[ana])
    app, secret = _app(db)
    token = client.post("/o/token", headers=_client_basic(app, secret),
                        data={"grant_type": "password", "username": "ana", "password": PASSWORD}
                        ).json()["access_token"]
    body = client.get("/o/userinfo", headers={"Authorization": f"Bearer {token}"}).json()
    assert body == {"sub": str(ana.id), "name": "Ana Rossi", "given_name": "Ana",
                    "family_name": "Rossi", "email": "ana@example.org",
                    "preferred_username": "ana", "groups": ["registered-members", "hydro-team"]}
    admin = client.get("/o/userinfo", headers=basic("admin", "admin-pass")).json()
    assert "admin" in admin["groups"]


def test_userinfo_anonymous_and_invalid_token(client):
    for headers in ({}, {"Authorization": "Bearer not-a-token"}):
        response = client.get("/o/userinfo/", headers=headers)
        assert response.status_code == 401
        assert response.json()["error"] == "invalid_token"
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_login_session_and_csrf(client, db):
    ana = make_user(db, "ana")
    bad = client.post("/account/login", data={"username": "ana", "password": "wrong-one"})
    assert bad.status_code == 401 and "cartotheca_session" not in bad.cookies
    response = client.post("/account/login", data={"username": "ana", "password": PASSWORD})
    assert response.status_code == 200 and response.json()["user"]["username"] == "ana"
    cookies = response.headers.get_list("set-cookie")
    session_cookie = next(c for c in cookies if c.startswith("cartotheca_session="))
    assert "HttpOnly" in session_cookie and "samesite=lax" in session_cookie.lower()
    csrf = response.cookies["csrftoken"]
    assert client.get("/api/v2/users").json()["users"][0]["username"] == "ana"
    denied = client.patch(f"/api/v2/users/{ana.id}", json={"first_name": "A"})
    assert denied.status_code == 403 and "CSRF" in denied.json()["errors"][0]
    allowed = client.patch(f"/api/v2/users/{ana.id}", json={"first_name": "A"},
                           headers={"X-CSRFToken": csrf})
    assert allowed.status_code == 200
    assert client.post("/account/logout").status_code == 403  # logout needs the token too
    assert client.post("/account/logout", headers={"X-CSRFToken": csrf}).status_code == 200
    assert db.scalar(select(WebSession.id).where(WebSession.user_id == ana.id)) is None
    client.cookies.clear()
    assert client.get("/api/v2/users").status_code == 401


def test_login_json_and_inactive(client, db):
    make_user(db, "ana")
    make_user(db, "idle", is_active=False)
    assert client.post("/account/login", json={"username": "ana", "password": PASSWORD}).status_code == 200
    inactive = client.post("/account/login", json={"username": "idle", "password": PASSWORD})
    assert inactive.status_code == 401


def test_signup_open_closed_and_approval(make_app, db):
    body = {"username": "newbie", "password": "a-long-pass-9", "email": "n@example.org"}
    closed = TestClient(make_app(ACCOUNT_OPEN_SIGNUP=False))
    assert closed.post("/account/signup", json=body).status_code == 403
    approval = TestClient(make_app(ACCOUNT_APPROVAL_REQUIRED=True))
    created = approval.post("/account/signup", data=body)
    assert created.status_code == 201 and created.json()["pending_approval"] is True
    assert approval.post("/account/login", json=body).status_code == 401
    user = db.scalar(select(User).where(User.username == "newbie"))
    assert user.is_active is False
    admin = basic("admin", "admin-pass")
    assert approval.patch(f"/api/v2/users/{user.id}", headers=admin,
                          json={"is_active": True}).status_code == 200
    assert approval.post("/account/login", json=body).status_code == 200
    duplicate = approval.post("/account/signup", json={**body, "username": "other"})
    assert duplicate.status_code == 400


def test_lockdown(make_app, db):
    owner = make_user(db, "ana")
    app = make_app(LOCKDOWN_GEONODE=True,
                   AUTH_EXEMPT_URLS=[r"^/o/.*", r"^/account/.*", r"^/api/v2/groups"])
    make_resource(db, app.state.cartotheca.settings, owner, "Rivers")
    client = TestClient(app)
    locked = client.get("/api/v2/resources")
    assert locked.status_code == 401 and "Rivers" not in locked.text
    assert locked.json()["code"] == "not_authenticated"
    assert client.get("/api/v2/owners").status_code == 401
    assert client.get("/api/v2/groups").status_code == 200
    assert client.get("/o/userinfo").status_code == 401  # exempt, but still needs a token
    opened = client.get("/api/v2/resources", headers=basic("ana", PASSWORD))
    assert opened.status_code == 200 and opened.json()["resources"][0]["title"] == "Rivers"
    assert client.post("/account/login", json={"username": "ana", "password": PASSWORD}).status_code == 200
    assert client.get("/api/v2/resources").status_code == 200  # the session cookie counts
