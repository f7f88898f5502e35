"""cartotheca.monitoring.periods: fixed periods counted from 00:00 of each day (UTC)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator


def _day_start(moment: dt.datetime) -> dt.datetime:
    return dt.datetime(moment.year, moment.month, moment.day)


def align_start(moment: dt.datetime, interval: int) -> dt.datetime:
    """The start of the period of ``interval`` seconds that holds ``moment``."""
    day = _day_start(moment)
    offset = int((moment - day).total_seconds()) // interval * interval
    return day + dt.timedelta(seconds=offset)


def align_end(moment: dt.datetime, interval: int) -> dt.datetime:
    """The first period boundary at or after ``moment``."""
    start = align_start(moment, interval)
    return start if start == moment else start + dt.timedelta(seconds=interval)


def periods(valid_from: dt.datetime, valid_to: dt.datetime, interval: int) -> Iterator[
        tuple[dt.datetime, dt.datetime]]:
    """Every period a window touches, at least one: a window shorter than the interval still
    yields the whole period around it."""
    start = align_start(valid_from, interval)
    end = max(align_end(valid_to, interval), start + dt.timedelta(seconds=interval))
    step = dt.timedelta(seconds=interval)
    while start < end:
        yield start, start + step
        start += step
