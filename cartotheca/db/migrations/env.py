"""Alembic environment: URL from the settings, metadata from cartotheca.db.models."""

from __future__ import annotations

from alembic import context

import cartotheca.db.models  # noqa: F401  (registers every table)
from cartotheca.db.base import Base
from cartotheca.db.session import make_engine
from cartotheca.settings import get_settings

config = context.config


def run_migrations() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        engine = make_engine(get_settings())
        with engine.connect() as connection:
            _run(connection)
        engine.dispose()
    else:
        _run(connection)


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds tables instead.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
