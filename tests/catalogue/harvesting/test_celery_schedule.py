"""Scale-out scheduling: the Celery beat task, run in its own process as a worker runs it, starts
each due harvester action once and sends its execution to the broker."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest

from cartotheca.db.models import ExecutionRequest, Harvester, User
from tests.support.processes import outside_environment
from tests.support.services import empty_redis_database

BEAT_TASK = "from cartotheca.cli.worker import compose_worker; " \
    "from cartotheca.settings import get_settings; " \
    "app = compose_worker(get_settings()); " \
    "assert 'enqueue-harvests' in app.conf.beat_schedule; " \
    "enqueue_harvests = app.tasks['cartotheca.enqueue_harvests']; " \
    "enqueue_harvests(); enqueue_harvests()"  # the second beat finds the action claimed


@pytest.fixture
def redis_url(worker_id_number):
    with empty_redis_database(worker_id_number) as (url, client):
        yield url, client


def _beat(settings, broker: str) -> None:
    env = outside_environment()
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
