"""Notification checks evaluated against collected values: thresholds, timeouts, grace periods."""

from __future__ import annotations

import datetime as dt
import json

from cartotheca.db.base import utcnow
from cartotheca.db.models import NotificationCheck
from cartotheca.monitoring import alerts, notifications
from cartotheca.monitoring.notifications import steps_between
from tests.support.monitoring import collect


def make_check(db, settings, thresholds: list, values: dict, **fields):
    check = notifications.create_check(db, settings, {
        "name": fields.get("name", "check"), "description": "a check",
        "severity": fields.get("severity", "warning"),
        "user_thresholds": json.dumps(thresholds)})
    notifications.configure_check(db, check, values)
    db.commit()
    return check


def item(metric: str, option: str, low=None, high=None, steps=None) -> list:
    return [metric, option, False, False, False, False, low, high, steps, f"{metric} {option}"]


def test_steps_leave_the_maximum_out_as_geonode_does():
    assert steps_between(0, 100, 4) == [0, 25, 50, 75]
    assert steps_between(None, 100, 4) is None and steps_between(0, 100, None) is None


def test_minimum_counts_treat_no_requests_as_zero(monitored, db, settings):  # noqa: F811
    app, client = monitored
    client.get("/api/v2/resources")
    collect(app)
    make_check(db, settings, [item("request.count", "min_value")], {"request.count.min_value": "5"})
    (result,) = alerts.evaluate(db)
    problem = result.problems[0]
    assert (problem.name, problem.offending_value, problem.threshold_value) == ("request.count", 1.0, 5.0)
    assert "at least 5" in problem.description
    # A threshold the period meets: nothing to report.
    notifications.configure_check(db, result.check, {"request.count.min_value": "1"})
    db.commit()
    assert alerts.evaluate(db) == []


def test_minimum_counts_without_any_value(monitored, db, settings):  # noqa: F811
    app, _ = monitored
    client_free = collect(app)
    assert client_free.periods == []
    make_check(db, settings, [item("request.count", "min_value")], {"request.count.min_value": "5"})
    # No value collected at all yet: there is no latest period to judge.
    assert alerts.evaluate(db) == []


def test_a_timeout_fires_when_values_stop_arriving(monitored, db, settings):  # noqa: F811
    app, client = monitored
    client.get("/api/v2/resources")
    collect(app)
    make_check(db, settings, [item("request.count", "max_timeout")], {"request.count.max_timeout": "120"},
               severity="fatal")
    assert alerts.evaluate(db) == []
    later = utcnow() + dt.timedelta(minutes=10)
    (result,) = alerts.evaluate(db, later)
    (problem,) = result.problems
    assert problem.threshold_value == 120 and problem.offending_value > 500
    assert alerts.health_level([result]) == "fatal"


def test_maximum_values_and_inactive_checks(monitored, db, settings):  # noqa: F811
    app, client = monitored
    client.get("/api/v2/resources")
    collect(app)
    check = make_check(db, settings, [item("response.size", "max_value", 0, 10_000_000)],
                       {"response.size.max_value": "1"})
    (result,) = alerts.evaluate(db)
    assert result.problems[0].offending_value > 1
    notifications.configure_check(db, check, {"response.size.max_value": "1", "active": "false"})
    db.commit()
    assert alerts.evaluate(db) == []


def test_grace_period():
    now = utcnow()
    check = NotificationCheck(name="x", grace_period=600, last_send=None)
    assert alerts.can_send(check, now)
    check.last_send = now - dt.timedelta(seconds=599)
    assert not alerts.can_send(check, now)
    check.last_send = now - dt.timedelta(seconds=600)
    assert alerts.can_send(check, now)
