"""Shared fixtures: every test runs against real SQLite and real PostgreSQL.

The ``backend`` parameter makes one throw-away database per backend and session (migrated with
Alembic, so every run also tests the migrations). Each test starts from the seeded state:
rows the test added are deleted afterwards.
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, text
from sqlalchemy.orm import Session

from cartotheca.api.app import create_app
from cartotheca.catalogue import accounts
from cartotheca.db.base import Base
from cartotheca.settings import Settings
from tests.support.services import postgres_database

# Fixtures shared by tests of several folders: brokers, SMTP, server and worker processes, and
# the monitored app.
pytest_plugins = ["tests.support.fixtures", "tests.support.monitoring"]

BACKENDS = [b for b in os.environ.get("CARTOTHECA_TEST_BACKENDS", "sqlite,postgresql").split(",") if b]
ADMIN_PASSWORD = "admin-pass"
# Tables whose rows are seeded reference data and survive between tests.
KEEP_TABLES = {"categories", "licenses", "regions", "restriction_code_types",
               "spatial_representation_types"}


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(request, tmp_path_factory) -> Iterator[str]:
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "test.sqlite3"
        yield f"sqlite:///{path}"
        return
    with postgres_database("cartotheca_test") as url:
        yield url


@pytest.fixture(scope="session")
def backend(database_url) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"


@pytest.fixture(scope="session")
def datastore_url(backend) -> Iterator[str | None]:
    """The PostGIS datastore of the postgresql runs (vector data as tables); None on SQLite,
    where datasets are GeoPackage files. Every dataset and OWS test so runs on both backends."""
    if backend != "postgresql":
        yield None
        return
    with postgres_database("cartotheca_datastore", postgis=True) as url:
        yield url


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def make_settings(database_url, data_dir, datastore_url) -> Callable[..., Settings]:
    storage = "postgis" if datastore_url else "geopackage"

    def build(**overrides) -> Settings:
        values = dict(DATA_DIR=data_dir, DATABASE_URL=database_url, ADMIN_USER="admin",
                      STORAGE_BACKEND=storage, DATASTORE_URL=datastore_url,
                      ADMIN_PASSWORD=ADMIN_PASSWORD, SITEURL="http://testserver/",
                      SECRET_KEY="test-secret", PASSWORD_HASH_TIME_COST=1,
                      PASSWORD_HASH_MEMORY_KIB=1024, PASSWORD_HASH_PARALLELISM=1)
        values.update(overrides)
        return Settings(**values)
    return build


@pytest.fixture(scope="session")
def base_app(make_settings):
    app = create_app(make_settings())
    yield app
    app.state.cartotheca.engine.dispose()


@pytest.fixture
def app(base_app):
    yield base_app
    _clean(base_app.state.cartotheca.engine)


@pytest.fixture
def make_app(make_settings, base_app) -> Iterator[Callable[..., object]]:
    """An app with other settings over the same database (lockdown, signup, paging ...)."""
    built = []

    def build(**overrides):
        application = create_app(make_settings(**overrides), migrate=False)
        built.append(application)
        return application

    yield build
    for application in built:
        application.state.cartotheca.engine.dispose()
    _clean(base_app.state.cartotheca.engine)


def _clean(engine) -> None:
    with engine.begin() as conn:
        for table in reversed(Base.metadata.sorted_tables):
            if table.name in KEEP_TABLES:
                continue
            if table.name == "users":
                conn.execute(text("DELETE FROM users WHERE username <> 'admin'"))
            elif table.name == "groups":
                conn.execute(text("DELETE FROM groups WHERE internal = :t"), {"t": False})
            else:
                conn.execute(table.delete())


@pytest.fixture
def client(app) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def db(app) -> Iterator[Session]:
    """A session on the app's database for arranging data and checking results."""
    session = app.state.cartotheca.sessions()
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def settings(app) -> Settings:
    return app.state.cartotheca.settings


def basic(username: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.fixture
def admin_auth() -> dict[str, str]:
    return basic("admin", ADMIN_PASSWORD)


@pytest.fixture
def count_statements(app) -> Callable:
    """``with count_statements() as n: ...`` then ``n.value`` is the number of SQL statements."""
    engine = app.state.cartotheca.engine

    class Counter:
        value = 0

    @contextmanager
    def counting():
        counter = Counter()

        def before(*_args, **_kw):
            # The in-process execution poller shares the engine; its ticks are not the request's.
            if not threading.current_thread().name.startswith("execution"):
                counter.value += 1

        event.listen(engine, "before_cursor_execute", before)
        try:
            yield counter
        finally:
            event.remove(engine, "before_cursor_execute", before)

    return counting


@pytest.fixture
def internal_groups(app, db):
    return accounts.internal_group_ids(db, app.state.cartotheca.settings)
