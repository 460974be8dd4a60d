"""Opening the files of a run: regular files only, never blocking, errors said in words.

Everything that reads a run's files (logs, args, trainer_state.json, a rules file) opens
them here. A FIFO, device or socket with a log's name would block `open` or `read` forever,
so files are opened with O_NONBLOCK (which regular files ignore) and anything that is not
a regular file is refused with a reason. `describe_os_error` turns an OSError into the one
line a user sees ("permission denied: PATH").
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

#: what some editors and Windows tools put before the first line of a UTF-8 file
UTF8_BOM = b"\xef\xbb\xbf"
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFile(OSError):
    """The path names something other than a regular file (reading it could block forever)."""


def file_kind(mode: int) -> str:
    """What a stat mode names, in words ("a FIFO"); "a regular file" for one."""
    for test, words in _FILE_KINDS:
        if test(mode):
            return words
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file for reading without ever blocking. Raises NotRegularFile for a
    FIFO, device, socket or directory (O_NONBLOCK makes opening a FIFO return at once;
    regular files ignore the flag), and OSError as `open` does otherwise."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"not a regular file ({file_kind(mode)})", str(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def describe_os_error(error: OSError, path: Path | str) -> str:
    """One line for a file that cannot be read: "permission denied: PATH", ..."""
    if isinstance(error, NotRegularFile):
        return f"{error.strerror}, skipped: {path}"
    if isinstance(error, PermissionError):
        return f"permission denied: {path}"
    if error.errno == errno.ELOOP:
        return f"symlink loop: {path}"
    if error.errno == errno.ENXIO:
        return f"not a regular file (a socket), skipped: {path}"
    reason = error.strerror or type(error).__name__
    return f"cannot read ({reason.lower()}): {path}"


def read_regular(path: Path) -> bytes:
    """The whole content of a regular file (see `open_regular`)."""
    with open_regular(path) as handle:
        return handle.read()
