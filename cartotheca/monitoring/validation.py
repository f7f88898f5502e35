"""cartotheca.monitoring.validation: form-style input checks that report per field.

The monitoring API answers invalid input the way GeoNode's Django forms do: an object of
field name → list of messages, so errors are collected rather than raised one at a time.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any

from cartotheca import timeutil
from cartotheca.errors import InvalidInput, NotFound

REQUIRED = "This field is required."
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$|^[^@\s]+@localhost$")
DURATION = re.compile(
    r"^(?:(?P<days>-?\d+) )?(?:(?P<hours>\d+):)?(?P<minutes>\d+):(?P<seconds>\d+(?:\.\d+)?)$")
TRUE, FALSE = ("true", "1", "on", "yes"), ("false", "0", "off", "no", "")


class FieldErrors(InvalidInput):
    """Invalid input, as field name → messages."""

    def __init__(self, fields: dict[str, list[str]]):
        first = next(iter(fields.items()), ("", [""]))
        super().__init__(f"{first[0]}: {first[1][0]}" if first[0] else "Invalid input.")
        self.fields = fields


class MissingObject(NotFound):
    """A named object does not exist; reported under its field like a validation error."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.fields = {field: [message]}


class Form:
    """Collects the errors of one submitted form."""

    def __init__(self, data: Mapping[str, Any]):
        self.data = data
        self.errors: dict[str, list[str]] = {}

    def error(self, name: str, message: str) -> None:
        self.errors.setdefault(name, []).append(message)

    def raw(self, name: str) -> Any:
        value = self.data.get(name)
        if isinstance(value, list):  # a repeated form key: the last one wins (Django)
            value = value[-1] if value else None
        return value

    def given(self, name: str) -> bool:
        value = self.raw(name)
        return value is not None and value != ""

    def text(self, name: str, *, required: bool = False, max_length: int | None = None) -> str | None:
        value = self.raw(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                self.error(name, REQUIRED)
            return None
        value = str(value).strip()
        if max_length and len(value) > max_length:
            self.error(name, f"Ensure this value has at most {max_length} characters "
                             f"(it has {len(value)}).")
        return value

    def choice(self, name: str, choices: tuple[str, ...] | dict, default: str | None = None) -> str | None:
        value = self.text(name)
        if value is None:
            return default
        if value not in choices:
            self.error(name, f"Select a valid choice. {value} is not one of the available choices.")
            return default
        return value

    def integer(self, name: str, *, minimum: int | None = None,
                maximum: int = 2**63 - 1) -> int | None:
        value = self.raw(name)
        if value is None or value == "":
            return None
        try:
            number = int(str(value).strip())
        except ValueError:
            self.error(name, "Enter a whole number.")
            return None
        if minimum is not None and number < minimum:
            self.error(name, f"Ensure this value is greater than or equal to {minimum}.")
            return None
        if number > maximum:
            self.error(name, f"Ensure this value is less than or equal to {maximum}.")
            return None
        return number

    def number(self, name: str, *, minimum: float | None = None,
               maximum: float | None = None) -> float | None:
        value = self.raw(name)
        if value is None or value == "":
            return None
        number = to_number(value)
        if number is None:
            self.error(name, "Enter a number.")
            return None
        if minimum is not None and number < minimum:
            self.error(name, f"Ensure this value is greater than or equal to {minimum:g}.")
        elif maximum is not None and number > maximum:
            self.error(name, f"Ensure this value is less than or equal to {maximum:g}.")
        return number

    def boolean(self, name: str) -> bool | None:
        value = self.raw(name)
        if value is None:
            return None
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in TRUE or text in FALSE:
            return text in TRUE
        self.error(name, f"Invalid {name} value {value}")
        return None

    def timestamp(self, name: str) -> dt.datetime | None:
        value = self.text(name)
        if value is None:
            return None
        parsed = timeutil.read_datetime(value, form=True)
        if parsed is None:
            self.error(name, "Enter a valid date/time.")
        return parsed

    def duration(self, name: str) -> int | None:
        """Seconds, from ``[DD ]HH:MM:SS`` or a plain number of seconds."""
        value = self.text(name)
        if value is None:
            return None
        seconds = parse_duration(value)
        if seconds is None:
            self.error(name, "Enter a valid duration.")
        return seconds

    def emails(self, name: str) -> list[str] | None:
        value = self.raw(name)
        if value is None:
            return None
        items = value if isinstance(value, list) else re.split(r"[\n\r,;]+", str(value))
        addresses = [str(a).strip() for a in items if str(a).strip()]
        for address in addresses:
            if not EMAIL.match(address):
                self.error(name, f"{address} is not a valid email address.")
        return list(dict.fromkeys(addresses))

    def check(self) -> None:
        if self.errors:
            raise FieldErrors(self.errors)


def to_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip()) if not isinstance(value, (int, float)) else float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


# The longest duration accepted (100 years): longer ones overflow datetime arithmetic.
MAX_DURATION_SECONDS = 100 * 366 * 86400


def parse_duration(value: str) -> int | None:
    try:
        seconds = _duration_seconds(value)
    except OverflowError:  # hundreds of digits make an infinite float
        return None
    return seconds if seconds is None or seconds <= MAX_DURATION_SECONDS else None


def _duration_seconds(value: str) -> int | None:
    text = value.strip()
    if re.fullmatch(r"\d{1,20}(?:\.\d+)?", text):
        return int(float(text))
    match = DURATION.match(text)
    if not match:
        return None
    parts = {k: float(v) for k, v in match.groupdict().items() if v}
    return int(parts.get("days", 0) * 86400 + parts.get("hours", 0) * 3600
               + parts.get("minutes", 0) * 60 + parts.get("seconds", 0))
