"""Scale-out scheduling: the Celery beat task, run in its own process as a worker runs it, starts
each due harvester action once and sends its execution to the broker."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys

import pytest

from cartotheca.db.models import ExecutionRequest, Harvester, User
from tests.tasks.conftest import REDIS_HOST, REDIS_PORT, redis_available

BEAT_TASK = "from cartotheca.tasks.backends.celery import celery_app, enqueue_harvests; " \
    "assert 'enqueue-harvests' in celery_app.conf.beat_schedule; " \
    "enqueue_harvests(); enqueue_harvests()"  # the second beat finds the action claimed


@pytest.fixture
def redis_url():
    if not redis_available():
        if os.environ.get("CI"):
            pytest.fail("Redis is not reachable at 127.0.0.1:6379 but CI requires it")
        pytest.skip("Redis not reachable")
    import redis

    number = 1 + int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0) % 15
    url = f"redis://{REDIS_HOST}:{REDIS_PORT}/{number}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url, client
    client.flushdb()
    client.close()


def _beat(settings, broker: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARTOTHECA_")}
    env.update(CARTOTHECA_DATABASE_URL=settings.database_url, CARTOTHECA_DATA_DIR=str(settings.DATA_DIR),
               CARTOTHECA_SECRET_KEY="test-secret", CARTOTHECA_TASK_BACKEND="celery",
               CARTOTHECA_CELERY_BROKER_URL=broker)
    done = subprocess.run([sys.executable, "-c", BEAT_TASK], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_beat_task_starts_due_runs_once(db, settings, redis_url):
    url, broker = redis_url
    admin_id = db.query(User.id).filter_by(username="admin").scalar()
    harvester = Harvester(name="beat", remote_url="http://127.0.0.1:9/", harvester_type="geonode",
                          default_owner_id=admin_id, scheduling_enabled=True,
                          last_checked_availability=dt.datetime(2000, 1, 1))
    db.add(harvester)
    db.commit()

    _beat(settings, url)
    db.expire_all()
    assert db.get(Harvester, harvester.id).status == "checking-availability"
    executions = db.query(ExecutionRequest).filter_by(func_name="harvester_check_availability").all()
    assert len(executions) == 1 and executions[0].status == "ready"
    assert broker.llen("celery") == 1
    assert executions[0].exec_id.encode() in broker.lindex("celery", 0)
