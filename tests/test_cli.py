"""The management commands as ``cartotheca <command>`` subcommands, run as real processes."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import uuid

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import select, text
from sqlalchemy.orm import selectinload

from cartotheca.cli import main
from cartotheca.db.base import utcnow
from cartotheca.db.models import Dataset, ExecutionRequest, Resource
from cartotheca.settings import get_settings
from tests.factories import PASSWORD, make_resource, make_user
from tests.geodata import fixtures as fx
from tests.support.ports import free_port
from tests.support.processes import outside_environment, settings_env, wait_http


@pytest.fixture
def cartotheca(settings):
    """Run ``cartotheca <args>`` over the test database and data directory."""
    env = outside_environment()
    env.update(CARTOTHECA_DATABASE_URL=settings.DATABASE_URL, CARTOTHECA_DATA_DIR=str(settings.DATA_DIR),
               CARTOTHECA_STORAGE_BACKEND=settings.STORAGE_BACKEND, CARTOTHECA_SITEURL=settings.SITEURL,
               CARTOTHECA_SECRET_KEY="test-secret", CARTOTHECA_MONITORING_ENABLED="false")
    if settings.DATASTORE_URL:
        env["CARTOTHECA_DATASTORE_URL"] = settings.DATASTORE_URL

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cartotheca.cli", *args], env=env, capture_output=True,
                              text=True, timeout=300)

    return run


def test_subcommands_share_the_commands_options():
    runner = CliRunner()
    result = runner.invoke(main, ["sync_datasets", "--help"])
    assert result.exit_code == 0
    assert "-f, --filter NAME" in result.output and "--skip-thumbnails" in result.output
    listed = runner.invoke(main, ["--help"]).output
    for name in ("sync_datasets", "rebuild_index", "purge_executions", "send_notifications"):
        assert name in listed
    # the command's own checks, before any database is opened
    refused = runner.invoke(main, ["purge_executions", "--days", "-1"])
    assert refused.exit_code == 1 and "--days: must be 0 or more" in refused.output


def test_purge_executions_and_send_notifications(cartotheca, db):
    when = utcnow() - dt.timedelta(days=10)
    old = ExecutionRequest(func_name="copy", action="copy", status="failed", input_params={},
                           output_params={}, created=when, finished=when, last_updated=when)
    db.add(old)
    db.commit()
    old_id = old.id
    db.expunge_all()
    result = cartotheca("purge_executions", "--days", "5")
    assert result.returncode == 0, result.stderr
    assert "Purged 1 finished or failed execution(s) older than 5 day(s)." in result.stdout
    assert db.get(ExecutionRequest, old_id) is None

    sent = cartotheca("send_notifications")
    assert sent.returncode == 0 and "0 notification(s) sent" in sent.stdout


def test_rebuild_index(cartotheca, client, db, settings, backend):
    owner = make_user(db, f"owner_{uuid.uuid4().hex[:6]}")
    resource = make_resource(db, settings, owner, "Alps", extent=(5.0, 45.0, 15.0, 50.0))
    if backend == "sqlite":
        db.execute(text("DELETE FROM resources_extent"))
        db.commit()
    result = cartotheca("rebuild_index")
    assert result.returncode == 0, result.stderr
    expected = "Extent index rebuilt: 1 resource extent(s)." if backend == "sqlite" else \
        "Reindexed ix_resources_ll_box."
    assert expected in result.stdout
    found = client.get("/api/v2/resources?extent=6,46,7,47").json()["resources"]
    assert [int(r["pk"]) for r in found] == [resource.id]


def test_sync_datasets(cartotheca, db, settings, tmp_path):
    owner = make_user(db, f"owner_{uuid.uuid4().hex[:6]}")
    resource = fx.publish_file(db, settings, owner, fx.write_points(tmp_path, f"cli_{uuid.uuid4().hex[:6]}"))
    dataset = db.scalar(select(Dataset).where(Dataset.resource_id == resource.id))
    dataset.feature_count = 0
    db.commit()
    result = cartotheca("sync_datasets", "--filter", resource.alternate, "--skip-thumbnails")
    assert result.returncode == 0, result.stderr
    assert f"{resource.alternate}: 10 feature(s), extent -10,40,8,49" in result.stdout
    assert "Synchronised 1 dataset(s); 0 failed." in result.stdout
    db.expire_all()
    dataset = db.scalar(select(Dataset).where(Dataset.resource_id == resource.id)
                        .options(selectinload(Dataset.attributes)))
    assert dataset.feature_count == fx.POINT_COUNT
    assert db.get(Resource, resource.id).ll_minx == pytest.approx(-10.0)


# -- OAuth2 applications -----------------------------------------------------------------------

def _json_output(result: subprocess.CompletedProcess):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_oauth_application_created_by_the_cli_gives_working_bearer_tokens(cartotheca, client, db):
    # A migrated database has no application: nothing to get a token from without a secret.
    assert _json_output(cartotheca("oauth-application", "list", "--json")) == []
    make_user(db, "ana", first_name="Ana", email="ana@example.org")
    created = _json_output(cartotheca("oauth-application", "create", "--name", "cli",
                                      "--grant", "password", "--json"))
    assert set(created) == {"client_id", "client_secret"} and created["client_secret"]

    answer = client.post("/o/token/", data={
        "grant_type": "password", "username": "ana", "password": PASSWORD,
        "client_id": created["client_id"], "client_secret": created["client_secret"]})
    assert answer.status_code == 200, answer.text
    bearer = {"Authorization": f"Bearer {answer.json()['access_token']}"}
    users = client.get("/api/v2/users", headers=bearer)
    assert users.status_code == 200 and [u["username"] for u in users.json()["users"]] == ["ana"]
    claims = client.get("/o/userinfo/", headers=bearer)
    assert claims.status_code == 200 and claims.json()["preferred_username"] == "ana"

    listed = _json_output(cartotheca("oauth-application", "list", "--json"))
    assert [(a["client_id"], a["name"], a["client_type"], a["grant_types"], a["user"])
            for a in listed] == [(created["client_id"], "cli", "confidential", ["password"], None)]
    assert created["client_secret"] not in json.dumps(listed)

    deleted = cartotheca("oauth-application", "delete", created["client_id"])
    assert deleted.returncode == 0 and "Deleted application 'cli'" in deleted.stdout
    assert _json_output(cartotheca("oauth-application", "list", "--json")) == []
    # its tokens went with it
    assert client.get("/o/userinfo/", headers=bearer).status_code == 401


@pytest.fixture
def cli_runner(settings):
    """Run ``cartotheca <args>`` in this process (click's runner) over the test database, with
    the test settings (so the password hashing cost stays the tests')."""
    env = {name: None for name in os.environ if name.startswith("CARTOTHECA_")}
    env.update(settings_env(settings))
    runner = CliRunner()

    def run(*args: str) -> subprocess.CompletedProcess:
        get_settings.cache_clear()
        try:
            result = runner.invoke(main, list(args), env=env)
        finally:
            get_settings.cache_clear()
        return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)

    return run


def test_oauth_application_options_and_refusals(cli_runner, client, db):
    cartotheca = cli_runner
    make_user(db, "robot")
    service = cartotheca("oauth-application", "create", "--name", "service", "--user", "robot",
                         "--grant", "password,client_credentials",
                         "--redirect-uri", "https://app.example.org/callback")
    assert service.returncode == 0, service.stderr
    client_id = service.stdout.split("Client id: ")[1].split()[0]
    secret = service.stdout.split("(shown once, only a hash is kept): ")[1].split()[0]
    token = client.post("/o/token/", data={"grant_type": "client_credentials",
                                           "client_id": client_id, "client_secret": secret})
    assert token.status_code == 200, token.text
    me = client.get("/o/userinfo/", headers={"Authorization": f"Bearer {token.json()['access_token']}"})
    assert me.json()["preferred_username"] == "robot"

    public = _json_output(cartotheca("oauth-application", "create", "--name", "browser",
                                     "--client-type", "public", "--json"))
    assert public["client_secret"] is None
    listed = {a["name"]: a for a in _json_output(cartotheca("oauth-application", "list", "--json"))}
    assert listed["service"]["grant_types"] == ["password", "client_credentials"]
    assert listed["service"]["redirect_uris"] == ["https://app.example.org/callback"]
    assert listed["service"]["user"] == "robot" and listed["browser"]["client_type"] == "public"
    text_list = cartotheca("oauth-application", "list")
    assert client_id in text_list.stdout and secret not in text_list.stdout

    for args, message in [
        (("--name", " "), "an application needs a name"),
        (("--name", "x", "--grant", "authorization_code"), "grant types must be among"),
        (("--name", "x", "--client-type", "public", "--grant", "client_credentials"),
         "a public client cannot use the client_credentials grant"),
        (("--name", "x", "--user", "nobody"), "No user named 'nobody'"),
        (("--name", "x", "--redirect-uri", "javascript:alert(1)"), "a redirect URI must be"),
    ]:
        refused = cartotheca("oauth-application", "create", *args)
        assert refused.returncode == 1 and message in refused.stderr, (args, refused.stderr)
    assert len(_json_output(cartotheca("oauth-application", "list", "--json"))) == 2  # nothing half-made
    unknown = cartotheca("oauth-application", "delete", "no-such-client")
    assert unknown.returncode == 1 and "No OAuth2 application" in unknown.stderr


@pytest.mark.parametrize(("options", "env", "logged"), [
    ([], {}, True),
    (["--no-access-log"], {}, False),
    ([], {"CARTOTHECA_ACCESS_LOG": "false"}, False),
])
def test_serve_logs_each_request_unless_told_not_to(spawn, db, options, env, logged):
    port = free_port()
    server = spawn(["serve", "--port", str(port), *options], CARTOTHECA_LOG_LEVEL="info", **env).start()
    wait_http(f"http://127.0.0.1:{port}/api/v2/", timeout=60)
    assert httpx.get(f"http://127.0.0.1:{port}/api/v2/resources?page_size=1").status_code == 200
    server.stop()
    log = server.log()
    assert "Application startup complete" in log  # info lines are there either way
    assert ("GET /api/v2/resources?page_size=1" in log) is logged
