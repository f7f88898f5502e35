"""Remembered Basic credentials (``auth.VerifiedCredentials``)."""

from __future__ import annotations

import time

from cartotheca.catalogue.auth import VerifiedCredentials
from tests.factories import make_user


def test_credentials_in_use_stay_remembered_and_idle_ones_expire(db):
    user = make_user(db)
    credentials = VerifiedCredentials(ttl=0.3)
    credentials.remember(user, "secret")
    # Used more often than the ttl, they are never forgotten: no hash falls due for them.
    for _ in range(4):
        time.sleep(0.15)
        assert credentials.known(user, "secret")
        assert credentials.known_name(user.username, "secret")
    assert not credentials.known(user, "other")
    time.sleep(0.35)
    assert not credentials.known(user, "secret")


def test_a_password_change_forgets_them(db):
    user = make_user(db)
    credentials = VerifiedCredentials()
    credentials.remember(user, "secret")
    user.password = "another stored hash"
    assert not credentials.known(user, "secret")
