"""Sign-up, approval by staff and the e-mails each step sends, over a real SMTP server; who may
create accounts when sign-up is closed; inactive accounts have no way in."""

from __future__ import annotations

import base64
import time

from sqlalchemy import select

from cartotheca.catalogue import oauth
from cartotheca.db.models import Notice, User
from tests.catalogue.test_events import body_of, messages_to, notifying, wait_for  # noqa: F401 (a fixture)
from tests.conftest import basic
from tests.factories import PASSWORD, make_user

NEWBIE = {"username": "newbie", "password": "a-long-pass-9", "email": "newbie@example.org"}


def _staff(db) -> None:
    """Who hears of a request: active staff and superusers with an address, no one else."""
    db.execute(User.__table__.update().where(User.username == "admin").values(email="root@example.org"))
    db.commit()
    make_user(db, "editor", email="editor@example.org", is_staff=True)
    make_user(db, "chief", email="chief@example.org", is_superuser=True)
    make_user(db, "former", email="former@example.org", is_staff=True, is_active=False)
    make_user(db, "silent", is_staff=True)
    make_user(db, "plain", email="plain@example.org")


def test_signup_with_approval_end_to_end(notifying, db, admin_auth):  # noqa: F811
    client, mailbox = notifying(ACCOUNT_APPROVAL_REQUIRED=True)
    _staff(db)
    created = client.post("/account/signup", json=NEWBIE)
    assert created.status_code == 201 and created.json()["pending_approval"] is True

    staff = ["chief@example.org", "editor@example.org", "root@example.org"]
    wait_for(lambda: len(mailbox.messages) >= 3)
    time.sleep(0.2)
    assert mailbox.recipients() == staff
    user_id = db.scalar(select(User.id).where(User.username == "newbie"))
    for _, message in mailbox.messages:
        assert message["Subject"] == "New account request: newbie"
        body = body_of(message)
        assert "newbie (newbie@example.org) asked for an account on http://testserver/" in body
        assert f"http://testserver/api/v2/users/{user_id}" in body

    # Pending: no way in, neither a cookie session nor Basic credentials.
    assert client.post("/account/login", json=NEWBIE).status_code == 401
    assert client.get("/api/v2/users", headers=basic("newbie", NEWBIE["password"])).status_code == 401
    assert messages_to(mailbox, "newbie@example.org") == []

    # Only staff approve: the user's own PATCH of is_active is ignored.
    mine = client.patch(f"/api/v2/users/{user_id}", headers=basic("plain", PASSWORD),
                        json={"is_active": True})
    assert mine.status_code == 404
    approved = client.patch(f"/api/v2/users/{user_id}", headers=admin_auth, json={"is_active": True})
    assert approved.status_code == 200, approved.text
    (welcome,) = wait_for(lambda: messages_to(mailbox, "newbie@example.org"))
    assert welcome["Subject"] == "Your account has been approved"
    assert "your account on http://testserver/ has been approved" in body_of(welcome)
    assert client.post("/account/login", json=NEWBIE).status_code == 200
    assert len(mailbox.messages) == 4

    # Editing an already active account sends nothing more.
    again = client.patch(f"/api/v2/users/{user_id}", headers=admin_auth,
                         json={"is_active": True, "first_name": "New"})
    assert again.status_code == 200
    kinds = sorted(db.scalars(select(Notice.kind)))
    assert kinds == ["account_approved", "account_requested"]


def test_open_signup_without_approval_tells_no_one(notifying, db):  # noqa: F811
    client, mailbox = notifying()
    _staff(db)
    created = client.post("/account/signup", json=NEWBIE)
    assert created.status_code == 201 and created.json()["pending_approval"] is False
    assert client.post("/account/login", json=NEWBIE).status_code == 200
    assert db.scalar(select(Notice.id)) is None
    time.sleep(0.2)
    assert mailbox.messages == []


def test_closed_signup_only_staff_create_users(notifying, db, admin_auth):  # noqa: F811
    client, mailbox = notifying(ACCOUNT_OPEN_SIGNUP=False, ACCOUNT_APPROVAL_REQUIRED=True)
    make_user(db, "plain", email="plain@example.org")
    assert client.post("/account/signup", json=NEWBIE).status_code == 403
    assert client.post("/api/v2/users", headers=basic("plain", PASSWORD), json=NEWBIE).status_code == 403
    assert client.post("/api/v2/users", json=NEWBIE).status_code == 401
    assert db.scalar(select(User.id).where(User.username == "newbie")) is None

    made = client.post("/api/v2/users", headers=admin_auth, json=NEWBIE)
    assert made.status_code == 200, made.text
    user = db.scalar(select(User).where(User.username == "newbie"))
    # Made by staff: active at once, so nobody is asked to approve it.
    assert user.is_active is True and db.scalar(select(Notice.id)) is None
    assert client.post("/account/login", json=NEWBIE).status_code == 200


def test_a_deactivated_account_loses_its_tokens(notifying, db, admin_auth):  # noqa: F811
    client, _ = notifying()
    user = make_user(db, "ana")
    application, secret = oauth.create_application(db, name="cli", client_type="confidential",
                                                   grant_types=("password",), user=None)
    db.commit()
    raw = base64.b64encode(f"{application.client_id}:{secret}".encode()).decode()
    issued = client.post("/o/token", headers={"Authorization": f"Basic {raw}"},
                         data={"grant_type": "password", "username": "ana", "password": PASSWORD})
    assert issued.status_code == 200, issued.text
    bearer = {"Authorization": f"Bearer {issued.json()['access_token']}"}
    assert client.get("/api/v2/users", headers=bearer).json()["users"][0]["username"] == "ana"

    assert client.patch(f"/api/v2/users/{user.id}", headers=admin_auth,
                        json={"is_active": False}).status_code == 200
    refused = client.get("/api/v2/users", headers=bearer)
    # The token is no longer anyone's: the request is anonymous, which the users list refuses.
    assert refused.status_code == 401 and refused.json()["code"] == "not_authenticated"
    assert client.get("/o/userinfo", headers=bearer).status_code == 401
    again = client.post("/o/token", headers={"Authorization": f"Basic {raw}"},
                        data={"grant_type": "password", "username": "ana", "password": PASSWORD})
    assert again.status_code == 400
