"""Bounding glibc's allocator arenas in server processes and their children, and handing free
memory back to the system."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from cartotheca import memory

ARENAS_PROBE = """
import ctypes, ctypes.util, subprocess, sys, tempfile, threading
from cartotheca import memory

if sys.argv[1] == "limit":
    memory.limit_allocator_arenas()

together = threading.Barrier(12)

def allocate():  # twelve threads alive at once, each allocating: one arena each if allowed
    kept = [bytearray(1000) for _ in range(200)]
    together.wait()
    kept += [bytearray(1000) for _ in range(2000)]

threads = [threading.Thread(target=allocate) for _ in range(12)]
for t in threads:
    t.start()
for t in threads:
    t.join()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.fopen.restype = ctypes.c_void_p
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    stream = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    heaps = open(out.name).read().count("<heap nr=")
child = subprocess.run(
    [sys.executable, "-c", "import os; print(os.environ.get('MALLOC_ARENA_MAX'))"],
    capture_output=True, text=True).stdout.strip()
print(heaps, child)
"""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")


def _probe(mode: str, **env: str) -> tuple[int, str]:
    environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | env
    out = subprocess.run([sys.executable, "-c", ARENAS_PROBE, mode], env=environ,
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), out[1]


def test_server_threads_share_two_arenas_and_children_inherit_the_limit():
    unbounded, _ = _probe("none")
    bounded, child = _probe("limit")
    assert unbounded > 4  # the probe's threads do get arenas of their own without the limit
    assert bounded <= 2
    assert child == "2"


def test_an_operators_arena_setting_is_kept():
    _, child = _probe("limit", MALLOC_ARENA_MAX="4")
    assert child == "4"


RELEASE_PROBE = """
import os, time
from cartotheca import memory

def resident_mib():
    return int(open(f"/proc/{os.getpid()}/statm").read().split()[1]) * 4096 / 2**20

# 200 MB in 1 kB blocks (glibc's heap, not Python's small-object arenas), one in a hundred kept:
# the kept blocks pin the freed ones between them, so freeing alone returns nothing.
kept, dropped = [], []
for i in range(200_000):
    (kept if i % 100 == 0 else dropped).append(bytes(1024 + i % 7))
dropped.clear()
freed = resident_mib()
releaser = memory.FreeMemoryReleaser(0.2)
releaser.start()
time.sleep(1.0)
releaser.stop()
print(freed, resident_mib())
"""


def test_free_memory_goes_back_to_the_system():
    out = subprocess.run([sys.executable, "-c", RELEASE_PROBE], capture_output=True, text=True,
                         check=True).stdout.split()
    freed, released = float(out[0]), float(out[1])
    assert freed > 150  # the freed blocks are still resident before the releaser runs
    assert released < freed - 120


def test_releaser_turned_off():
    releaser = memory.FreeMemoryReleaser(0)
    releaser.start()
    assert not any(t.name == "memory-release" for t in threading.enumerate())
    releaser.stop()
