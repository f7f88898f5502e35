"""Password reset by e-mail: request, the mailed one-time link, the new password (real SMTP)."""

import datetime as dt
import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from cartotheca.catalogue import password_reset
from cartotheca.catalogue.auth import digest
from cartotheca.db.models import AccessToken, PasswordResetToken, WebSession
from tests.conftest import basic
from tests.factories import PASSWORD, make_user

NEW_PASSWORD = "a-fresh-Secret-42"
KEY_IN_LINK = re.compile(r"http://testserver/account/password/reset/key/([A-Za-z0-9_-]+)")


@pytest.fixture
def mailing(make_app, smtp_server):  # noqa: F811
    """``(client, mailbox)``: an app sending through a real SMTP receiver."""
    mailbox, port = smtp_server
    app = make_app(EMAIL_HOST="127.0.0.1", EMAIL_PORT=port, DEFAULT_FROM_EMAIL="site@example.org")
    with TestClient(app) as client:
        yield client, mailbox


def _text(message) -> str:
    return message.get_payload(decode=True).decode()


def _keys_in(mailbox) -> list[str]:
    return [KEY_IN_LINK.search(_text(message)).group(1) for _rcpt, message in mailbox.messages]


def _login(client, password):
    return client.post("/account/login", json={"username": "ana", "password": password})


def test_reset_by_mail_sets_the_password_once_and_ends_other_ways_in(mailing, db):
    client, mailbox = mailing
    ana = make_user(db, "ana", email="Ana@Example.org")
    assert _login(client, PASSWORD).status_code == 200
    client.cookies.clear()
    assert db.scalar(select(WebSession.id).where(WebSession.user_id == ana.id)) is not None
    db.add(AccessToken(token_hash=digest("ana-token"), user_id=ana.id, scope="read",
                       expires=dt.datetime(2100, 1, 1)))
    db.commit()

    answer = client.post("/account/password/reset", json={"email": "ana@example.org"})
    assert answer.status_code == 200 and answer.json() == {"detail": password_reset.REQUESTED}
    assert mailbox.recipients() == ["Ana@Example.org"]
    message = mailbox.messages[0][1]
    assert message["Subject"] == "Set a new password" and message["From"] == "site@example.org"
    assert '"ana"' in _text(message) and "within 3 days" in _text(message)
    [key] = _keys_in(mailbox)
    # Only a digest is kept.
    stored = db.scalars(select(PasswordResetToken.key_hash)).all()
    assert stored == [digest(key)] and key not in stored

    check = client.post("/account/password/reset/check", json={"key": key})
    assert check.status_code == 200 and check.json() == {"username": "ana"}
    weak = client.post("/account/password/reset/key", json={"key": key, "password": "123"})
    assert weak.status_code == 400 and "too short" in weak.json()["errors"][0]
    done = client.post("/account/password/reset/key", json={"key": key, "password": NEW_PASSWORD})
    assert done.status_code == 200, done.text

    assert _login(client, PASSWORD).status_code == 401
    assert _login(client, NEW_PASSWORD).status_code == 200
    # The sessions and tokens from before the change are gone; the key is spent.
    db.expire_all()
    assert len(db.scalars(select(WebSession.id).where(WebSession.user_id == ana.id)).all()) == 1
    assert db.scalar(select(AccessToken.id).where(AccessToken.user_id == ana.id)) is None
    again = client.post("/account/password/reset/key", json={"key": key, "password": "another-Secret-7"})
    assert again.status_code == 400 and again.json()["errors"] == [password_reset.INVALID_KEY]
    assert client.post("/account/password/reset/check", json={"key": key}).status_code == 400


def test_unknown_address_gets_the_same_answer_and_no_mail(mailing, db):
    client, mailbox = mailing
    make_user(db, "ana", email="ana@example.org")
    known = client.post("/account/password/reset", json={"email": "ana@example.org"})
    unknown = client.post("/account/password/reset", json={"email": "nobody@example.org"})
    assert (unknown.status_code, unknown.json()) == (known.status_code, known.json())
    assert mailbox.recipients() == ["ana@example.org"]
    assert len(db.scalars(select(PasswordResetToken.id)).all()) == 1
    make_user(db, "idle", email="idle@example.org", is_active=False)
    inactive = client.post("/account/password/reset", json={"email": "idle@example.org"})
    assert inactive.json() == known.json() and mailbox.recipients() == ["ana@example.org"]


def test_bad_requests_are_refused_in_words(mailing):
    client, _mailbox = mailing
    for body in ({}, {"email": ""}, {"email": "not-an-address"}, {"email": 5}):
        response = client.post("/account/password/reset", json=body)
        assert response.status_code == 400 and "email" in response.json()["errors"][0], body
    assert client.post("/account/password/reset", json=["x"]).status_code == 400
    for key in ("", "x" * 500, "no-such-key", None):
        response = client.post("/account/password/reset/key", json={"key": key, "password": NEW_PASSWORD})
        assert response.status_code == 400 and response.json()["errors"] == [password_reset.INVALID_KEY]


def test_an_expired_key_is_refused(mailing, db):
    client, mailbox = mailing
    make_user(db, "ana", email="ana@example.org")
    client.post("/account/password/reset", json={"email": "ana@example.org"})
    [key] = _keys_in(mailbox)
    row = db.scalar(select(PasswordResetToken))
    assert abs((row.expires - row.created).total_seconds() - 259200) < 5
    db.execute(update(PasswordResetToken).values(expires=dt.datetime(2000, 1, 1)))
    db.commit()
    refused = client.post("/account/password/reset/key", json={"key": key, "password": NEW_PASSWORD})
    assert refused.status_code == 400 and refused.json()["errors"] == [password_reset.INVALID_KEY]
    assert _login(client, PASSWORD).status_code == 200


def test_a_password_change_voids_the_keys(mailing, db, admin_auth):
    client, mailbox = mailing
    ana = make_user(db, "ana", email="ana@example.org")
    client.post("/account/password/reset", json={"email": "ana@example.org"})
    [key] = _keys_in(mailbox)
    changed = client.patch(f"/api/v2/users/{ana.id}", json={"password": NEW_PASSWORD},
                           headers=basic("ana", PASSWORD))
    assert changed.status_code == 200, changed.text
    refused = client.post("/account/password/reset/key", json={"key": key, "password": "another-Secret-7"})
    assert refused.status_code == 400
    assert client.get("/api/v2/users", headers=basic("ana", NEW_PASSWORD)).status_code == 200


def test_requests_are_throttled_apart_from_logins(make_app, smtp_server, db):  # noqa: F811
    mailbox, port = smtp_server
    make_user(db, "ana", email="ana@example.org")
    app = make_app(EMAIL_HOST="127.0.0.1", EMAIL_PORT=port, AXES_FAILURE_LIMIT=2)
    with TestClient(app) as client:
        for address in ("ana@example.org", "nobody@example.org"):
            assert client.post("/account/password/reset", json={"email": address}).status_code == 200
        throttled = client.post("/account/password/reset", json={"email": "other@example.org"})
        assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) > 0
        assert mailbox.recipients() == ["ana@example.org"]
        # The same address may still log in: the requests are counted apart.
        assert _login(client, PASSWORD).status_code == 200


def test_without_the_login_throttle_keys_are_still_issued(make_app, smtp_server, db):  # noqa: F811
    mailbox, port = smtp_server
    make_user(db, "ana", email="ana@example.org")
    app = make_app(EMAIL_HOST="127.0.0.1", EMAIL_PORT=port, AXES_ENABLED=False, PASSWORD_RESET_TIMEOUT=3600)
    with TestClient(app) as client:
        for _ in range(4):
            answer = client.post("/account/password/reset", json={"email": "ana@example.org"})
            assert answer.status_code == 200
        assert "within 60 minutes" in _text(mailbox.messages[0][1])
        keys = _keys_in(mailbox)
        assert len(keys) == 4
        done = client.post("/account/password/reset/key", json={"key": keys[2], "password": NEW_PASSWORD})
        assert done.status_code == 200
        # The others of the account are void with the change.
        assert client.post("/account/password/reset/check", json={"key": keys[3]}).status_code == 400
        assert _login(client, NEW_PASSWORD).status_code == 200
