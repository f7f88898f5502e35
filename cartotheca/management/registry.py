"""cartotheca.management.registry: what a management command is, its options, help and argument parsing.

A command declares its options once; the same declaration gives the ``argparse`` parser used
for a job's ``args``/``kwargs`` (and its help text, as GeoNode shows a Django command's
``--help``) and the click options of the ``cartotheca <command>`` subcommand.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from cartotheca.errors import InvalidInput
from cartotheca.settings import Settings


class Stopped(Exception):
    """Raised at a checkpoint when the job was asked to stop."""


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]  # ("-f", "--filter")
    dest: str
    help: str
    type: type = str  # str or int; flags are bool
    default: Any = None
    multiple: bool = False
    flag: bool = False
    metavar: str | None = None
    minimum: int | None = None  # int options: the smallest value accepted


@dataclass
class CommandRun:
    """What a running command gets: a session (it commits its own steps), the settings, where
    to write its report, and a checkpoint to call between steps (it records the step and raises
    ``Stopped`` when the job was asked to stop; the step in progress is then rolled back)."""

    session: Session
    settings: Settings
    write: Callable[[str], None]
    checkpoint: Callable[[str], None] = field(default=lambda _step: None)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print and exit the process
        raise InvalidInput(message)


@dataclass(frozen=True)
class Command:
    name: str
    app_name: str
    help: str
    run: Callable[[CommandRun, dict[str, Any]], None]
    options: tuple[Option, ...] = ()

    def parser(self) -> argparse.ArgumentParser:
        parser = _Parser(prog=f"cartotheca {self.name}", description=self.help, add_help=True)
        for option in self.options:
            if option.flag:
                parser.add_argument(*option.flags, dest=option.dest, action="store_true", help=option.help)
            else:
                parser.add_argument(*option.flags, dest=option.dest, type=option.type,
                                    action="append" if option.multiple else "store",
                                    default=None if option.multiple else option.default,
                                    metavar=option.metavar, help=option.help)
        return parser

    def help_text(self) -> str:
        return self.parser().format_help()

    def parse(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The options of one run from positional ``args`` (command-line words) and ``kwargs``
        (option values by name, as Django's call_command takes them); kwargs win."""
        if "--help" in args or "-h" in args:
            raise InvalidInput('Forbidden argument: "--help"')
        words = [str(a) if isinstance(a, (int, float)) and not isinstance(a, bool) else a for a in args]
        if not all(isinstance(w, str) for w in words):
            raise InvalidInput("args must be a list of strings")
        values = vars(self.parser().parse_args(words))
        by_name = {o.dest: o for o in self.options}
        by_name.update({flag.lstrip("-").replace("-", "_"): o for o in self.options for flag in o.flags})
        for key, value in kwargs.items():
            option = by_name.get(key)
            if option is None:
                raise InvalidInput(f"Unknown option for {self.name}: {key}")
            values[option.dest] = _coerce(option, value)
        for option in self.options:
            if option.multiple and values.get(option.dest) is None:
                values[option.dest] = list(option.default or [])
            value = values.get(option.dest)
            if option.minimum is not None and value is not None and value < option.minimum:
                raise InvalidInput(f"{option.flags[-1]}: must be {option.minimum} or more")
        return values


def _coerce(option: Option, value: Any) -> Any:
    name = option.flags[-1]
    if option.flag:
        if not isinstance(value, bool):
            raise InvalidInput(f"{name}: expected true or false")
        return value
    items = value if option.multiple and isinstance(value, list) else [value]
    out = []
    for item in items:
        if option.type is int:
            if isinstance(item, bool) or not isinstance(item, (int, str)):
                raise InvalidInput(f"{name}: expected an integer")
            try:
                item = int(item)
            except ValueError:
                raise InvalidInput(f"{name}: expected an integer") from None
        elif not isinstance(item, str):
            raise InvalidInput(f"{name}: expected a string")
        out.append(item)
    return out if option.multiple else out[0]
