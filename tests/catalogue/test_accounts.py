"""Domain rules of accounts, groups and OAuth applications, called without HTTP."""

import pytest
from sqlalchemy import select

from cartotheca.catalogue import accounts, groups, oauth
from cartotheca.catalogue.auth import Principal, check_password, issue_token, open_web_session
from cartotheca.catalogue.query import ListContext
from cartotheca.db.models import AccessToken, GroupMember, OAuthApplication, User, WebSession
from cartotheca.errors import Conflict, InvalidInput, NotAuthenticated, NotFound, PermissionDenied
from tests.factories import make_group, make_resource, make_user


def _principal(db, user):
    rows = db.execute(select(GroupMember.group_id, GroupMember.role)
                      .where(GroupMember.user_id == user.id)).all()
    return Principal(user, frozenset(g for g, _ in rows),
                     managed_group_ids=frozenset(g for g, r in rows if r == "manager"),
                     member_group_ids=frozenset(g for g, _ in rows))


ANONYMOUS = Principal(None, frozenset())


@pytest.mark.parametrize("password,problem", [
    ("short", "too short"), ("1234567890", "entirely numeric"), ("xx-carla-xx", "too similar"),
])
def test_validate_password_rejects(password, problem):
    with pytest.raises(InvalidInput) as info:
        accounts.validate_password(password, ("carla", ""))
    assert problem in info.value.message


def test_register_user_rules(db, settings):
    admin = db.scalar(select(User).where(User.username == "admin"))
    staff = _principal(db, admin)
    made = accounts.register_user(db, staff, settings,
                                  {"username": "boss", "is_staff": True, "is_superuser": True})
    assert made.is_staff and made.is_superuser and made.password is None
    mere_staff = _principal(db, make_user(db, "helper", is_staff=True))
    promoted = accounts.register_user(db, mere_staff, settings,
                                      {"username": "sneaky", "is_superuser": True, "is_staff": True})
    assert promoted.is_staff and not promoted.is_superuser
    with pytest.raises(InvalidInput):  # self sign-up needs a password
        accounts.register_user(db, ANONYMOUS, settings, {"username": "nopass"})
    closed = settings.model_copy(update={"ACCOUNT_OPEN_SIGNUP": False})
    with pytest.raises(NotAuthenticated):
        accounts.register_user(db, ANONYMOUS, closed, {"username": "x", "password": "long-enough-1"})
    with pytest.raises(PermissionDenied):
        accounts.signup(db, closed, {"username": "x", "password": "long-enough-1"})
    required = settings.model_copy(update={"ACCOUNT_EMAIL_REQUIRED": True})
    with pytest.raises(InvalidInput):
        accounts.register_user(db, staff, required, {"username": "nomail"})
    with pytest.raises(InvalidInput):
        accounts.register_user(db, staff, settings, {"username": "bad name!"})
    db.rollback()


def test_staff_cannot_take_over_a_superuser(db, settings):
    admin = db.scalar(select(User).where(User.username == "admin"))
    helper = _principal(db, make_user(db, "helper", is_staff=True))
    with pytest.raises(PermissionDenied):
        accounts.update_user(db, helper, settings, admin, {"password": "taken-over-1"})
    with pytest.raises(PermissionDenied):
        accounts.delete_users(db, helper, settings.model_copy(update={"USER_DELETION_RULES": []}),
                              [admin])
    db.rollback()


def test_password_change_ends_sessions_and_tokens(db, settings):
    ana = make_user(db, "ana")
    issue_token(db, ana, application_id=None, scope="read", lifetime=60)
    open_web_session(db, ana, 60)
    db.commit()
    accounts.update_user(db, _principal(db, ana), settings, ana, {"password": "another-pass-2"})
    db.commit()
    assert check_password(ana.password, "another-pass-2")
    assert db.scalar(select(AccessToken.id).where(AccessToken.user_id == ana.id)) is None
    assert db.scalar(select(WebSession.id).where(WebSession.user_id == ana.id)) is None


def test_deletion_rules_are_loaded_from_settings(db, settings):
    assert accounts.deletion_rules(settings) == [accounts.rule_user_owns_no_resources]
    broken = settings.model_copy(update={"USER_DELETION_RULES": ["cartotheca.nowhere.rule"]})
    with pytest.raises(RuntimeError):
        accounts.deletion_rules(broken)


def test_owner_cannot_be_deleted_even_without_rules(db, settings):
    ana = make_user(db, "ana")
    make_resource(db, settings, ana)
    admin = _principal(db, db.scalar(select(User).where(User.username == "admin")))
    no_rules = settings.model_copy(update={"USER_DELETION_RULES": []})
    with pytest.raises(Conflict):
        accounts.delete_users(db, admin, no_rules, [ana])
    db.rollback()


def test_remove_from_group_manager_is_all_or_nothing(db, settings):
    ana = make_user(db, "ana")
    hydro = make_group(db, "Hydro", managers=[ana])
    other = make_group(db, "Other", members=[ana])
    admin = _principal(db, db.scalar(select(User).where(User.username == "admin")))
    listing = groups.list_groups(_ctx(db, admin, settings))
    pks = {p.group_id: p.id for p in listing.rows}
    with pytest.raises(InvalidInput):
        accounts.remove_from_group_manager(db, admin, ana, {"groups": [pks[hydro.id], pks[other.id]]})
    db.rollback()
    role = db.scalar(select(GroupMember.role).where(GroupMember.group_id == hydro.id))
    assert role == "manager"
    outsider = _principal(db, make_user(db, "bob"))
    with pytest.raises(NotFound):
        accounts.remove_from_group_manager(db, outsider, ana, {"groups": "ALL"})


def _ctx(db, principal, settings):
    return ListContext(db, principal, settings, {}, [])


def new_group(data: dict) -> groups.GroupFields:
    return groups.GroupFields.model_validate(data, context={"new": True})


def test_group_slugs_are_normalised_and_unique(db):
    admin = _principal(db, db.scalar(select(User).where(User.username == "admin")))
    made = groups.create_group(db, admin, new_group({"title": "Roads & Rails", "slug": "roads-&-rails"}))
    assert made.slug == "roads-rails" and made.group.name == "roads-rails"
    with pytest.raises(InvalidInput):
        groups.create_group(db, admin, new_group({"title": "Roads & Rails"}))
    with pytest.raises(InvalidInput):  # an internal group's name is taken too
        groups.create_group(db, admin, new_group({"title": "Anonymous"}))
    db.rollback()


def test_create_application(db):
    app, secret = oauth.create_application(db, name="cli", grant_types=["password", "client_credentials"])
    stored = db.scalar(select(OAuthApplication).where(OAuthApplication.id == app.id))
    assert stored.client_secret != secret and check_password(stored.client_secret, secret)
    assert stored.authorization_grant_type == "password client_credentials"
    with pytest.raises(InvalidInput):
        oauth.create_application(db, name="x", grant_types=["implicit"])
    with pytest.raises(InvalidInput):
        oauth.create_application(db, name="x", client_type="public", grant_types=["client_credentials"])
    db.rollback()


def test_client_ids_are_letters_and_digits(db):
    # A client id is typed on command lines: one starting with "-" reads as an option.
    # With a URL-safe alphabet one id in 32 would start with "-" or "_"; 200 ids catch it.
    apps = [oauth.create_application(db, name=f"app{n}", client_type="public")[0] for n in range(200)]
    ids = {app.client_id for app in apps}
    assert len(ids) == 200
    assert all(len(i) == oauth.CLIENT_ID_LENGTH and i.isascii() and i.isalnum() for i in ids)
    db.rollback()
