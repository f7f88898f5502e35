"""cartotheca.timeutil: ISO 8601 text → naive UTC datetimes, and WMS/OGC TIME periods.

Every timestamp Cartotheca stores is a naive datetime in UTC, so whatever zone a client or a
remote wrote is folded into UTC here and dropped. Two readers live here:

- ``parse_datetime``/``read_datetime``: one instant, through ``datetime.fromisoformat``. The places that
  read instants accept slightly different spellings (a form's lower-case ``z``, an ISO
  document's bare year); those differences are keyword arguments, so each caller states its own.
- ``parse_time``: a WMS/OGC TIME value (instants, reduced-precision periods such as ``2020``
  meaning the whole year, ``start/end[/resolution]`` ranges) as closed intervals.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from cartotheca.errors import InvalidInput


class InvalidTime(InvalidInput):
    """A TIME value that is not ISO 8601 (WMS: InvalidDimensionValue)."""


def naive_utc(value: dt.datetime) -> dt.datetime:
    """``value`` in UTC without a zone; a naive value is taken to be UTC already."""
    if value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def parse_datetime(text: str, *, form: bool = False, any_z: bool = False,
              reduced: bool = False) -> dt.datetime:
    """An ISO 8601 date or date-time as naive UTC; ValueError when it is not one.

    ``form``: text typed into a form or a query string, where an unescaped ``+`` of a zone
    offset arrives as a space and a lower-case ``z`` is read as UTC too.
    ``any_z``: every ``Z`` stands for ``+00:00`` (the harvesters' and the ISO import's reading),
    not only a final one.
    ``reduced``: a bare year (``2020``) or year-month (``2020-05``) is its first day.
    """
    text = text.strip()
    if form and text.count(":") >= 2:
        text = re.sub(r"(\d) (\d\d:?\d\d)$", r"\1+\2", text)
    if reduced:
        if re.fullmatch(r"\d{4}", text):
            text += "-01-01"
        elif re.fullmatch(r"\d{4}-\d{2}", text):
            text += "-01"
    if any_z:
        text = text.replace("Z", "+00:00")
    elif text.endswith(("Z", "z") if form else "Z"):
        text = text[:-1] + "+00:00"
    return naive_utc(dt.datetime.fromisoformat(text))


def read_datetime(value: Any, *, form: bool = False, any_z: bool = False,
             reduced: bool = False) -> dt.datetime | None:
    """Like ``parse_datetime``, but None for anything absent or unreadable; a datetime is taken as
    it is (in UTC)."""
    if isinstance(value, dt.datetime):
        return naive_utc(value)
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return parse_datetime(value, form=form, any_z=any_z, reduced=reduced)
    except ValueError:
        return None


# -- WMS/OGC TIME ------------------------------------------------------------------------------

_ISO = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6})\d*)?)?"
                  r"(Z|[+-]\d{2}:?\d{2})?)?)?)?$")


def parse_time(value: str) -> list[tuple[dt.datetime, dt.datetime]]:
    """WMS TIME (instants, reduced-precision periods and start/end[/resolution] ranges, comma
    separated) as closed intervals of naive UTC datetimes. "2020" covers the whole year."""
    intervals = []
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        if "/" in part:
            pieces = part.split("/")
            if len(pieces) not in (2, 3):
                raise InvalidTime(f"TIME range {part!r} is not start/end[/period]")
            intervals.append((_period(pieces[0])[0], _period(pieces[1])[1]))
        else:
            intervals.append(_period(part))
    if not intervals:
        raise InvalidTime("TIME has no value")
    return intervals


def _period(text: str) -> tuple[dt.datetime, dt.datetime]:
    match = _ISO.match(text.strip())
    if not match:
        raise InvalidTime(f"TIME value {text!r} is not an ISO 8601 date or time")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        start = dt.datetime(int(year), int(month or 1), int(day or 1), int(hour or 0),
                            int(minute or 0), int(second or 0), int((fraction or "0").ljust(6, "0")))
    except ValueError as exc:
        raise InvalidTime(f"TIME value {text!r}: {exc}") from None
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        start -= sign * dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    if hour is not None:
        end = start
        if second is None:
            end = start + dt.timedelta(minutes=1) - dt.timedelta(microseconds=1)
    elif day is not None:
        end = start + dt.timedelta(days=1) - dt.timedelta(microseconds=1)
    elif month is not None:
        nxt = start.replace(year=start.year + 1, month=1) if start.month == 12 \
            else start.replace(month=start.month + 1)
        end = nxt - dt.timedelta(microseconds=1)
    else:
        end = start.replace(year=start.year + 1) - dt.timedelta(microseconds=1)
    return start, end


def to_datetime(value: Any) -> dt.datetime | None:
    """A stored time attribute value (datetime, date or ISO text) as naive UTC."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return naive_utc(value)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    try:
        return _period(str(value).strip())[0]
    except InvalidTime:
        return None


def time_matches(start: Any, end: Any, intervals: list[tuple[dt.datetime, dt.datetime]]) -> bool:
    """Whether the span [start, end] (end defaults to start) meets any of ``intervals``."""
    first = to_datetime(start)
    if first is None:
        return False
    last = to_datetime(end) or first
    return any(first <= hi and last >= lo for lo, hi in intervals)


def format_time(value: dt.datetime) -> str:
    """A TIME value as WMS capabilities list it: ISO 8601 UTC with milliseconds."""
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
