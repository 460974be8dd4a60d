"""Giving memory back to the machine: large blocks in pages of their own, and what a
history read left free returned.

Reading a long history parses it in large chunks. glibc keeps what Python frees on its
heap for reuse and raises its own threshold for giving large blocks back, so after a
backfill the process holds tens of MB it no longer uses; on a GPU box that memory belongs
to training. Two calls hand it back:
- `keep_large_blocks_apart` (at the start of a command that stays up) fixes glibc's mmap
  threshold at 1 MB: every larger block (a numpy column, a chunk of the log) gets pages of
  its own, returned whole when freed, instead of a place on a heap that the next small
  objects pin. Read 100 000 steps × 60 metrics, the app held 115-135 MB by how the heap
  happened to fragment (7 runs: 115.7, 115.5, 134.5, 134.4, 134.7, 118.8, 118.5; peak
  160-167), and 113.5-113.8 MB with it (3 runs; peak 137-139), the history read as fast
  (bench/footprint.py --only rss). At 128 KB it held the same but `check` ran 11 % slower
  (1 MB: 7 %), so the one-off commands keep glibc's default;
- `release_free_memory` (`malloc_trim(0)`) once a history is in.
Other platforms' allocators behave differently: there both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache

#: mallopt's parameter for the mmap threshold (glibc's malloc.h)
_M_MMAP_THRESHOLD = -3
#: fixed: glibc would raise its threshold (from 128 KB up to 32 MB) as mapped blocks are freed
MMAP_THRESHOLD = 1 << 20


@cache
def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    # musl and others have neither
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


def keep_large_blocks_apart() -> None:
    """Blocks from `MMAP_THRESHOLD` on in pages of their own (glibc); else a no-op."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def release_free_memory() -> None:
    """Return the heap's free memory to the OS (glibc); a no-op where that is not possible."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
