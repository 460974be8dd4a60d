"""Memory handed back to the machine: glibc's large blocks kept in pages of their own."""

from __future__ import annotations

import subprocess
import sys

import pytest

# In a fresh interpreter (the test process's allocator is left as it is): a 4 MB block is
# allocated and freed twice, and each time mallinfo2 says whether it got pages of its own.
_PROBE = """
import ctypes, ctypes.util, sys
libc = ctypes.CDLL(ctypes.util.find_library("c"))
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "apart":
    from grpo_tui.run.memory import keep_large_blocks_apart
    keep_large_blocks_apart()
for _ in range(2):
    before = libc.mallinfo2().hblks
    block = libc.malloc(4 << 20)
    print(libc.mallinfo2().hblks - before, end=" ")
    libc.free(block)
"""


def _mapped(mode: str) -> list[int]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True
    )
    return [int(word) for word in out.stdout.split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
class TestLargeBlocksApart:
    """keep_large_blocks_apart stops glibc from moving freed large blocks onto its heap."""

    def test_glibc_alone_puts_the_second_block_on_the_heap(self) -> None:
        """Without it, freeing a mapped block raises the threshold past its size."""
        assert _mapped("default") == [1, 0]

    def test_every_large_block_gets_pages_of_its_own(self) -> None:
        """With it, the second 4 MB block is mapped (and unmapped when freed) too."""
        assert _mapped("apart") == [1, 1]
