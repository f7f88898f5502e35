"""Property-based requests generated from the app's own OpenAPI document: never a 5xx.

Schemathesis reads ``/api/v2/schema`` (JSON) from the app under test and sends generated
requests (valid and invalid parameters, bodies, ids) through ASGI. Reads run anonymously and
as the administrator; resource writes run as the administrator. The only check is
``not_a_server_error``: GeoNode's own schema lists parameters the server ignores, so schema
conformance of responses is not asserted here, but a crash on any input is a bug.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from tests.factories import make_resource, make_user

CHECKS = [not_a_server_error]
# The whole module must stay under ~2 minutes on both databases as routes are added: lower
# max_examples before excluding operations.
FAST = settings(max_examples=5, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


@pytest.fixture
def api_schema(app, db, settings):
    # A few rows so detail routes and filters meet real data, not only empty tables.
    owner = make_user(db, "st-owner")
    for n in range(3):
        make_resource(db, settings, owner, f"schemathesis {n}", keywords=["st"], regions=["ITA"],
                      category="biota", public=n != 2, extent=(5.0, 40.0, 15.0, 47.0))
    return schemathesis.openapi.from_asgi("/api/v2/schema?format=openapi-json", app)


schema = schemathesis.pytest.from_fixture("api_schema")


# The schema document itself is covered by test_discovery; rendering it is the slowest GET.
@schema.include(method="GET").exclude(path="/api/v2/schema").parametrize()
@FAST
def test_reads_never_fail_with_a_server_error(case, admin_auth):
    case.call_and_validate(checks=CHECKS)
    case.call_and_validate(checks=CHECKS, headers=admin_auth)


@schema.include(method=["POST", "PUT", "PATCH", "DELETE"], path_regex=r"^/api/v2/resources").parametrize()
@FAST
def test_resource_writes_never_fail_with_a_server_error(case, admin_auth):
    case.call_and_validate(checks=CHECKS, headers=admin_auth)
