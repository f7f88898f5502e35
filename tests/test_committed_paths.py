"""No committed file names a folder of one machine: docs and code refer to the shared notes as
``../shared/...`` (relative to the project) and to data through settings or arguments."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MACHINE_PATH = re.compile(r"(?<![\w.:/~])/(?:work|home|Users)/\w")
# Built or vendored files are not written by hand.
GENERATED = ("cartotheca/web/static/", "tests/web/vendor/", "frontend/package-lock.json")


def _committed_files() -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                                check=True, timeout=60)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [name for name in listed.stdout.splitlines() if not name.startswith(GENERATED)]


def test_no_committed_file_names_a_machine_path():
    found = []
    for name in _committed_files():
        path = ROOT / name
        if not path.is_file() or path == Path(__file__).resolve():
            continue  # deleted in the working tree, or this file's own examples
        text = path.read_bytes()[:2_000_000].decode("utf-8", errors="ignore")
        found += [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
                  for m in MACHINE_PATH.finditer(text)]
    assert found == []


def test_the_pattern_finds_machine_paths():
    assert MACHINE_PATH.search("see `/work/shared/compat/notes.md`")
    assert MACHINE_PATH.search('Path("/home/ana/data")')
    assert not MACHINE_PATH.search("see `../shared/compat/notes.md` or https://example.org/work/x")
