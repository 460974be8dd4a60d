"""Giving memory back to the machine once a history is read.

Reading a long history parses it in large chunks. glibc keeps what Python frees on its
heap for reuse and raises its own threshold for giving large blocks back, so after a
backfill the process holds tens of MB it no longer uses; on a GPU box that memory belongs
to training. `malloc_trim(0)` returns it. Other platforms' allocators behave differently:
there this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable
from functools import cache


@cache
def _trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        return None
    return trim


def release_free_memory() -> None:
    """Return the heap's free memory to the OS (glibc); a no-op where that is not possible."""
    trim = _trim()
    if trim is not None:
        trim(0)
