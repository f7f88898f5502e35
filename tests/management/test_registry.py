"""Command options: one declaration parsed from a job's args/kwargs, shown as help."""

from __future__ import annotations

import pytest

from cartotheca.errors import InvalidInput, NotFound
from cartotheca.management.commands import COMMANDS, get_command


def test_args_and_kwargs_become_options():
    sync = COMMANDS["sync_datasets"]
    assert sync.parse([], {}) == {"filter": [], "skip_thumbnails": False}
    assert sync.parse(["-f", "geonode:a", "--filter", "b", "--skip-thumbnails"], {}) == {
        "filter": ["geonode:a", "b"], "skip_thumbnails": True}
    # kwargs by option name (as Django's call_command takes them) win over args
    assert sync.parse(["-f", "a"], {"filter": "c", "skip_thumbnails": True}) == {
        "filter": ["c"], "skip_thumbnails": True}
    purge = COMMANDS["purge_executions"]
    assert purge.parse([], {}) == {"days": 30}
    assert purge.parse(["--days", 7], {}) == {"days": 7}
    assert purge.parse([], {"days": "3"}) == {"days": 3}


@pytest.mark.parametrize("args, kwargs, message", [
    (["--help"], {}, 'Forbidden argument: "--help"'),
    (["-h"], {}, 'Forbidden argument: "--help"'),
    (["--days"], {}, "argument --days: expected one argument"),
    (["extra"], {}, "unrecognized arguments: extra"),
    ([["nested"]], {}, "args must be a list of strings"),
    ([], {"days": 1.5}, "--days: expected an integer"),
    ([], {"days": -2}, "--days: must be 0 or more"),
    ([], {"hours": 1}, "Unknown option for purge_executions: hours"),
])
def test_bad_options_are_refused(args, kwargs, message):
    with pytest.raises(InvalidInput) as caught:
        COMMANDS["purge_executions"].parse(args, kwargs)
    assert caught.value.message.startswith(message)


def test_help_is_the_parsers():
    text = COMMANDS["sync_datasets"].help_text()
    assert text.startswith("usage: cartotheca sync_datasets [-h] [-f NAME] [--skip-thumbnails]")
    assert "feature count, extent, attribute statistics and thumbnail" in text


def test_every_command_has_an_app_and_help():
    assert list(COMMANDS) == ["sync_datasets", "rebuild_index", "purge_executions", "send_notifications"]
    for command in COMMANDS.values():
        assert command.app_name.startswith("cartotheca.") and command.help
    with pytest.raises(NotFound):
        get_command("nosuch")
