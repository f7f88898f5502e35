"""The execution engine: atomic runs, recorded failures, recovery of stale executions."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select, update

from cartotheca.db.models import ExecutionRequest, Resource
from cartotheca.tasks.engine import Engine
from cartotheca.tasks.jobs import JOBS
from tests.factories import make_resource, make_user


def engine_for(app, **overrides) -> Engine:
    state = app.state.cartotheca
    settings = state.settings.model_copy(update=overrides)
    return Engine(settings, state.sessions, JOBS)


def submit(engine, db, user, func_name, resource, params) -> str:
    execution = engine.submit(db, user_id=user.id, func_name=func_name, action=func_name,
                              input_params={"resource_id": resource.id, **params},
                              resource_id=resource.id)
    db.commit()
    return execution.exec_id


def test_run_finishes_and_records_output(app, db, settings):
    owner = make_user(db, "ana")
    resource = make_resource(db, settings, owner, "Rivers")
    engine = engine_for(app)
    exec_id = submit(engine, db, owner, "update", resource, {"vals": {"title": "Streams"}})
    assert engine.run(exec_id) == "finished"
    assert engine.run(exec_id) is None  # a second delivery is a no-op
    db.expire_all()
    row = db.scalar(select(ExecutionRequest).where(ExecutionRequest.exec_id == exec_id))
    assert row.status == "finished" and row.finished is not None and row.attempts == 1
    assert row.output_params["output"]["uuid"] == resource.uuid
    assert db.get(Resource, resource.id).title == "Streams"


def test_failure_is_recorded_and_changes_nothing(app, db, settings):
    owner = make_user(db, "ana")
    resource = make_resource(db, settings, owner, "Rivers", keywords=["hydro"])
    engine = engine_for(app)
    # the title is set before the unknown field fails: the rollback must undo it
    exec_id = submit(engine, db, owner, "update", resource,
                     {"vals": {"title": "Changed", "no_such_field": 1}})
    assert engine.run(exec_id) == "failed"
    db.expire_all()
    row = db.scalar(select(ExecutionRequest).where(ExecutionRequest.exec_id == exec_id))
    assert row.status == "failed" and "no_such_field" in row.log
    assert row.output_params["errors"]
    assert db.get(Resource, resource.id).title == "Rivers"


def test_stale_running_execution_is_retried_then_failed(app, db, settings):
    owner = make_user(db, "ana")
    resource = make_resource(db, settings, owner, "Rivers")
    engine = engine_for(app, EXECUTION_HEARTBEAT_SECONDS=1.0, EXECUTION_MAX_ATTEMPTS=2)
    exec_id = submit(engine, db, owner, "update", resource, {"vals": {"title": "Again"}})
    old = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=5)

    def crash(attempts: int) -> None:
        db.execute(update(ExecutionRequest).where(ExecutionRequest.exec_id == exec_id)
                   .values(status="running", attempts=attempts, heartbeat=old))
        db.commit()

    crash(1)
    assert engine.recover() == [exec_id]
    db.expire_all()
    assert db.scalar(select(ExecutionRequest.status).where(
        ExecutionRequest.exec_id == exec_id)) == "ready"
    crash(2)
    assert engine.recover() == []
    db.expire_all()
    row = db.scalar(select(ExecutionRequest).where(ExecutionRequest.exec_id == exec_id))
    assert row.status == "failed" and "worker lost" in row.log and row.finished is not None


def test_fresh_running_execution_is_left_alone(app, db, settings):
    owner = make_user(db, "ana")
    resource = make_resource(db, settings, owner, "Rivers")
    engine = engine_for(app, EXECUTION_HEARTBEAT_SECONDS=60.0)
    exec_id = submit(engine, db, owner, "update", resource, {"vals": {"title": "x"}})
    assert engine.claim(exec_id)
    assert engine.recover() == []
    db.expire_all()
    assert db.scalar(select(ExecutionRequest.status).where(
        ExecutionRequest.exec_id == exec_id)) == "running"
