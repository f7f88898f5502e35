"""cartotheca.memory: keeping a long-running process's resident memory from creeping up.

glibc's allocator gives each thread that contends for a lock an arena of its own, up to eight
per core, and memory freed in an arena stays with it. A server process runs an event loop, a
thread pool of 40 and a few background threads, so its freed memory ends up spread over many
arenas that each keep their high-water mark: the soaks saw resident memory still rising after
ten minutes. Two arenas keep the reuse high for a few percent of throughput (bench/RESULTS.md,
"Soak").

Even in few arenas, what is freed stays resident when a live allocation sits above it: a
request's transient peak (a large SQLite sort, a GDAL read, a rendered image) raised the
process's resident memory for good, so it crept up with each new peak. glibc's ``malloc_trim``
hands every whole free page back to the system; a background thread calls it now and then.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import threading

logger = logging.getLogger(__name__)

ALLOCATOR_ARENAS = 2
# mallopt's parameter number for the arena limit (glibc's malloc.h).
M_ARENA_MAX = -8


def limit_allocator_arenas(arenas: int = ALLOCATOR_ARENAS) -> None:
    """Bound glibc's arenas in this process and in the processes it starts.

    An operator's own ``MALLOC_ARENA_MAX`` is left as it is. Child processes read the variable
    when they start; this process has already started, so it is told through ``mallopt``, which
    takes effect for arenas not yet made: call this before the server starts its threads.
    Elsewhere than glibc nothing is done.
    """
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    mallopt = getattr(_libc(), "mallopt", None)
    if mallopt is None:
        return
    os.environ["MALLOC_ARENA_MAX"] = str(arenas)
    if not mallopt(M_ARENA_MAX, arenas):
        logger.debug("mallopt refused the arena limit")


@functools.cache
def _libc() -> ctypes.CDLL | None:
    # Looked up once: find_library runs ldconfig in a subprocess.
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


def release_free_memory() -> bool:
    """Return the allocator's free pages to the system; False where that is not glibc."""
    libc = _libc()
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return False
    trim(0)
    return True


class FreeMemoryReleaser:
    """A daemon thread that calls :func:`release_free_memory` every ``interval`` seconds
    (``MEMORY_RELEASE_INTERVAL``; 0 turns it off). Each call walks the free lists of the two
    arenas, a few milliseconds on a server process."""

    def __init__(self, interval: float):
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.interval <= 0 or not release_free_memory():
            return
        self._thread = threading.Thread(target=self._run, name="memory-release", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            release_free_memory()
