"""trackio's local store as a record store: one run's metrics rows, read as trackio writes them.

trackio (`report_to="trackio"`) keeps one SQLite database per project, `<project>.db` in
`$TRACKIO_DIR` (else `$HF_HOME/trackio`). Its `metrics` table holds one row per
`trackio.log` call: an AUTOINCREMENT `id`, the run (`run_id`, `run_name`), trackio's own
call counter `step`, and the logged dict as JSON (`metrics`). The training process queues
rows and writes them every 0.5 s, each time through a new connection it closes again, in
WAL mode. Rows are read in `id` order past the last one examined, so each poll returns
only new rows, each once. transformers' TrackioCallback logs without a step and adds
`train/global_step`: when present that is the record's step (trackio's counter counts log
calls, evals included). `train/` is removed and `eval/` becomes `eval_` (its `rewrite_logs`
undone); tables, media and histograms are dropped: they are not numbers.

Reading never writes, locks or creates anything beside trackio's files, through one short
connection per poll (no lock outlives a poll; trackio's closing connection still
checkpoints and removes its `-wal`/`-shm`). While those two files exist (trackio
mid-write, a dashboard holding the database open) the database is opened `mode=ro` with
`readonly_shm=1`: read through the WAL, not even SQLite's read marks written. While they
do not (the database at rest: most of the time) a `mode=ro` connection would create them
(a 0-byte `-wal`, a 32 KiB `-shm`: changes in the run folder, events that wake the reader
again, files owned by the reader beside another user's database), so it is opened
`mode=ro&immutable=1`: the file opened read-only, nothing created, no lock taken. Such a read could see a write
that began meanwhile half done, so it counts only if the database is still at rest after
it (same file, size and times, no `-wal`); else nothing is taken and it is read again.

On a network filesystem trackio does not write the database: each flush becomes an
immutable JSONL fragment, `inbox/<writer>/<seq>.jsonl` beside the databases (a writer
folder per run), which only a trackio dashboard or Space imports into the database, then
deletes. Those fragments are read too, each once; the rows an import adds to the database
later are recognised by their `log_id` and not handed out twice.

Which run: the newest (whose first row is last), or the newest run of a given name. A run
that starts later (and has that name, when one is given) is followed from its first row,
with `restarted`. trackio's `resume="allow"` (transformers uses it) continues the same run:
not a restart.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from contextlib import closing, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from grpo_tui.files import check_regular, describe_os_error, mounted
from grpo_tui.sources.formats.trackio import DB_SUFFIX
from grpo_tui.sources.polled import PolledRecords
from grpo_tui.sources.records import BadLine
from grpo_tui.sources.trackio_inbox import (
    Fragment,
    WriterFolder,
    inbox_runs,
    writer_dirs,
)

#: a trackio project on another machine: its SQLite database cannot be read a range at a
#: time over a shell (and a copy of a live database with its -wal is not a consistent one)
REMOTE_TRACKIO = (
    "a trackio database is read with SQLite, which needs the file on this machine: "
    "run grpo-tui there, or mount its folder here (sshfs) and give that path: {path}"
)
#: rows (and inbox records) read per poll at most: a bite of GRPO rows (~30 metrics each)
#: takes ~0.25 s, most of it turning JSON into records; a backlog follows with `more`
MAX_ROWS_PER_POLL = 20_000
INBOX = "inbox"
#: where transformers' TrackioCallback puts the trainer's step (trackio's own counts calls)
_GLOBAL_STEP = "train/global_step"
#: the strings trackio stores for non-finite floats (JSON has no literal for them)
_NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
#: SQLite's primary result codes that mean "not now": a writer mid-commit (BUSY 5, LOCKED
#: 6), a wal-index being rebuilt (READONLY 8, PROTOCOL 15), a -wal or -shm going between
#: the look and the open (CANTOPEN 14). Numbers: Python 3.10 has no sqlite3.SQLITE_BUSY.
_NOT_NOW = {5, 6, 8, 14, 15}
#: the "locked" ones: BUSY, LOCKED
_LOCKED = {5, 6}
_BUSY_TIMEOUT = 0.1  # seconds SQLite waits on a lock before answering busy
#: SQLite's lock bytes in a database file (os_unix.c: PENDING_BYTE, then RESERVED, then
#: 510 SHARED bytes); a writer's EXCLUSIVE lock is a write lock on the SHARED range
_LOCK_BYTES = (0x40000000, 0x40000000 + 2 + 510)
_LOCKS = Path("/proc/locks")
#: consecutive "not now" answers before a poll says so (a crashed writer's hot journal)
_PATIENCE = 5
#: reads of a database at rest that trackio writes meanwhile before list_runs gives up
_AT_REST_TRIES = 3
_IN_CHUNK = 500  # log ids per `IN (...)` lookup


def list_runs(db_path: Path) -> list[str]:
    """A project's run names, oldest first: by their first database row, then the runs
    found only in the inbox by their first fragment. Raises OSError, sqlite3.Error or
    NotTrackio when the database cannot be read (a live view polls `TrackioStore`, which
    never raises)."""
    project = db_path.name.removesuffix(DB_SUFFIX)
    inbox = inbox_runs(db_path.parent / INBOX, project)
    runs: dict[str, tuple[str, int]] = {}
    if os.path.lexists(db_path):
        for attempt in range(_AT_REST_TRIES):
            info = _check_files(db_path)
            mode = _read_mode(db_path)
            with closing(_connect(db_path, mode)) as conn:
                schema = _Schema.of(conn)
                if schema is not None:
                    runs = _database_runs(conn, schema)
            if mode != _AT_REST or _still_at_rest(db_path, info) or attempt == _AT_REST_TRIES - 1:
                break
    in_database = sorted(runs.values(), key=lambda run: run[1])
    inbox_only = sorted(
        (run for key, run in inbox.items() if key not in runs), key=lambda run: run[1]
    )
    return [name for name, _ in in_database + inbox_only]


class TrackioStore:
    """A trackio project's database (and inbox): one run of it followed row by row."""

    def __init__(
        self, path: Path, run_name: str | None = None, *, max_rows: int = MAX_ROWS_PER_POLL
    ) -> None:
        #: the project's database, `<trackio dir>/<project>.db` (it may not exist yet)
        self.path = path
        #: the run asked for by name; None follows the newest run
        self.run_name = run_name
        self._max_rows = max_rows
        self._project = path.name.removesuffix(DB_SUFFIX)
        self._inbox = path.parent / INBOX
        self._writers: dict[str, WriterFolder] = {}  # inbox folder name → what is known of it
        self._names: dict[str, str | None] = {}  # stored key → record key (None: the step)
        self._not_now = 0
        self._reset()

    def _reset(self) -> None:
        self._chosen = False  # the run to follow was chosen (it may not have a row yet)
        self._run: str | None = None  # its key: run_id, or run_name in old databases
        #: the name of the run followed, once there is one
        self.current_run: str | None = None
        self._handed_out = False  # records of the run followed were returned
        self._known: set[str] = set()  # every run key seen: one not seen is a newer run
        self._mark = 0  # the highest metrics id examined
        self._db_identity: tuple[int, int] | None = None
        self._pending: set[str] = set()  # log ids taken from the inbox, not in the db yet
        self._global_step: int | None = None
        for writer in self._writers.values():
            writer.taken.clear()

    # -- polling -----------------------------------------------------------------------
    def poll(self) -> PolledRecords:
        """Rows new since the last call (at most `max_rows`, `more` when others wait)."""
        result = PolledRecords()
        if mounted(self.path) is not None:
            result.problem = REMOTE_TRACKIO.format(path=self.path)
            return result
        try:
            db_stat: os.stat_result | None = _check_files(self.path)
        except FileNotFoundError:
            db_stat = None  # not created yet (or an inbox-only project)
        except OSError as error:
            result.problem = describe_os_error(error, error.filename or self.path)
            return result
        if db_stat is not None and self._db_identity not in (None, _identity(db_stat)):
            result.restarted = self._handed_out  # replaced: what follows is all new
            self._reset()
        try:
            fetched = self._fetch(db_stat)
        except NotTrackio as error:
            result.problem = f"not a trackio database ({error}): {self.path}"
            return result
        except sqlite3.Error as error:
            result.problem = self._sqlite_problem(error)
            return result
        except OSError as error:
            result.problem = describe_os_error(error, error.filename or self.path)
            return result
        self._not_now = 0
        if fetched.moved:
            result.more = True  # read again at once, through the -wal this time
        elif fetched.rebuilt:  # ids went back below the rows read: a rebuilt database
            result.restarted = result.restarted or self._handed_out
            result.more = True
            self._reset()
        else:
            self._take(fetched, result)
        result.run = self.current_run
        result.data_time = self._data_time(db_stat, fetched)
        return result

    def _sqlite_problem(self, error: sqlite3.Error) -> str | None:
        """What a failed read tells the user: nothing for "not now" (nothing was taken; the
        next poll reads it) unless it keeps happening, else the error."""
        code = getattr(error, "sqlite_errorcode", None)
        if isinstance(error, sqlite3.OperationalError) and (
            code is None or code & 0xFF in _NOT_NOW
        ):
            self._not_now += 1
            locked = code is not None and code & 0xFF in _LOCKED
            # still locked after the busy wait, by a process that holds the lock (or by a
            # writer keeping its WAL index in its own memory: a -wal without its -shm):
            # locking_mode=EXCLUSIVE, held as long as that process runs. Said at once,
            # tried again every poll (read-only: no lock that holds the writer up)
            holder = _lock_holder(self.path) if locked else None
            in_wal = locked and _wal_without_shm(self.path)
            if holder is None and not in_wal and self._not_now < _PATIENCE:
                return None
            if locked:
                return _locked_by(self.path, holder)
            return f"trackio's database stays unreadable ({error}): {self.path}"
        return f"cannot read trackio's database ({error}): {self.path}"

    def _data_time(self, db_stat: os.stat_result | None, fetched: _Fetched) -> float | None:
        times = [fragment.mtime for fragment in fetched.fragments]
        if db_stat is not None:
            times.append(db_stat.st_mtime)
            with suppress(OSError):
                times.append(os.stat(_sibling(self.path, "-wal")).st_mtime)
        return max(times, default=None)

    # -- reading: I/O only, nothing is taken until `_take` ------------------------------
    def _fetch(self, db_stat: os.stat_result | None) -> _Fetched:
        fetched = _Fetched()
        folders = self._scan_inbox()
        if db_stat is None:
            if not self._chosen:
                self._choose({}, 0)
            fetched.fragments = self._read_inbox(folders, self._max_rows)
            return fetched
        mode = _read_mode(self.path)
        # the choice of run a first read makes is undone with a read that does not count
        choice = (self._chosen, self._run, self.current_run, self._mark, set(self._known))
        with closing(_connect(self.path, mode)) as conn:
            schema = _Schema.of(conn)
            if schema is None:  # trackio is creating the tables
                return fetched
            top = conn.execute(f"SELECT MAX({schema.order}) FROM metrics").fetchone()[0] or 0
            if top < self._mark:
                fetched.rebuilt = True
                return fetched
            if not self._chosen:
                self._choose(_database_runs(conn, schema), top)
            fetched.rows = conn.execute(
                f"SELECT {schema.order}, {schema.key}, run_name, step, metrics, {schema.log_id} "
                f"FROM metrics WHERE {schema.order} > ? ORDER BY {schema.order} LIMIT ?",
                (self._mark, self._max_rows),
            ).fetchall()
            budget = self._max_rows - len(fetched.rows)
            fetched.fragments = self._read_inbox(folders, budget)
            ids = (entry.log_id for fragment in fetched.fragments for entry in fragment.entries)
            fetched.imported = _logged(conn, schema, ids)
        if mode == _AT_REST and not _still_at_rest(self.path, db_stat):
            # trackio wrote meanwhile: nothing taken, nothing chosen, read again
            self._chosen, self._run, self.current_run, self._mark, self._known = choice
            return _Fetched(moved=True)
        self._db_identity = _identity(db_stat)
        return fetched

    def _choose(self, database_runs: dict[str, tuple[str, int]], top: int) -> None:
        """Choose the run to follow, at the first read: the newest (or the newest of that
        name). Every run there now is known: a run not known later is a newer one."""
        runs = [(key, name, first - 1) for key, (name, first) in database_runs.items()]
        runs.sort(key=lambda run: run[2])
        for writer in sorted(self._writers.values(), key=lambda writer: writer.first_mtime):
            run = writer.run
            if writer.project == self._project and run is not None and run not in database_runs:
                runs.append((run, writer.run_name or run, top))
        self._known.update(run[0] for run in runs)
        if self.run_name is not None:
            runs = [run for run in runs if run[1] == self.run_name]
        self._chosen = True
        self._mark = top
        if runs:
            self._run, self.current_run, self._mark = runs[-1]

    def _scan_inbox(self) -> list[tuple[Path, WriterFolder, list[str]]]:
        """This project's inbox folders with their fragments (a folder's project and run
        are learnt once, from its first fragment)."""
        found: list[tuple[Path, WriterFolder, list[str]]] = []
        now = time.time_ns()
        for folder in writer_dirs(self._inbox):
            writer = self._writers.setdefault(folder.name, WriterFolder())
            if writer.project is not None and writer.project != self._project:
                continue
            names = writer.listing(folder, now)
            if writer.project is None:
                first = next(writer.readable(folder, names), None)
                if first is None:
                    continue
                writer.project, writer.run = first.project, first.run
                writer.run_name, writer.first_mtime = first.run_name, first.mtime
            if writer.project == self._project and writer.run is not None:
                found.append((folder, writer, names))
        found.sort(key=lambda item: item[1].first_mtime)
        return found

    def _read_inbox(
        self, folders: list[tuple[Path, WriterFolder, list[str]]], budget: int
    ) -> list[Fragment]:
        """The fragments not taken yet of the run followed, and the first of a run not
        known (it may be a newer run), within the poll's budget of records."""
        fragments: list[Fragment] = []
        for folder, writer, names in folders:
            if budget <= 0:
                break
            new_run = writer.run not in self._known
            if writer.run != self._run and not new_run:
                continue
            for fragment in writer.readable(folder, names):
                fragments.append(fragment)
                budget -= len(fragment.entries)
                if new_run or budget <= 0:
                    break
        return fragments

    # -- taking ----------------------------------------------------------------------------
    def _take(self, fetched: _Fetched, result: PolledRecords) -> None:
        records = result.records
        rows = fetched.rows or []
        for row_id, key, name, step, metrics, log_id in rows:
            if key not in self._known and not self._meet(key, name, result):
                return
            self._mark = row_id
            if key != self._run:
                continue
            if log_id is not None and log_id in self._pending:
                self._pending.discard(log_id)  # taken from the inbox before its import
                continue
            unused = self._append(records, step, _json(metrics))
            if unused is not None:
                excerpt = (metrics if isinstance(metrics, str) else repr(metrics))[:80]
                result.bad.append(BadLine(self.path.name, int(row_id), unused, excerpt))
        result.more = len(rows) >= self._max_rows
        for fragment in fetched.fragments:
            writer = self._writers[fragment.folder]
            run, followed = writer.run or "", self._run
            if run not in self._known and not self._meet(run, writer.run_name, result):
                return
            if self._run != followed:
                result.more = True  # the newer run's next fragments come with the next poll
            if run != self._run:
                continue
            writer.taken.add(fragment.name)
            for entry in fragment.entries:
                if entry.log_id is not None:
                    if entry.log_id in fetched.imported:
                        continue  # imported already: read from the database
                    self._pending.add(entry.log_id)
                unused = self._append(records, entry.step, entry.metrics)
                if unused is not None:
                    result.bad.append(BadLine(fragment.name, 0, unused, repr(entry.metrics)[:80]))
            if len(records) >= self._max_rows:
                result.more = True
                return

    def _meet(self, key: str, name: str | None, result: PolledRecords) -> bool:
        """A run not seen before is followed instead of the current one when it has the
        name asked for (or none was); False when the records taken so far go first (the
        newer run starts at the next poll)."""
        if self.run_name is None or name == self.run_name:
            if result.records:
                result.more = True
                return False
            result.restarted = result.restarted or self._handed_out
            self._run, self.current_run = key, name or key
            self._handed_out = False
            self._pending.clear()
            self._global_step = None
        self._known.add(key)
        return True

    def _append(self, records: list[dict[str, Any]], row_step: Any, metrics: Any) -> str | None:
        """A metrics row as a log dict: numbers only, TRL's key names, the trainer's step.
        A row without `train/global_step` (an eval of `trainer.predict`) takes the last one.
        Returns why the row cannot be used (None when it was, or holds no number)."""
        if not isinstance(metrics, dict):
            return "its metrics are not a JSON object"
        record: dict[str, Any] = {"step": None}
        names = self._names
        for stored, value in metrics.items():  # the hot loop: ~30 keys a row
            kind = type(value)
            if kind is str:
                value = _NON_FINITE.get(value)
                if value is None:
                    continue
            elif kind is not float and kind is not int:
                continue  # bool, None, a table, media, a histogram
            if stored not in names:
                names[stored] = _record_key(stored)
            name = names[stored]
            if name:
                record[name] = value
            elif name is None and float(value).is_integer():
                self._global_step = int(value)
        if len(record) == 1:
            return None  # no number in it (a table, media): nothing to read, nothing wrong
        step = self._global_step
        if step is None and isinstance(row_step, int) and not isinstance(row_step, bool):
            step = row_step
        if step is None:
            return "no step: neither train/global_step nor trackio's step"
        record["step"] = step
        records.append(record)
        self._handed_out = True
        return None


# -- the database --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Schema:
    """The columns that differ between trackio versions."""

    #: the column runs are told apart by: run_id (trackio >= 0.24), else run_name
    key: str
    #: rows carry the log_id inbox records are matched by (not written before trackio had one)
    has_log_id: bool
    #: what orders the rows as they were written: SQLite's rowid (trackio's `id INTEGER
    #: PRIMARY KEY` is it; a table made with a TEXT `id`, as an older or hand-made one may
    #: be, still has one), else an integer `id` (a table WITHOUT ROWID)
    order: str = "rowid"

    @property
    def log_id(self) -> str:
        return "log_id" if self.has_log_id else "NULL"

    @staticmethod
    def of(conn: sqlite3.Connection) -> _Schema | None:
        """None while the database holds no table yet (trackio creating the file). Raises
        NotTrackio when it holds tables but no metrics table with trackio's columns."""
        columns = {row[1] for row in conn.execute("PRAGMA table_info(metrics)")}
        missing = sorted({"id", "run_name", "step", "metrics"} - columns)
        if missing:
            tables = {
                row[0]
                for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if not columns and tables <= TRACKIO_TABLES:
                # nothing yet, or trackio creating its tables one statement at a time (each
                # CREATE commits on its own): the metrics table is still to come
                return None
            raise NotTrackio(
                "a metrics table without trackio's " + ", ".join(missing)
                if columns
                else "no metrics table"
            )
        return _Schema(
            "run_id" if "run_id" in columns else "run_name", "log_id" in columns, _order(conn)
        )


def _order(conn: sqlite3.Connection) -> str:
    """The column rows are read in the order of (see `_Schema.order`). Raises NotTrackio
    for a table WITHOUT ROWID whose `id` is not an integer (no order to follow)."""
    try:
        conn.execute("SELECT rowid FROM metrics LIMIT 0")
        return "rowid"
    except sqlite3.OperationalError:
        pass  # a table WITHOUT ROWID
    declared = {row[1]: str(row[2]).upper() for row in conn.execute("PRAGMA table_info(metrics)")}
    if "INT" in declared.get("id", ""):
        return "id"
    raise NotTrackio(
        "its metrics table has no rowid and a non-integer id: the order its rows were "
        "written in cannot be told"
    )


#: the tables trackio creates (trackio/sqlite_storage.py `init_db`, 0.28+) and SQLite's
#: own bookkeeping: a database holding only these and no metrics table is being created
TRACKIO_TABLES = frozenset(
    {
        "metrics",
        "configs",
        "system_metrics",
        "project_metadata",
        "pending_uploads",
        "alerts",
        "traces",
        "artifacts",
        "artifact_versions",
        "artifact_aliases",
        "run_artifact_links",
        "external_run_artifact_links",
        "sqlite_sequence",
    }
)


class NotTrackio(ValueError):
    """A SQLite database that is not trackio's (what it lacks is the message)."""


def _database_runs(conn: sqlite3.Connection, schema: _Schema) -> dict[str, tuple[str, int]]:
    """Every run in the database (its key) with its name and first id: one scan of an
    index, ~0.2 s for a million rows (once per reader, and per `list_runs`)."""
    query = f"SELECT {schema.key}, MIN(run_name), MIN({schema.order}) FROM metrics GROUP BY {schema.key}"
    rows = conn.execute(query).fetchall()
    return {str(key): (str(name), int(first)) for key, name, first in rows}


#: how a database at rest is opened: read-only, nothing created, no lock taken
_AT_REST = "mode=ro&immutable=1"
#: a -wal without its -shm (seen while trackio writes, under load): read-only, which
#: SQLite can do only by making the -shm again (trackio's next write removes it)
_WAL_WITHOUT_SHM = "mode=ro"


def _read_mode(path: Path) -> str:
    """How to open the database writing nothing: immutable at rest (no `-wal`, no
    `-journal`); through trackio's WAL, writing not even read marks, while its `-wal` and
    `-shm` both exist; plain read-only during a rollback-mode transaction (its
    `-journal`: locks, no shared memory); plain read-only too for a `-wal` without its
    `-shm`, the one case SQLite must create a file to read (the `-shm`)."""
    wal = os.path.exists(_sibling(path, "-wal"))
    journal = os.path.exists(_sibling(path, "-journal"))
    if not wal and not journal:
        return _AT_REST
    if not wal:
        return "mode=ro"
    return "mode=ro&readonly_shm=1" if os.path.exists(_sibling(path, "-shm")) else _WAL_WITHOUT_SHM


def _wal_without_shm(path: Path) -> bool:
    """A `-wal` and no `-shm`: the WAL index is in a writer's own memory (it opened the
    database in locking_mode=EXCLUSIVE), or trackio is between the two at a close."""
    return os.path.exists(_sibling(path, "-wal")) and not os.path.exists(_sibling(path, "-shm"))


def _connect(path: Path, mode: str) -> sqlite3.Connection:
    """A connection opened as `_read_mode` says, queries only."""
    uri = path.absolute().as_uri() + "?" + mode
    conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT, isolation_level=None)
    try:
        conn.execute("PRAGMA query_only = 1")
    except BaseException:
        conn.close()
        raise
    return conn


def _locked_by(path: Path, holder: int | None) -> str:
    """What a database locked against reading says: by which process when the system
    tells it (Linux's /proc/locks), and what holds such a lock for good."""
    who = f"its writer (process {holder})" if holder else "its writer"  # 0: not visible here
    return (
        f"trackio's database is locked by {who}: nothing else can read it while that lock "
        "is held (SQLite's locking_mode=EXCLUSIVE holds it as long as the process runs: "
        f"trackio's on a Space, or TRACKIO_SQLITE_LOCKING_MODE=exclusive): {path}"
    )


def _lock_holder(path: Path) -> int | None:
    """The process (not this one) holding a write lock on the database's lock bytes, as
    /proc/locks lists it; None when it says none or cannot be read (not Linux)."""
    try:
        info = os.stat(path)
        lines = _LOCKS.read_text(encoding="ascii", errors="replace").splitlines()
    except OSError:
        return None
    first, last = _LOCK_BYTES
    for line in lines:
        # "1: POSIX  ADVISORY  WRITE 5118 fe:00:2203755 1073741826 1073742335"
        fields = line.split()
        if len(fields) < 8 or fields[1] == "->" or fields[3] != "WRITE":
            continue
        try:
            pid = int(fields[4])
            major, minor, inode = fields[5].split(":")
            start = int(fields[6])
            end = last if fields[7] == "EOF" else int(fields[7])
            device = os.makedev(int(major, 16), int(minor, 16))
        except ValueError:
            continue
        same_file = (device, int(inode)) == (info.st_dev, info.st_ino)
        if same_file and pid != os.getpid() and start <= last and end >= first:
            return pid
    return None


def _check_files(path: Path) -> os.stat_result:
    """The database's stat, once it and its `-wal`, `-shm` and `-journal` (those present)
    are known to be regular files: SQLite would block forever reading a FIFO. Raises
    OSError (NotRegularFile, FileNotFoundError for the database)."""
    info = os.stat(path)
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            mode = os.stat(_sibling(path, suffix)).st_mode if suffix else info.st_mode
        except FileNotFoundError:
            continue
        check_regular(mode, str(path) + suffix)
    return info


def _still_at_rest(path: Path, before: os.stat_result) -> bool:
    """The database read at rest was not written meanwhile (same file, size and times, and
    still no `-wal`): what an `immutable` read saw is what the file holds."""
    try:
        after = os.stat(path)
    except OSError:
        return False
    fields = ("st_ino", "st_size", "st_mtime_ns", "st_ctime_ns")
    same = all(getattr(after, name) == getattr(before, name) for name in fields)
    return same and _read_mode(path) == _AT_REST


def _logged(conn: sqlite3.Connection, schema: _Schema, log_ids: Iterable[str | None]) -> set[str]:
    """Which of these log ids the database has (inbox fragments imported already)."""
    wanted = [log_id for log_id in log_ids if log_id is not None]
    found: set[str] = set()
    if not schema.has_log_id:
        return found
    for start in range(0, len(wanted), _IN_CHUNK):
        chunk = wanted[start : start + _IN_CHUNK]
        query = f"SELECT log_id FROM metrics WHERE log_id IN ({','.join('?' * len(chunk))})"
        found.update(row[0] for row in conn.execute(query, chunk))
    return found


# -- values --------------------------------------------------------------------------------
@dataclass(slots=True)
class _Fetched:
    """What one poll read, before any of it is taken."""

    rows: list[tuple[Any, ...]] | None = None
    fragments: list[Fragment] = field(default_factory=list)
    imported: set[str] = field(default_factory=set)  # the fragments' log ids in the db
    rebuilt: bool = False
    #: the database was written while it was read at rest: nothing taken, read again
    moved: bool = False


def _record_key(stored: str) -> str | None:
    """The log-dict key of a stored metric name: None for the trainer's step, "" for one
    dropped. trackio stores a key named like its own fields ("step") or starting with "__"
    as "__" + key; transformers' `rewrite_logs` (`train/x`, `eval/x`) is undone."""
    key = stored[2:] if stored.startswith("__") else stored
    if key == _GLOBAL_STEP:
        return None
    if key.startswith("train/"):
        key = key[len("train/") :]
    elif key.startswith("eval/"):
        key = "eval_" + key[len("eval/") :]
    return "" if key == "step" else key


def _json(data: Any) -> Any:
    """A metrics cell (trackio stores orjson bytes, older versions text) parsed."""
    if not isinstance(data, (bytes, str)):
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino
