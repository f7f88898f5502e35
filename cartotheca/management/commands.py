"""cartotheca.management.commands: the management commands exposed over HTTP and as CLI subcommands."""

from __future__ import annotations

from cartotheca.errors import NotFound
from cartotheca.management.maintenance import PURGE_EXECUTIONS, REBUILD_INDEX, SEND_NOTIFICATIONS
from cartotheca.management.registry import Command
from cartotheca.management.sync_datasets import COMMAND as SYNC_DATASETS

COMMANDS: dict[str, Command] = {c.name: c for c in (
    SYNC_DATASETS, REBUILD_INDEX, PURGE_EXECUTIONS, SEND_NOTIFICATIONS,
)}


def get_command(name: str | None) -> Command:
    command = COMMANDS.get(name or "")
    if command is None:
        raise NotFound("Command not found")
    return command
