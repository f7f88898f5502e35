"""Fixtures of the API tests that start real server processes."""

from tests.tasks.conftest import spawn  # noqa: F401  (a fixture: restartable server processes)
