"""ISO 8601 instants as naive UTC, and WMS TIME periods."""

from __future__ import annotations

import datetime as dt

import pytest

from cartotheca import timeutil


def test_an_offset_is_folded_into_utc():
    assert timeutil.parse_datetime("2026-01-01T12:00:00+02:00") == dt.datetime(2026, 1, 1, 10)
    assert timeutil.parse_datetime(" 2026-01-01T10:00:00Z ") == dt.datetime(2026, 1, 1, 10)
    with pytest.raises(ValueError):
        timeutil.parse_datetime("2026-01-01T10:00:00z")


def test_form_text_reads_a_lower_case_z_and_a_plus_lost_as_a_space():
    assert timeutil.read_datetime("2026-01-01T10:00:00z", form=True) == dt.datetime(2026, 1, 1, 10)
    assert timeutil.read_datetime("2026-01-01T12:00:00 0200", form=True) == dt.datetime(2026, 1, 1, 10)
    assert timeutil.read_datetime("2026-01-01T12:00:00 0200") is None


def test_reduced_dates_are_their_first_day():
    assert timeutil.read_datetime("2020", reduced=True) == dt.datetime(2020, 1, 1)
    assert timeutil.read_datetime("2020-05", reduced=True) == dt.datetime(2020, 5, 1)
    assert timeutil.read_datetime("2020") is None


def test_any_z_reads_every_z_as_utc():
    assert timeutil.read_datetime("2020-05-04Z+01:00", any_z=True) == dt.datetime(2020, 5, 3, 23)
    assert timeutil.read_datetime("2020-05-04Z+01:00") is None


def test_read_datetime_takes_datetimes_and_refuses_the_rest():
    aware = dt.datetime(2026, 1, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert timeutil.read_datetime(aware) == dt.datetime(2026, 1, 1, 10)
    assert timeutil.read_datetime("  ") is None
    assert timeutil.read_datetime(20260101) is None


def test_wms_time_periods_cover_their_precision():
    year, = timeutil.parse_time("2020")
    assert year == (dt.datetime(2020, 1, 1), dt.datetime(2020, 12, 31, 23, 59, 59, 999999))
    (start, end), = timeutil.parse_time("2020-02/2020-03-01T10:00+01:00")
    assert start == dt.datetime(2020, 2, 1) and end == dt.datetime(2020, 3, 1, 9, 0, 59, 999999)
    with pytest.raises(timeutil.InvalidTime):
        timeutil.parse_time("yesterday")
    with pytest.raises(timeutil.InvalidTime):
        timeutil.parse_time(" , ")


def test_time_matches_and_format():
    intervals = timeutil.parse_time("2020-05-04")
    assert timeutil.time_matches("2020-05-04T10:00:00Z", None, intervals)
    assert timeutil.time_matches(dt.date(2020, 5, 1), dt.date(2020, 5, 10), intervals)
    assert not timeutil.time_matches("not a time", None, intervals)
    assert timeutil.format_time(dt.datetime(2020, 5, 4, 10, 0, 0, 125999)) == "2020-05-04T10:00:00.125Z"
