"""cartotheca.management.commands: the management commands exposed over HTTP and as CLI subcommands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session

from cartotheca.errors import NotFound
from cartotheca.management.maintenance import PURGE_EXECUTIONS, REBUILD_INDEX, SEND_NOTIFICATIONS
from cartotheca.management.registry import Command, CommandRun
from cartotheca.management.sync_datasets import COMMAND as SYNC_DATASETS
from cartotheca.settings import Settings

COMMANDS: dict[str, Command] = {c.name: c for c in (
    SYNC_DATASETS, REBUILD_INDEX, PURGE_EXECUTIONS, SEND_NOTIFICATIONS,
)}


def get_command(name: str | None) -> Command:
    command = COMMANDS.get(name or "")
    if command is None:
        raise NotFound("Command not found")
    return command


def run_now(name: str, session: Session, settings: Settings, kwargs: dict[str, Any],
            write: Callable[[str], None]) -> None:
    """Run a command in this process (the CLI), with the same option checks as a job."""
    command = get_command(name)
    command.run(CommandRun(session, settings, write=write), command.parse([], kwargs))
