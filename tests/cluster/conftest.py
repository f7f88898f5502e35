"""One cluster (nginx, two serve nodes, a Celery worker, PostgreSQL/PostGIS, RabbitMQ, an
S3-compatible object store for the files) serves every test of ``tests/cluster``: started once,
when the first of them runs. The modules mark their tests ``cluster`` (left out of the suite's
run, README command 3 runs them) and ``xdist_group("cluster")``: with ``--dist loadgroup`` they
all run in one worker process instead of each worker starting a cluster."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import httpx
import pytest

from tests.support.cluster import ADMIN_PASSWORD, ADMIN_USER, Cluster, running_cluster
from tests.support.s3 import S3Server, s3_server, store_settings


@pytest.fixture(scope="package")
def object_store(tmp_path_factory) -> Iterator[tuple[S3Server, str]]:
    """The cluster's bucket (moto's server as a process): rasters, documents and thumbnails."""
    with s3_server(tmp_path_factory.mktemp("cluster-s3") / "moto.log") as server:
        yield server, server.new_bucket()


@pytest.fixture(scope="package")
def cluster(tmp_path_factory, object_store) -> Iterator[Cluster]:
    server, bucket = object_store
    settings = store_settings(server, bucket)
    with running_cluster(tmp_path_factory.mktemp("cluster"), settings=settings) as running:
        yield running


@pytest.fixture(scope="package")
def admin() -> dict[str, str]:
    token = base64.b64encode(f"{ADMIN_USER}:{ADMIN_PASSWORD}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.fixture(scope="package")
def through_nginx(cluster, admin) -> Iterator[httpx.Client]:
    """The administrator's client of the balanced address."""
    with httpx.Client(base_url=cluster.url, headers=admin, timeout=120) as client:
        yield client
