"""trackio's local store read as trackio writes it: rows mapped to TRL's keys with the
trainer's step, each row once while trackio logs, the run chosen (newest, by name, a newer
one starting), runs and projects listed, nothing created that trackio does not create,
busy and missing databases, and the inbox fragments trackio writes on network filesystems.

trackio itself writes, in a separate process like a training script: it reads TRACKIO_DIR
when imported, starts background threads and atexit hooks, so one writer process per
module (driven line by line over a pipe) keeps the test process free of it. The writer's
environment names no Space, server, bucket or dataset, so nothing reaches the network.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from helpers import TrackioWriter as Writer
from helpers import wait_for

from grpo_tui.sources.trackio import (
    TrackioStore,
    list_runs,
)

Record = dict[str, Any]


@pytest.fixture(scope="module")
def writer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Writer]:
    process = Writer(tmp_path_factory.mktemp("trackio"))
    yield process
    process.close()


def poll_until(store: TrackioStore, count: int, timeout: float = 20.0) -> list[Record]:
    """Poll until `count` records arrived in all (trackio writes every 0.5 s), no more."""
    records: list[Record] = []

    def arrived() -> bool:
        polled = store.poll()
        assert polled.problem is None
        records.extend(polled.records)
        return len(records) >= count

    wait_for(arrived, timeout, what=f"{count} records")
    assert len(records) == count, records
    return records


def train_row(step: int) -> Record:
    """What transformers' TrackioCallback logs for a GRPO step (no step argument)."""
    return {
        "train/reward": step / 100,
        "train/kl": step / 1000,
        "train/rewards/accuracy_reward/mean": 0.5,
        "train/global_step": step,
    }


def trl_record(step: int) -> Record:
    """The record `train_row(step)` becomes: TRL's own key names, the trainer's step."""
    return {
        "step": step,
        "reward": step / 100,
        "kl": step / 1000,
        "rewards/accuracy_reward/mean": 0.5,
    }


def test_rows_arrive_with_trl_keys_and_the_trainers_step(writer: Writer) -> None:
    writer.init("mapped", "run-a")
    writer.log(train_row(10))
    writer.log({"eval/reward": 0.7, "eval/loss": 1.5, "train/global_step": 10})
    writer.log({"train/reward": float("nan"), "train/kl": float("inf"), "train/global_step": 20})
    writer.send("log_table")  # a table: not a number, dropped (it keeps global step 20)
    writer.log({"custom/x": 3, "note": "text", "flag": True, "step": 99, "time": 1.5})
    writer.log({"train/loss": 0.25}, step=7)  # no global step: the last one (20)
    writer.finish()
    store = TrackioStore(writer.directory / "mapped.db")
    records = poll_until(store, 5)
    assert records[:2] == [
        {"step": 10, "reward": 0.1, "kl": 0.01, "rewards/accuracy_reward/mean": 0.5},
        {"step": 10, "eval_reward": 0.7, "eval_loss": 1.5},
    ]
    assert records[0] == trl_record(10)
    nan_row = records[2]
    assert nan_row["step"] == 20 and nan_row["kl"] == float("inf")
    assert nan_row["reward"] != nan_row["reward"]  # NaN
    # a user's "step" (stored as "__step") is not the record's step; "time" keeps its name
    assert records[3:] == [{"step": 20, "custom/x": 3, "time": 1.5}, {"step": 20, "loss": 0.25}]
    assert store.current_run == "run-a"
    assert store.poll().records == []
    assert "trackio" not in sys.modules  # the reader reads SQLite, never through trackio


def test_each_row_once_while_trackio_logs(writer: Writer) -> None:
    writer.init("live", "run-live")
    store = TrackioStore(writer.directory / "live.db")
    assert store.poll().records == []  # trackio creates the database at its first write
    seen: list[Record] = []
    for step in range(1, 7):
        writer.log(train_row(step))
        new = poll_until(store, 1)
        assert new == [trl_record(step)]
        seen.extend(new)
        polled = store.poll()  # nothing twice
        assert polled.records == [] and not polled.restarted
        assert polled.data_time is not None and abs(polled.data_time - time.time()) < 60
    writer.finish()
    assert store.poll().records == []
    assert [record["step"] for record in seen] == [1, 2, 3, 4, 5, 6]
    # a fresh reader reads the same rows in bites
    bitten = TrackioStore(writer.directory / "live.db", max_rows=4)
    first, second, third = bitten.poll(), bitten.poll(), bitten.poll()
    assert (len(first.records), first.more) == (4, True)
    assert (len(second.records), second.more) == (2, False)
    assert first.records + second.records == seen and third.records == []


@pytest.fixture(scope="module")
def two_runs(writer: Writer) -> Path:
    """Project "runs": run alpha (steps 1, 2), then run beta (steps 5, 6, 7), finished."""
    writer.init("runs", "alpha")
    for step in (1, 2):
        writer.log(train_row(step))
    writer.init("runs", "beta")  # finishes alpha
    for step in (5, 6, 7):
        writer.log(train_row(step))
    writer.finish()
    return writer.directory / "runs.db"


def copy_database(source: Path, target: Path) -> Path:
    """A copy made through SQLite (the source's -wal included), left at rest."""
    with closing(sqlite3.connect(source)) as conn, closing(sqlite3.connect(target)) as copy:
        conn.backup(copy)
    return target


def test_newest_run_by_default_a_named_run_when_asked(writer: Writer, two_runs: Path) -> None:
    db = two_runs
    newest = TrackioStore(db)
    assert [record["step"] for record in poll_until(newest, 3)] == [5, 6, 7]
    assert newest.current_run == "beta"
    alpha = TrackioStore(db, "alpha")
    assert [record["step"] for record in poll_until(alpha, 2)] == [1, 2]
    assert alpha.current_run == "alpha"
    assert list_runs(db) == ["alpha", "beta"]


def test_a_newer_run_is_a_restart_and_a_named_run_stays(writer: Writer) -> None:
    writer.init("restart", "one")
    writer.log(train_row(1))
    writer.log(train_row(2))
    db = writer.directory / "restart.db"
    following = TrackioStore(db)
    named = TrackioStore(db, "one")
    assert [record["step"] for record in poll_until(following, 2)] == [1, 2]
    assert [record["step"] for record in poll_until(named, 2)] == [1, 2]
    writer.init("restart", "two")
    writer.log(train_row(1))
    writer.finish()
    polls = [following.poll()]

    def new_run_read() -> bool:
        if not polls[-1].records:
            assert not polls[-1].restarted  # no restart without the new run's rows
            polls.append(following.poll())
        return bool(polls[-1].records)

    wait_for(new_run_read, 20, what="the new run's rows")
    polled = polls[-1]
    assert polled.restarted
    assert polled.records == [trl_record(1)]
    assert following.current_run == "two"
    assert following.poll().records == []
    stayed = named.poll()
    assert (stayed.records, stayed.restarted, named.current_run) == ([], False, "one")


def listing(directory: Path) -> dict[str, int]:
    return {path.name: path.stat().st_size for path in directory.iterdir() if path.is_file()}


def test_reading_creates_nothing_beside_the_database(writer: Writer) -> None:
    writer.init("quiet", "run-q")
    writer.log(train_row(1))
    writer.finish()
    db = writer.directory / "quiet.db"
    before = listing(writer.directory)
    assert "quiet.db-wal" not in before and "quiet.db-shm" not in before  # trackio cleaned up
    store = TrackioStore(db)
    assert len(poll_until(store, 1)) == 1
    list_runs(db)
    # at rest the database is read immutable: no -wal, no -shm, nothing changed
    for _ in range(3):
        assert store.poll().records == []
        assert len(TrackioStore(db).poll().records) == 1
    assert listing(writer.directory) == before
    # while another connection holds the WAL open, it is read through it, writing nothing
    with closing(sqlite3.connect(db)) as holder:
        holder.execute("SELECT COUNT(*) FROM metrics").fetchone()
        held = listing(writer.directory)
        assert {"quiet.db-wal", "quiet.db-shm"} <= set(held)
        shm = (writer.directory / "quiet.db-shm").read_bytes()
        assert len(TrackioStore(db).poll().records) == 1 and store.poll().records == []
        assert (writer.directory / "quiet.db-shm").read_bytes() == shm
        assert listing(writer.directory) == held
    # the resumed run is the same run
    writer.init("quiet", "run-q", resume="allow")
    writer.log(train_row(2))
    writer.finish()
    assert listing(writer.directory).keys() == before.keys()
    polled = store.poll()
    assert ([record["step"] for record in polled.records], polled.restarted) == ([2], False)


def test_a_locked_database_is_read_at_the_next_poll(writer: Writer, tmp_path: Path) -> None:
    writer.init("locked", "run-l")
    writer.log(train_row(1))
    writer.log(train_row(2))
    writer.finish()
    db = copy_database(writer.directory / "locked.db", tmp_path / "locked.db")
    with closing(sqlite3.connect(db)) as conn:  # rollback mode: a writer locks readers out
        conn.execute("PRAGMA journal_mode = DELETE")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("DELETE FROM metrics")  # a transaction under way: its -journal exists
    assert (tmp_path / "locked.db-journal").exists()
    store = TrackioStore(db)
    locked = store.poll()
    assert (locked.records, locked.problem, locked.restarted) == ([], None, False)
    holder.execute("ROLLBACK")
    holder.close()
    assert [record["step"] for record in store.poll().records] == [1, 2]


def test_missing_and_odd_paths(tmp_path: Path) -> None:
    missing = TrackioStore(tmp_path / "nothing.db").poll()
    assert (missing.records, missing.problem, missing.more) == ([], None, False)
    assert list(tmp_path.iterdir()) == []  # nothing created
    assert list_runs(tmp_path / "nothing.db") == []
    (tmp_path / "folder.db").mkdir()
    folder = TrackioStore(tmp_path / "folder.db").poll()
    assert folder.problem == f"not a regular file (a directory), skipped: {tmp_path / 'folder.db'}"
    os.mkfifo(tmp_path / "fifo.db")
    fifo = TrackioStore(tmp_path / "fifo.db").poll()  # refused, never opened (it would block)
    assert fifo.problem == f"not a regular file (a FIFO), skipped: {tmp_path / 'fifo.db'}"
    (tmp_path / "junk.db").write_bytes(b"not a database" * 100)
    junk = TrackioStore(tmp_path / "junk.db").poll()
    assert junk.problem is not None and "file is not a database" in junk.problem


def test_inbox_fragments_of_a_network_filesystem(writer: Writer) -> None:
    """TRACKIO_STORAGE_MODE=jsonl is what trackio picks on NFS, Lustre, GPFS...: fragments
    only, until a dashboard imports them into the database and deletes them."""
    writer.init("remote", "run-r", storage="jsonl")
    db = writer.directory / "remote.db"
    store = TrackioStore(db)
    for step in (1, 2, 3):
        writer.log(train_row(step))
    assert [record["step"] for record in poll_until(store, 3)] == [1, 2, 3]
    assert not db.exists()
    assert list_runs(db) == ["run-r"]
    assert writer.send("import_inbox") == 3  # what `trackio show` does every 15 s
    assert db.exists() and not list((writer.directory / "inbox").glob("*/*.jsonl"))
    writer.log(train_row(4))
    writer.finish()
    assert [record["step"] for record in poll_until(store, 1)] == [4]
    assert list_runs(db) == ["run-r"]  # imported rows and the fragment: one run
    assert writer.send("import_inbox") == 1
    assert store.poll().records == []  # step 4 now in the database too: not again
    again = TrackioStore(db)
    assert [record["step"] for record in poll_until(again, 4)] == [1, 2, 3, 4]


def test_an_idle_database_in_a_read_only_folder_is_read(two_runs: Path, tmp_path: Path) -> None:
    """Another user's database (a folder this reader cannot write): read at rest, nothing
    created, no file of the reader's beside it."""
    db = copy_database(two_runs, tmp_path / "runs.db")
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    before = listing(tmp_path)
    tmp_path.chmod(0o555)
    try:
        polled = TrackioStore(db).poll()
        assert polled.problem is None
        assert [record["step"] for record in polled.records] == [5, 6, 7]
        assert list_runs(db) == ["alpha", "beta"]
    finally:
        tmp_path.chmod(0o755)
    assert listing(tmp_path) == before
    # while the owner's trackio (or dashboard) has the database open, it is read
    with closing(sqlite3.connect(db)) as owners:
        owners.execute("SELECT COUNT(*) FROM metrics").fetchone()
        assert {"runs.db-wal", "runs.db-shm"} <= set(listing(tmp_path))
        store = TrackioStore(db)
        assert [record["step"] for record in store.poll().records] == [5, 6, 7]


def test_databases_of_trackio_before_0_24_have_no_run_id(two_runs: Path, tmp_path: Path) -> None:
    """Runs were told apart by name, and rows had no log id."""
    db = copy_database(two_runs, tmp_path / "runs.db")
    with closing(sqlite3.connect(db)) as conn:
        indexes = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'metrics'"
        for (index,) in conn.execute(indexes).fetchall():
            conn.execute(f"DROP INDEX {index}")
        for column in ("run_id", "log_id", "space_id"):
            conn.execute(f"ALTER TABLE metrics DROP COLUMN {column}")
    assert list_runs(db) == ["alpha", "beta"]
    assert [record["step"] for record in TrackioStore(db).poll().records] == [5, 6, 7]
    assert [record["step"] for record in TrackioStore(db, "alpha").poll().records] == [1, 2]


def test_a_fifo_beside_the_database_is_refused(two_runs: Path, tmp_path: Path) -> None:
    db = copy_database(two_runs, tmp_path / "runs.db")
    os.mkfifo(tmp_path / "runs.db-wal")  # SQLite would block reading it
    polled = TrackioStore(db).poll()
    wal = tmp_path / "runs.db-wal"
    assert polled.problem == f"not a regular file (a FIFO), skipped: {wal}"


def test_what_is_not_a_fragment_in_the_inbox(tmp_path: Path) -> None:
    """Junk and a FIFO named like fragments: skipped, never blocking, nothing raised."""
    folder = tmp_path / "inbox" / "0123456789abcdef"
    folder.mkdir(parents=True)
    (folder / "00000000.jsonl").write_bytes(b"\x00garbage\n[1, 2]\n")
    os.mkfifo(folder / "00000001.jsonl")
    (folder / "00000002.jsonl.tmp").write_text('{"kind": "metric", "project": "p"}')
    store = TrackioStore(tmp_path / "p.db")
    for _ in range(2):
        polled = store.poll()
        assert (polled.records, polled.problem, polled.restarted) == ([], None, False)
    assert list_runs(tmp_path / "p.db") == []


# -- as a user reaches it: discovery, the adapter, `--run` --------------------------------


def test_a_trackio_folder_is_found_read_and_mapped(writer: Writer, two_runs: Path) -> None:
    """PATH = the trackio folder: its newest project database; the newest run, or the
    one `--run` names; TRL's keys mapped like any other source's."""
    from grpo_tui import load_run
    from grpo_tui.sources.discover import discover

    layout = discover(writer.directory)
    assert layout.adapter == "trackio" and layout.reading == "trackio"
    assert discover(two_runs).adapter == "trackio"
    run = load_run(two_runs)
    assert run.framework == "trackio"
    assert list(run.store.steps) == [5.0, 6.0, 7.0]
    assert list(run.store.column("reward")) == pytest.approx([0.05, 0.06, 0.07])
    assert list(run.store.column("rewards/accuracy_reward/mean")) == [0.5, 0.5, 0.5]
    alpha = load_run(two_runs, run="alpha")
    assert list(alpha.store.steps) == [1.0, 2.0]
    done = subprocess.run(
        [sys.executable, "-m", "grpo_tui.cli", "inspect", str(two_runs), "--run", "alpha"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "steps      1 .. 2" in done.stdout and "chosen     trackio:" in done.stdout


def test_a_followed_database_at_rest_moves_nothing_in_its_folder(
    two_runs: Path, tmp_path: Path
) -> None:
    """Followed as the monitor follows it (its folder watched for changes): no file
    appears and nothing is written in the folder (reading opens the database: opened and
    closed-without-writing events, which wake no reader), so the reader sleeps."""
    import threading

    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    from grpo_tui.run.follow import FollowLoop, RunFollower
    from grpo_tui.run.update import Update

    folder = tmp_path / "project"
    folder.mkdir()
    db = copy_database(two_runs, folder / "runs.db")
    before = listing(folder)
    events: list[FileSystemEvent] = []

    class Recorder(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.event_type not in ("opened", "closed_no_write"):
                events.append(event)

    observer = Observer()
    observer.schedule(Recorder(), str(folder))
    observer.start()
    follower = RunFollower(db)
    reads: list[bool] = []
    enough = threading.Event()
    read = follower.read

    def counted(time_budget: float = 0.05, chunk_bytes: int | None = None) -> Update:
        update = read(time_budget, chunk_bytes)
        reads.append(update.more)
        if len(reads) >= 8:
            enough.set()
        return update

    follower.read = counted  # type: ignore[method-assign]
    loop = FollowLoop(follower, lambda update: None, poll_interval=0.05)
    loop.start()
    try:
        assert enough.wait(30), f"{len(reads)} reads"
    finally:
        loop.stop()
        observer.stop()
        observer.join(5)
    assert events == [] and listing(folder) == before
    assert not any(reads[2:])  # every read after the first found nothing more: it slept


def test_a_database_that_is_not_trackios_says_so(tmp_path: Path) -> None:
    """A SQLite file with tables but no trackio metrics table is unreadable, with what it
    lacks (not "waiting" forever); one with no table at all is trackio creating it."""
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as conn:
        conn.execute("CREATE TABLE notes (text)")
        conn.commit()
    polled = TrackioStore(other).poll()
    assert polled.problem == f"not a trackio database (no metrics table): {other}"
    odd = tmp_path / "odd.db"
    with closing(sqlite3.connect(odd)) as conn:
        conn.execute("CREATE TABLE metrics (id INTEGER PRIMARY KEY, metrics TEXT)")
        conn.commit()
    assert TrackioStore(odd).poll().problem == (
        f"not a trackio database (a metrics table without trackio's run_name, step): {odd}"
    )
    empty = tmp_path / "fresh.db"
    with closing(sqlite3.connect(empty)) as conn:
        conn.execute("PRAGMA user_version = 1")  # a file with no table yet
    assert TrackioStore(empty).poll().problem is None


def test_rows_it_cannot_use_are_counted_and_shown(tmp_path: Path) -> None:
    """A row whose metrics cell is no JSON object, or that has no step, is a bad line with
    its row id; the rows around it are read."""
    db = tmp_path / "damaged.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(
            "CREATE TABLE metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT,"
            " run_name TEXT, step INTEGER, metrics TEXT)"
        )
        for step in range(1, 31):
            metrics = json.dumps(train_row(step)) if step % 2 else "{not json"
            conn.execute(
                "INSERT INTO metrics (timestamp, run_name, step, metrics) VALUES (?, ?, ?, ?)",
                ("2026-12-04T10:00:00", "run", step, metrics),
            )
        conn.commit()
    polled = TrackioStore(db).poll()
    assert [record["step"] for record in polled.records] == list(range(1, 31, 2))
    assert [bad.line_no for bad in polled.bad] == list(range(2, 31, 2))
    assert {bad.reason for bad in polled.bad} == {"its metrics are not a JSON object"}
    assert polled.bad[0].excerpt == "{not json" and polled.bad[0].origin == "damaged.db"


def test_trackio_creating_its_tables_is_waited_for(tmp_path: Path) -> None:
    """Each CREATE of trackio's commits on its own: a database holding only trackio's other
    tables, its metrics table not yet there, is being created (waited for, no problem), and
    read once the metrics table comes."""
    db = tmp_path / "young.db"
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("CREATE TABLE configs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_name TEXT)")
        conn.commit()
    store = TrackioStore(db)
    polled = store.poll()
    assert polled.problem is None and polled.records == []
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(
            "CREATE TABLE metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT, "
            "run_name TEXT, step INTEGER, metrics TEXT)"
        )
        conn.execute(
            "INSERT INTO metrics (timestamp, run_name, step, metrics) VALUES (?, ?, ?, ?)",
            ("2026-12-08T00:00:00", "run-1", 1, '{"train/reward": 0.5}'),
        )
        conn.commit()
    polled = store.poll()
    assert polled.problem is None
    assert [record["step"] for record in polled.records] == [1]
