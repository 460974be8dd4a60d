"""Opening the files of a run: regular files only, never blocking, errors said in words.

Everything that reads a run's files (logs, args, trainer_state.json, a rules file) opens
them here. A FIFO, device or socket with a log's name would block `open` or `read` forever,
so files are opened with O_NONBLOCK (which regular files ignore) and anything that is not
a regular file is refused with a reason. `describe_os_error` turns an OSError into the one
line a user sees ("permission denied: PATH").

A run on another machine is read through the same functions: a path whose first part is
a mounted name (`node1:` in `node1:/runs/x`, see sources/remote/) is handed to that
mount's `FileSystem` (stat, list, open), everything else to the OS. `Path(...)` and
`os.DirEntry.path` strings round-trip such a path, so adapters and readers pass it on
like any other; a call straight to `os` on one finds nothing (a relative path no local
folder has), never another machine's file.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

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
    regular = "a regular file" if stat.S_ISREG(mode) else "not a regular file"
    return next((words for test, words in _FILE_KINDS if test(mode)), regular)


def check_regular(mode: int, path: Path | str) -> None:
    """Raise NotRegularFile unless `mode` (of `path`) is a regular file's."""
    if not stat.S_ISREG(mode):
        raise NotRegularFile(errno.EINVAL, f"not a regular file ({file_kind(mode)})", str(path))


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file for reading without ever blocking. Raises NotRegularFile for a
    FIFO, device, socket or directory (O_NONBLOCK makes opening a FIFO return at once;
    regular files ignore the flag), and OSError as `open` does otherwise. A mounted path
    is opened by its file system, under the same rules."""
    filesystem = mounted(path)
    if filesystem is not None:
        return filesystem.open(path)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        check_regular(os.fstat(fd).st_mode, path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


#: how a transport error that will be retried starts (the header shows it as the state)
RECONNECTING = "RECONNECTING "


class TransportError(OSError):
    """A remote file's machine could not be asked (the connection, not the file): the
    message is the whole line a user sees ("RECONNECTING node1 (3rd try): connection
    refused"). `kind` says which ("unreachable", "dropped", "auth", "host-key")."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(errno.EHOSTUNREACH, message)
        self.kind = kind


#: transport failures so far (discovery compares before and after: a layout found while
#: the connection broke is no answer about the run)
_TRANSPORT_FAILURES = [0]


def note_transport_failure() -> None:
    """A remote file system saw its connection fail."""
    _TRANSPORT_FAILURES[0] += 1


def transport_failures() -> int:
    """How many transport failures were noted so far."""
    return _TRANSPORT_FAILURES[0]


class DirEntryLike(Protocol):
    """What a directory listing gives per entry: os.DirEntry's part the readers use."""

    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str: ...
    def is_dir(self) -> bool: ...
    def is_file(self) -> bool: ...
    def is_symlink(self) -> bool: ...
    def stat(self) -> os.stat_result: ...


class FileSystem(Protocol):
    """Where a mounted path's files are read (a remote machine): the few operations the
    readers use, each raising OSError as `os` would (FileNotFoundError, PermissionError,
    NotRegularFile), or TransportError when the machine cannot be asked."""

    def stat(self, path: Path) -> os.stat_result:
        """`os.stat` (links followed)."""
        ...

    def scandir(self, path: Path) -> Sequence[DirEntryLike]:
        """The directory's entries (`.` and `..` left out); `entry.path` names each as
        a path of this mount."""
        ...

    def open(self, path: Path) -> BinaryIO:
        """A regular file opened for reading (seek and read); `fstat` answers its stat
        as it was when opened. Raises NotRegularFile for anything else."""
        ...

    @property
    def failure(self) -> TransportError | None:
        """Why the machine cannot be asked right now (None while it can)."""
        ...


_MOUNTS: dict[str, FileSystem] = {}


def mount(name: str, filesystem: FileSystem) -> None:
    """Paths whose first part is `name` are read through `filesystem` from now on."""
    _MOUNTS[name] = filesystem


def mounted(path: Path | str) -> FileSystem | None:
    """The file system a mounted path is read through, None for a local path."""
    if not _MOUNTS:
        return None
    parts = Path(path).parts
    return _MOUNTS.get(parts[0]) if parts and parts[0] != "/" else None


def stat_path(path: Path) -> os.stat_result:
    """`os.stat`, for local and mounted paths alike."""
    filesystem = mounted(path)
    return os.stat(path) if filesystem is None else filesystem.stat(path)


def scandir(path: Path) -> Sequence[DirEntryLike]:
    """A directory's entries, local or mounted (raises OSError as `os.scandir` does)."""
    filesystem = mounted(path)
    if filesystem is not None:
        return filesystem.scandir(path)
    with os.scandir(path) as entries:
        return list(entries)


def lexists(path: Path) -> bool:
    """`os.path.lexists`, for local and mounted paths alike (False when it cannot be told)."""
    filesystem = mounted(path)
    if filesystem is None:
        return os.path.lexists(path)
    try:
        filesystem.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # there, but not to be looked at (permission, the connection)
    return True


def fstat(handle: BinaryIO) -> os.stat_result:
    """The stat of an open file (a mounted file's: as it was when opened)."""
    known = getattr(handle, "opened_stat", None)
    return known if isinstance(known, os.stat_result) else os.fstat(handle.fileno())


def describe_os_error(error: OSError, path: Path | str) -> str:
    """One line for a file that cannot be read: "permission denied: PATH", ..."""
    if isinstance(error, TransportError):
        return str(error.strerror)
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
