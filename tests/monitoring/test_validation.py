"""Form-style input: timestamps, durations, e-mail lists, per-field errors."""

from __future__ import annotations

import datetime as dt

import pytest

from cartotheca import timeutil
from cartotheca.monitoring.validation import FieldErrors, Form, parse_duration


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-01-01", dt.datetime(2026, 1, 1)),
    ("2026-01-01 10:00", dt.datetime(2026, 1, 1, 10)),
    ("2026-01-01T10:00:00Z", dt.datetime(2026, 1, 1, 10)),
    ("2026-01-01T10:00:00.125Z", dt.datetime(2026, 1, 1, 10, 0, 0, 125000)),
    ("2026-01-01T12:00:00+02:00", dt.datetime(2026, 1, 1, 10)),
    ("2026-01-01T12:00:00 02:00", dt.datetime(2026, 1, 1, 10)),  # "+" decoded as a space
    ("tomorrow", None),
])
def test_timestamps_are_naive_utc(text, expected):
    assert timeutil.read_datetime(text, form=True) == expected


@pytest.mark.parametrize(("text", "seconds"), [
    ("00:10:00", 600), ("01:00:00", 3600), ("1 02:00:00", 93600), ("10:30", 630), ("90", 90),
    ("soon", None),
])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


def test_errors_are_collected_per_field():
    form = Form({"severity": "panic", "emails": "a@example.org\nnot an address", "active": "maybe",
                 "value": "12x"})
    form.text("name", required=True)
    form.choice("severity", ("warning", "error", "fatal"))
    assert form.emails("emails") == ["a@example.org", "not an address"]
    form.boolean("active")
    form.number("value")
    with pytest.raises(FieldErrors) as raised:
        form.check()
    assert set(raised.value.fields) == {"name", "severity", "emails", "active", "value"}
    assert raised.value.fields["name"] == ["This field is required."]
