"""cartotheca.memory: keeping a long-running process's resident memory from creeping up.

glibc's allocator gives each thread that contends for a lock an arena of its own, up to eight
per core, and memory freed in an arena stays with it. A server process runs an event loop, a
thread pool of 40 and a few background threads, so its freed memory ends up spread over many
arenas that each keep their high-water mark: the soaks saw resident memory still rising after
ten minutes. Two arenas keep the reuse high for a few percent of throughput (bench/RESULTS.md,
"Soak").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

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
    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return
    os.environ["MALLOC_ARENA_MAX"] = str(arenas)
    if not mallopt(M_ARENA_MAX, arenas):
        logger.debug("mallopt refused the arena limit")
