"""Each module of ``tests/cluster`` starts one cluster (nginx, two serve nodes, a Celery worker,
PostgreSQL/PostGIS, RabbitMQ) and shares it between its tests."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import httpx
import pytest

from tests.support.cluster import ADMIN_PASSWORD, ADMIN_USER, Cluster, running_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


@pytest.fixture(scope="module")
def admin() -> dict[str, str]:
    token = base64.b64encode(f"{ADMIN_USER}:{ADMIN_PASSWORD}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.fixture(scope="module")
def through_nginx(cluster, admin) -> Iterator[httpx.Client]:
    """The administrator's client of the balanced address."""
    with httpx.Client(base_url=cluster.url, headers=admin, timeout=120) as client:
        yield client
