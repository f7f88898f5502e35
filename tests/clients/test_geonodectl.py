"""The real geonodectl 0.3.5 command line against a live Cartotheca server.

Every test runs the installed ``geonodectl`` (its own entry point, in this process: a subprocess
would pay about 2 s of imports per command, most of it a grammar its jsonschema extra builds on
import), reads what it printed (its JSON with ``--json``, its GitHub-style table without) and then
checks the database, so a command that exits 0 without the server having done the work still
fails. The upload tests run it as a subprocess. Contract: shared/compat/geonodectl.md.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass

import httpx
import pytest
from geonoderest.geonodectl import geonodectl
from sqlalchemy import select

from cartotheca.db.models import GroupProfile, Keyword, Resource, User
from tests import factories
from tests.factories import make_group, make_resource

pytestmark = pytest.mark.clients

MODES = pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])


def _entry_point():
    return geonodectl


def _exit_status(code: object, err: io.StringIO) -> int:
    """The status the interpreter would exit with for ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1


def run_geonodectl(argv: tuple[str, ...], env: dict[str, str]) -> tuple[int, str, str]:
    """Run geonodectl's entry point as its script does, with ``argv`` and ``env``; restore both."""
    main = _entry_point()
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_env = sys.argv, {k: os.environ.get(k) for k in env}
    sys.argv = ["geonodectl", *argv]
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = _exit_status(main(), err)
            except SystemExit as exc:
                status = _exit_status(exc.code, err)
            except Exception:
                traceback.print_exc(file=err)
                status = 1
    finally:
        sys.argv = saved_argv
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return status, out.getvalue(), err.getvalue()


@dataclass
class Run:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return (f"geonodectl {' '.join(self.args)} -> exit {self.returncode}\n"
                f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}")

    def json(self):
        try:
            return json.loads(self.stdout)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"not JSON ({exc}):\n{self}") from None

    def table(self) -> list[dict[str, str]]:
        """Rows of tabulate's "github" format, keyed by header (cells stripped)."""
        lines = [ln.strip() for ln in self.stdout.splitlines() if ln.strip().startswith("|")]
        assert lines, f"no table printed:\n{self}"
        cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
        header, body = cells[0], [c for c in cells[1:] if not set("".join(c)) <= {"-", ":"}]
        return [dict(zip(header, row, strict=True)) for row in body]


@pytest.fixture
def ctl(live_server, app, admin_basic_token):
    """``ctl("users", "list", as_json=True)`` runs geonodectl as the administrator."""
    env = {"GEONODE_API_URL": live_server.api, "GEONODE_API_BASIC_AUTH": admin_basic_token}

    def run(*args: str, as_json: bool = False, expect: int | None = 0) -> Run:
        argv = (("--json",) if as_json else ()) + tuple(str(a) for a in args)
        result = Run(argv, *run_geonodectl(argv, env))
        if expect is not None:
            assert result.returncode == expect, f"{result}\n--- server log ---\n{live_server.log_tail()}"
        return result

    return run


@pytest.fixture
def api(live_server, admin_basic_token):
    """Plain HTTP to the live server, for follow-up checks."""
    with httpx.Client(base_url=live_server.api, timeout=30,
                      headers={"Authorization": f"Basic {admin_basic_token}"}) as http:
        yield http


def make_user(db, username: str, **fields) -> User:
    # No password: hashing one costs half a second and these users never log in.
    return factories.make_user(db, username, password=None, **fields)


@pytest.fixture
def admin(db) -> User:
    return db.scalars(select(User).where(User.username == "admin")).one()


def fresh(db):
    """End the test session's transaction so the next read sees what the server committed."""
    db.rollback()
    db.expire_all()
    return db


def listed(run: Run, as_json: bool, key: str = "title") -> dict[str, dict]:
    """Records of a list command by ``key``; table cells and JSON values both as text."""
    if as_json:
        items = run.json()
        assert isinstance(items, list), run
        return {str(i[key]): {k: str(v) for k, v in i.items()} | {"_raw": i} for i in items}
    return {row[key]: row for row in run.table()}


# -- resources ----------------------------------------------------------------------------

@MODES
def test_resources_list_shows_every_type_with_owner(ctl, db, settings, admin, as_json):
    owner = make_user(db, "carto_owner")
    ds = make_resource(db, settings, owner, "Soil moisture grid")
    doc = make_resource(db, settings, admin, "Field report", resource_type="document")
    private = make_resource(db, settings, owner, "Private survey", public=False)

    rows = listed(ctl("resources", "list", as_json=as_json), as_json)

    assert set(rows) == {"Soil moisture grid", "Field report", "Private survey"}
    expected = {ds.title: (ds, "carto_owner"), doc.title: (doc, "admin"),
                private.title: (private, "carto_owner")}
    for title, (resource, username) in expected.items():
        row = rows[title]
        assert row["pk"] == str(resource.id)
        assert row["resource_type"] == resource.resource_type
        if as_json:
            assert row["_raw"]["owner"]["username"] == username
            assert row["_raw"]["uuid"] == resource.uuid
        else:
            assert row["owner.username"] == username
            assert row["detail_url"], row


@MODES
def test_resources_list_search(ctl, db, settings, admin, as_json):
    soil = make_resource(db, settings, admin, "Soil moisture grid")
    make_resource(db, settings, admin, "River network")
    make_resource(db, settings, admin, "Field report", resource_type="document")

    rows = listed(ctl("resources", "list", "--search", "soil", as_json=as_json), as_json)

    assert list(rows) == ["Soil moisture grid"]
    assert rows["Soil moisture grid"]["pk"] == str(soil.id)


@MODES
def test_resources_delete(ctl, db, settings, admin, api, as_json):
    gone = make_resource(db, settings, admin, "To be deleted")
    kept = make_resource(db, settings, admin, "To be kept")
    gone_id, kept_id = gone.id, kept.id

    run = ctl("resources", "delete", gone_id, as_json=as_json)

    assert f"{gone_id} deleted" in run.stdout
    # The route starts an execution; wait briefly for it to finish before checking the rows.
    deadline = time.monotonic() + 15
    while fresh(db).get(Resource, gone_id) is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert fresh(db).get(Resource, gone_id) is None
    assert fresh(db).get(Resource, kept_id) is not None
    assert api.get(f"resources/{gone_id}").status_code == 404
    titles = {r["title"] for r in api.get("resources", params={"page_size": 80}).json()["resources"]}
    assert titles == {"To be kept"}


# -- datasets -----------------------------------------------------------------------------

@MODES
def test_dataset_list_only_datasets(ctl, db, settings, admin, as_json):
    roads = make_resource(db, settings, admin, "Roads 2024")
    rivers = make_resource(db, settings, admin, "Rivers", is_published=True)
    make_resource(db, settings, admin, "Field report", resource_type="document")
    make_resource(db, settings, admin, "Overview map", resource_type="map")

    rows = listed(ctl("dataset", "list", as_json=as_json), as_json)

    assert set(rows) == {"Roads 2024", "Rivers"}
    assert rows["Roads 2024"]["pk"] == str(roads.id)
    assert rows["Rivers"]["pk"] == str(rivers.id)
    if as_json:
        assert rows["Rivers"]["_raw"]["owner"]["username"] == "admin"
        assert rows["Rivers"]["_raw"]["is_published"] is True
    else:
        assert rows["Rivers"]["owner.username"] == "admin"
        assert rows["Rivers"]["is_published"] == "True"


@MODES
def test_dataset_list_filter_and_search(ctl, db, settings, admin, as_json):
    make_resource(db, settings, admin, "Roads 2024")
    rivers = make_resource(db, settings, admin, "Rivers and lakes")
    make_resource(db, settings, admin, "Rivers report", resource_type="document")

    by_filter = listed(ctl("dataset", "list", "--filter", "title.icontains=river",
                           as_json=as_json), as_json)
    by_search = listed(ctl("dataset", "list", "--search", "rivers", as_json=as_json), as_json)

    assert set(by_filter) == set(by_search) == {"Rivers and lakes"}
    assert by_filter["Rivers and lakes"]["pk"] == str(rivers.id)


@MODES
def test_dataset_describe(ctl, db, settings, admin, as_json):
    ds = make_resource(db, settings, admin, "Roads 2024", abstract="Road centre lines")

    record = ctl("dataset", "describe", ds.id, as_json=as_json).json()

    assert str(record["pk"]) == str(ds.id)
    assert record["uuid"] == ds.uuid
    assert record["title"] == "Roads 2024"
    assert record["abstract"] == "Road centre lines"
    assert record["resource_type"] == "dataset"
    assert record["owner"]["username"] == "admin"


def test_dataset_describe_missing_fails(ctl, db, settings, admin):
    doc = make_resource(db, settings, admin, "Field report", resource_type="document")

    # A document is not a dataset: datasets/<pk> must answer 404, so the client exits 1.
    run = ctl("dataset", "describe", doc.id, expect=1)
    assert run.stdout.strip() == ""


@MODES
def test_dataset_patch_title(ctl, db, settings, admin, api, as_json):
    ds = make_resource(db, settings, admin, "Roads 2024")
    ds_id = ds.id

    body = ctl("dataset", "patch", ds_id, "--set", json.dumps({"title": "Roads 2025"}),
               as_json=as_json).json()

    assert body["dataset"]["title"] == "Roads 2025"
    assert fresh(db).get(Resource, ds_id).title == "Roads 2025"
    described = ctl("dataset", "describe", ds_id, as_json=as_json).json()
    assert described["title"] == "Roads 2025"
    assert api.get(f"resources/{ds_id}").json()["resource"]["title"] == "Roads 2025"


@MODES
def test_dataset_describe_by_uuid(ctl, db, settings, admin, as_json):
    make_resource(db, settings, admin, "Other dataset")
    ds = make_resource(db, settings, admin, "Roads 2024")

    record = ctl("dataset", "describe", ds.uuid, as_json=as_json).json()

    assert str(record["pk"]) == str(ds.id)
    assert record["uuid"] == ds.uuid


def test_uuid_resolution_checks_type_and_existence(ctl, db, settings, admin):
    doc = make_resource(db, settings, admin, "Field report", resource_type="document")

    # The client resolves the uuid through resources/?filter{uuid}=...&advertised=all and refuses
    # a record of another type; an unknown uuid resolves to an empty list.
    # (geonodectl reports a type mismatch as a usage problem, exit 2.)
    mismatch = ctl("dataset", "describe", doc.uuid, expect=2)
    assert "is a document" in mismatch.stderr
    unknown = ctl("dataset", "describe", "0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d", expect=1)
    assert unknown.stdout.strip() == ""
    record = ctl("documents", "describe", doc.uuid).json()
    assert str(record["pk"]) == str(doc.id)


def test_uuid_resolution_finds_unadvertised(ctl, db, settings, admin):
    hidden = make_resource(db, settings, admin, "Hidden dataset", advertised=False)

    record = ctl("dataset", "describe", hidden.uuid).json()

    assert str(record["pk"]) == str(hidden.id)


# -- users --------------------------------------------------------------------------------

@MODES
def test_users_list(ctl, db, as_json):
    make_user(db, "alice", email="alice@example.org", first_name="Alice")
    make_user(db, "bob", email="bob@example.org")

    rows = listed(ctl("users", "list", as_json=as_json), as_json, key="username")

    in_db = {u.username: u for u in fresh(db).scalars(select(User))}
    assert set(rows) == set(in_db)
    assert {"admin", "alice", "bob"} <= set(rows)
    for name, row in rows.items():
        assert row["pk"] == str(in_db[name].id)
        assert row["email"] == in_db[name].email
    assert rows["alice"]["first_name"] == "Alice"
    assert rows["admin"]["is_superuser"] == "True"


@MODES
def test_users_list_filter_username(ctl, db, admin, as_json):
    make_user(db, "alice")
    make_user(db, "administrator2")

    rows = listed(ctl("users", "list", "--filter", "username=admin", as_json=as_json), as_json,
                  key="username")

    assert list(rows) == ["admin"]
    assert rows["admin"]["pk"] == str(admin.id)


@MODES
def test_users_describe(ctl, db, as_json):
    alice = make_user(db, "alice", email="alice@example.org", last_name="Liddell")

    record = ctl("users", "describe", alice.id, as_json=as_json).json()

    assert record["pk"] == alice.id
    assert record["username"] == "alice"
    assert record["email"] == "alice@example.org"
    assert record["last_name"] == "Liddell"
    assert record["is_staff"] is False


@MODES
def test_users_create_without_password(ctl, db, api, as_json):
    username = "newuser_json" if as_json else "newuser_table"

    body = ctl("users", "create", "--username", username, "--email", f"{username}@example.org",
               as_json=as_json).json()

    created = fresh(db).scalars(select(User).where(User.username == username)).one()
    assert created.email == f"{username}@example.org"
    assert created.is_staff is False and created.is_superuser is False
    record = body.get("user", body)
    assert record["pk"] == created.id
    assert record["username"] == username
    assert api.get(f"users/{created.id}").json()["user"]["username"] == username


@MODES
def test_users_patch(ctl, db, api, as_json):
    alice = make_user(db, "alice", first_name="Alice")
    alice_id = alice.id

    body = ctl("users", "patch", alice_id, "--set", json.dumps({"first_name": "Alicia"}),
               as_json=as_json).json()

    assert body.get("user", body)["first_name"] == "Alicia"
    assert fresh(db).get(User, alice_id).first_name == "Alicia"
    assert api.get(f"users/{alice_id}").json()["user"]["first_name"] == "Alicia"


@MODES
def test_users_delete(ctl, db, api, as_json):
    alice = make_user(db, "alice")
    bob = make_user(db, "bob")
    alice_id, bob_id = alice.id, bob.id

    run = ctl("users", "delete", alice_id, as_json=as_json)

    assert "deleted" in run.stdout
    assert fresh(db).get(User, alice_id) is None
    assert fresh(db).get(User, bob_id) is not None
    ctl("users", "describe", alice_id, expect=1)
    usernames = {u["username"] for u in api.get("users", params={"page_size": 80}).json()["users"]}
    assert "alice" not in usernames and "bob" in usernames


# -- groups -------------------------------------------------------------------------------

@MODES
def test_groups_list(ctl, db, as_json):
    make_group(db, "Team A")
    make_group(db, "Soil Lab")

    rows = listed(ctl("groups", "list", as_json=as_json), as_json)

    profiles = {p.title: p for p in fresh(db).scalars(select(GroupProfile))}
    assert set(rows) == set(profiles)
    assert {"Team A", "Soil Lab"} <= set(rows)
    for title, row in rows.items():
        assert row["pk"] == str(profiles[title].id)
        assert row["slug"] == profiles[title].slug
    assert rows["Soil Lab"]["description"] == "Soil Lab group"


@MODES
def test_groups_describe(ctl, db, as_json):
    group = make_group(db, "Soil Lab")
    profile = fresh(db).scalars(select(GroupProfile).where(GroupProfile.group_id == group.id)).one()

    record = ctl("groups", "describe", profile.id, as_json=as_json).json()

    assert record["pk"] == profile.id
    assert record["title"] == "Soil Lab"
    assert record["slug"] == "soil-lab"
    assert record["access"] == "public"


# -- keywords -----------------------------------------------------------------------------

@MODES
def test_keywords_list(ctl, db, settings, admin, as_json):
    make_resource(db, settings, admin, "Soil moisture grid", keywords=["soil", "water"])
    make_resource(db, settings, admin, "Rivers", keywords=["water"])

    rows = listed(ctl("keywords", "list", as_json=as_json), as_json, key="name")

    in_db = {k.name: k for k in fresh(db).scalars(select(Keyword))}
    assert {"soil", "water"} <= set(rows)
    assert set(rows) == set(in_db)
    for name, row in rows.items():
        assert row["id"] == str(in_db[name].id)
        assert row["slug"] == in_db[name].slug


@MODES
def test_keywords_describe(ctl, db, settings, admin, as_json):
    make_resource(db, settings, admin, "Soil moisture grid", keywords=["soil"])
    keyword = fresh(db).scalars(select(Keyword).where(Keyword.name == "soil")).one()

    record = ctl("keywords", "describe", keyword.id, as_json=as_json).json()

    assert record["id"] == keyword.id and record["name"] == "soil" and record["slug"] == "soil"


# -- group writes -------------------------------------------------------------------------

@MODES
def test_groups_create(ctl, db, as_json):
    ctl("groups", "create", "--title", "River Watch", "--description", "Volunteers",
        as_json=as_json)

    profile = fresh(db).scalars(select(GroupProfile).where(GroupProfile.title == "River Watch")).one()
    assert profile.slug == "river-watch" and profile.description == "Volunteers"


@MODES
def test_groups_patch(ctl, db, api, as_json):
    group = make_group(db, "Soil Lab")
    profile = fresh(db).scalars(select(GroupProfile).where(GroupProfile.group_id == group.id)).one()

    ctl("groups", "patch", profile.id, "--set", '{"description": "Soil samples"}', as_json=as_json)

    assert fresh(db).get(GroupProfile, profile.id).description == "Soil samples"
    assert api.get(f"groups/{profile.id}").json()["group_profile"]["description"] == "Soil samples"


@MODES
def test_groups_delete(ctl, db, api, as_json):
    gone = make_group(db, "Old Team")
    kept = make_group(db, "New Team")
    session = fresh(db)
    gone_pk = session.scalars(select(GroupProfile.id).where(GroupProfile.group_id == gone.id)).one()
    kept_pk = session.scalars(select(GroupProfile.id).where(GroupProfile.group_id == kept.id)).one()

    ctl("groups", "delete", gone_pk, as_json=as_json)

    session = fresh(db)
    assert session.get(GroupProfile, gone_pk) is None
    assert session.get(GroupProfile, kept_pk) is not None
    assert api.get(f"groups/{gone_pk}").status_code == 404
    ctl("groups", "describe", gone_pk, expect=1)
