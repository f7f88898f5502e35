"""Fixed periods counted from 00:00 of each day."""

from __future__ import annotations

import datetime as dt

from cartotheca.monitoring.periods import align_end, align_start, periods

T = dt.datetime(2026, 3, 14, 10, 7, 42)


def test_alignment_counts_from_midnight():
    assert align_start(T, 300) == dt.datetime(2026, 3, 14, 10, 5)
    assert align_end(T, 300) == dt.datetime(2026, 3, 14, 10, 10)
    assert align_start(T, 3600) == dt.datetime(2026, 3, 14, 10, 0)
    assert align_end(dt.datetime(2026, 3, 14, 10, 10), 300) == dt.datetime(2026, 3, 14, 10, 10)
    # 7 hours does not divide a day: periods still restart at 00:00.
    assert align_start(dt.datetime(2026, 3, 15, 1, 0), 7 * 3600) == dt.datetime(2026, 3, 15)


def test_a_short_window_returns_every_period_it_touches():
    # A 2-minute window (10:03:42-10:05:42) across a 5-minute boundary touches two periods...
    assert list(periods(T - dt.timedelta(minutes=4), T - dt.timedelta(minutes=2), 300)) == [
        (dt.datetime(2026, 3, 14, 10, 0), dt.datetime(2026, 3, 14, 10, 5)),
        (dt.datetime(2026, 3, 14, 10, 5), dt.datetime(2026, 3, 14, 10, 10)),
    ]
    # ... inside one period, one; and an empty window is still one whole period.
    assert list(periods(T, T + dt.timedelta(seconds=30), 300)) == [
        (dt.datetime(2026, 3, 14, 10, 5), dt.datetime(2026, 3, 14, 10, 10))]
    aligned = dt.datetime(2026, 3, 14, 10, 5)
    assert list(periods(aligned, aligned, 300)) == [(aligned, aligned + dt.timedelta(minutes=5))]
