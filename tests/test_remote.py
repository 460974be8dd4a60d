"""Runs on other machines: remote paths read over a real sshd on 127.0.0.1 (tests/conftest.py
`sshd`), under the same rules as local files (tests/test_tail.py), through the same readers.

Every test names the machine with a host name of its own (the client config sends every
name to the test sshd): each gets its own shared connection, so a test that breaks one
leaves the others alone.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pytest
from helpers import (
    CORPUS,
    FIXTURES,
    THREE_REWARDS,
    THREE_REWARDS_ARGS,
    SshServer,
    app_for,
    msswift_run_dir,
    screen_text,
    wait_for,
    wait_until,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_tui.cli import main
from grpo_tui.commands.check import check_command
from grpo_tui.commands.output import (
    EXIT_HOST_AUTH,
    EXIT_HOST_KEY,
    EXIT_HOST_UNREACHABLE,
    EXIT_UNREADABLE,
)
from grpo_tui.files import TransportError
from grpo_tui.run.live import Run
from grpo_tui.sources.discover import discover
from grpo_tui.sources.remote import filesystems, run_path, set_ssh_command
from grpo_tui.sources.remote import transport as ssh_transport
from grpo_tui.sources.remote.address import SshTarget, parse_remote
from grpo_tui.sources.tail import TailReader
from grpo_tui.views.presentation import machine_of, state_headline
from grpo_tui.vocabulary import RunState

_HOSTS = iter(range(1_000_000))


def host() -> str:
    """A host name no other test used (its own shared connection)."""
    return f"node{next(_HOSTS)}"


@pytest.fixture
def remote(sshd: SshServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[SshServer]:
    """The test sshd, reached as the user would: GRPO_TUI_SSH="ssh -F CONFIG"."""
    monkeypatch.setenv("GRPO_TUI_SSH", sshd.ssh_command)
    # short back-off: a test waits on its reconnection, not on the real pauses
    monkeypatch.setattr(ssh_transport, "BACKOFF_S", (0.05, 0.1, 0.2))
    yield sshd
    set_ssh_command(None)  # a test's --ssh-command ends with it


def unmounted(data: object, machine: str) -> object:
    """JSON data with `machine:` taken off the front of every path in it."""
    return json.loads(json.dumps(data).replace(f'"{machine}:', '"'))


def read_all(reader: TailReader) -> bytes:
    """Poll until a poll reads nothing more (what is complete now)."""
    data = b""
    while True:
        chunk = reader.poll()
        data += chunk.data
        if not chunk.more:
            return data


class TestAddresses:
    """Which words are remote paths, and what they name."""

    def test_scp_form_and_url_form(self) -> None:
        address = parse_remote("me@node1:/runs/x")
        assert address is not None
        assert address.target == SshTarget("node1", "me")
        assert address.path == "/runs/x"
        url = parse_remote("ssh://me@node1:2222/runs/x")
        assert url is not None and url.target == SshTarget("node1", "me", 2222)
        assert url.path == "/runs/x"
        home = parse_remote("ssh://node1/~/runs")
        assert home is not None and home.path == "runs"
        assert str(run_path("gpu7:/runs/v0")) == "gpu7:/runs/v0"
        assert str(run_path("gpu7:runs")) == "gpu7:~/runs"

    def test_a_path_is_shown_back_as_a_word_that_names_it_again(self) -> None:
        # a port, the login folder: what every surface prints is read back as the same path
        for word in ("ssh://me@node1:2222/runs/x", "ssh://node1:2222/~/runs", "node1:~/runs"):
            address = parse_remote(word)
            assert address is not None
            shown = str(address.as_path())
            again = parse_remote(shown)
            assert again == address, (word, shown)
        assert str(parse_remote("ssh://me@node1:2222/x").as_path()) == "me@node1:2222:/x"  # type: ignore[union-attr]
        assert parse_remote("node1:~/runs") == parse_remote("node1:runs")
        assert parse_remote("node1:70000:/x").target.port is None  # type: ignore[union-attr]

    def test_local_words_stay_local(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "run:3").mkdir()
        assert parse_remote("run:3") is None  # exists here
        assert parse_remote("./later:1") is None  # a slash before the colon
        assert parse_remote("/abs/a:b") is None
        assert parse_remote("no colon") is None
        assert parse_remote("-oProxyCommand=x:y") is None  # never an ssh option
        assert run_path("run:3") == tmp_path / "run:3"


class TestReading:
    """The tail rules, over ssh."""

    def test_ms_swift_run_discovered_remotely(self, remote: SshServer, tmp_path: Path) -> None:
        output = msswift_run_dir(tmp_path, THREE_REWARDS, THREE_REWARDS_ARGS, completions=True)
        name = host()
        layout = discover(run_path(f"{name}:{output}"))
        local = discover(output)
        assert layout.problem == ""
        assert layout.adapter == local.adapter == "ms-swift"
        run_dir = output / "v0-20261202-132949"
        assert str(layout.metrics_file) == f"{name}:{run_dir}/logging.jsonl"
        assert str(layout.completions_file) == f"{name}:{run_dir}/completions.jsonl"
        assert str(layout.args_file) == f"{name}:{run_dir}/args.json"
        assert str(layout.output_dir) == f"{name}:{output}"
        assert layout.why == local.why

    def test_check_remote_is_check_local(self, remote: SshServer, tmp_path: Path) -> None:
        output = msswift_run_dir(tmp_path, THREE_REWARDS, THREE_REWARDS_ARGS, completions=True)
        local_out, remote_out = io.StringIO(), io.StringIO()
        local = check_command(output, as_json=True, rules_file=None, out=local_out, now=2e9)
        machine = host()
        far = check_command(
            run_path(f"{machine}:{output}"), as_json=True, rules_file=None, out=remote_out, now=2e9
        )
        assert far == local
        near, there = json.loads(local_out.getvalue()), json.loads(remote_out.getvalue())
        # the same diagnosis; only the path, the data age (whole seconds there) and the
        # name (the machine in front of it there) differ
        assert there["name"] == f"{machine}:{near['name']}"
        for report in (near, there):
            del report["path"], report["run"]["data_age_s"], report["name"]
            # the checkpoint folders, as each machine names them
            report["checkpoints"] = unmounted(report["checkpoints"], machine)
        assert there == near

    @pytest.mark.parametrize(
        "name",
        [
            "aaipl-minesweeper-trl",  # TRL: the newest of five checkpoints' trainer_state.json
            "trl-qwen35-9b-gsm8k-g3-stuck",  # TRL: a checkpoint beside its console log
            "verl-filelogger-qwen3-1p7b-intercode-debug-flat",  # verl's file logger, a folder down
            "verl-wandb-opd-qwen25-3b-kl005-lengthhack-collapse",  # W&B's output.log, 3 deep
            "msswift-qwen3vl-summary-pein",  # ms-swift's v* folder
        ],
    )
    def test_real_runs_read_there_as_here(
        self, remote: SshServer, tmp_path: Path, name: str
    ) -> None:
        """Real runs in each layout, found and judged over ssh exactly as on this disk."""
        run = CORPUS / name
        local_out, remote_out = io.StringIO(), io.StringIO()
        local = check_command(run, as_json=True, rules_file=None, out=local_out, now=2e9)
        machine = host()
        far = check_command(
            run_path(f"{machine}:{run}"), as_json=True, rules_file=None, out=remote_out, now=2e9
        )
        near, there = json.loads(local_out.getvalue()), json.loads(remote_out.getvalue())
        assert there["name"] == f"{machine}:{near['name']}"  # the machine in front of it
        for report in (near, there):
            del report["path"], report["run"]["data_age_s"], report["run"]["log_age_s"]
            del report["name"]
            if report["run"]["stopped"] is not None:  # the console's path, as each names it
                del report["run"]["stopped"]["file"]
            # the checkpoint folders, as each machine names them
            report["checkpoints"] = unmounted(report["checkpoints"], machine)
        assert (far, there) == (local, near)
        assert near["status"] != "unknown" or name.startswith("verl-filelogger")

    def test_tensorboard_and_parquet_completions(
        self, remote: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """TensorBoard event files (the real writer's) and TRL's parquet completions
        folder are read over ssh as here."""
        from tensorboard.compat.proto import event_pb2, summary_pb2  # type: ignore[import-untyped]
        from tensorboard.summary.writer.event_file_writer import (  # type: ignore[import-untyped]
            EventFileWriter,
        )

        board = tmp_path / "runs" / "Dec05_10-00-00_gpu"
        writer = EventFileWriter(str(board))
        for step in range(1, 31):
            for tag, value in (("train/reward", 0.1 + step / 60), ("train/kl", 0.001 * step)):
                summary = summary_pb2.Summary(
                    value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)]
                )
                writer.add_event(
                    event_pb2.Event(step=step, wall_time=1.7e9 + step, summary=summary)
                )
        writer.close()
        trl = tmp_path / "trl"
        (trl / "completions").mkdir(parents=True)
        fixtures = FIXTURES / "trl"
        for number in ("00001", "00003"):
            source = next(fixtures.glob(f"*_completions_{number}.parquet"))
            (trl / "completions" / f"completions_{number}.parquet").write_bytes(source.read_bytes())
        (trl / "checkpoint-6").mkdir()
        state = next(fixtures.glob("local-run-trl1.16.0*_trainer_state.json"))
        (trl / "checkpoint-6" / "trainer_state.json").write_bytes(state.read_bytes())
        name = host()
        for run in (tmp_path / "runs", trl):
            assert main(["inspect", "--json", str(run)]) == 0
            near = json.loads(capsys.readouterr().out)
            assert main(["inspect", "--json", f"{name}:{run}"]) == 0
            far = json.loads(capsys.readouterr().out)
            assert json.loads(json.dumps(far).replace(f"{name}:", "")) == near
            assert near["steps"]["last"] == (30 if run != trl else 6)
        assert near["completions"]["batches"] == 2

    def test_a_trackio_database_says_why_not(
        self, remote: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """trackio's SQLite store cannot be read a range at a time: found, and refused in
        one line that says what to do (run it there, or mount the folder)."""
        project = tmp_path / "trackio"
        project.mkdir()
        with closing(sqlite3.connect(project / "sweep.db")) as conn:
            conn.execute("create table metrics (id integer primary key, run_name text)")
            conn.commit()
        code = main(["check", f"{host()}:{project}"])
        out = capsys.readouterr().out
        assert code == EXIT_UNREADABLE
        assert "trackio" in out and "SQLite" in out and "sshfs" in out

    def test_live_append_in_pieces(self, remote: SshServer, tmp_path: Path) -> None:
        log = tmp_path / "logging.jsonl"
        reader = TailReader(run_path(f"{host()}:{log}"))
        assert reader.poll().data == b"" and not reader.exists  # waited for
        log.write_bytes(b'{"step": 1}\n{"st')
        assert read_all(reader) == b'{"step": 1}\n'
        with log.open("ab") as handle:
            handle.write(b'ep": 2}')  # the line still has no end
        assert read_all(reader) == b""
        with log.open("ab") as handle:
            handle.write(b'\n{"step": 3}\n')
        assert read_all(reader) == b'{"step": 2}\n{"step": 3}\n'
        assert reader.offset == log.stat().st_size
        assert reader.problem is None

    def test_truncation_and_rotation_restart(self, remote: SshServer, tmp_path: Path) -> None:
        log = tmp_path / "logging.jsonl"
        log.write_bytes(b"one\ntwo\n")
        reader = TailReader(run_path(f"{host()}:{log}"))
        assert read_all(reader) == b"one\ntwo\n"
        log.write_bytes(b"x\n")  # truncated and rewritten shorter
        chunk = reader.poll()
        assert (chunk.restarted, chunk.data) == ("truncated", b"x\n")
        rotated = tmp_path / "new.jsonl"
        rotated.write_bytes(b"fresh\n")
        os.replace(rotated, log)  # rotation: another file at the path
        chunk = reader.poll()
        assert (chunk.restarted, chunk.data) == ("replaced", b"fresh\n")
        log.write_bytes(b"FRESH\nmore\n")  # rewritten in place past the old offset
        chunk = reader.poll()
        assert (chunk.restarted, chunk.data) == ("rewritten", b"FRESH\nmore\n")

    def test_killed_connection_loses_and_repeats_nothing(
        self, remote: SshServer, tmp_path: Path
    ) -> None:
        log = tmp_path / "logging.jsonl"
        log.write_bytes(b"".join(b'{"seq": %d}\n' % n for n in range(2000)))
        name = host()
        reader = TailReader(run_path(f"{name}:{log}"))
        seen: list[int] = []

        def take(budget: int) -> None:
            seen.extend(orjson.loads(line.data)["seq"] for line in reader.poll(budget).lines)

        take(4000)
        for kill_round in range(3):
            # the shared connection dies mid-read: the master, and sshd's side of it
            for pid in remote.connection_pids(name):
                os.kill(pid, signal.SIGKILL)
            take(4000)
            with log.open("ab") as handle:
                handle.write(
                    b"".join(
                        b'{"seq": %d}\n' % n for n in range(2000 + kill_round, 2001 + kill_round)
                    )
                )

        def caught_up() -> bool:
            take(1 << 20)
            return reader.offset == log.stat().st_size

        wait_for(caught_up, what="the rest, once reconnected")
        assert seen == list(range(2003))
        assert reader.problem is None


@dataclass
class _Writer:
    """The writer side of the lossless property: what each generation of the file got."""

    path: Path
    next_seq: int = 0
    pending: bytes = b""
    generations: list[list[int]] = field(default_factory=lambda: [[]])
    required: list[int] = field(default_factory=lambda: [0])
    pending_seq: int = -1

    def write(self, nbytes: int) -> None:
        out = b""
        while nbytes > 0:
            if not self.pending:
                self.pending_seq, self.next_seq = self.next_seq, self.next_seq + 1
                self.pending = b'{"_seq": %d, "pad": "%s"}\n' % (
                    self.pending_seq,
                    b"x" * (self.pending_seq % 7),
                )
            piece, self.pending = self.pending[:nbytes], self.pending[nbytes:]
            out += piece
            nbytes -= len(piece)
            if not self.pending:
                self.generations[-1].append(self.pending_seq)
        with self.path.open("ab") as handle:
            handle.write(out)

    def new_generation(self) -> None:
        self.pending = b""
        self.generations.append([])
        self.required.append(0)


_OPERATION = st.one_of(
    st.tuples(st.just("write"), st.integers(1, 120)),
    st.tuples(st.just("poll"), st.integers(1, 200)),
    st.tuples(st.just("truncate"), st.just(0)),
    st.tuples(st.just("replace"), st.just(0)),
    st.tuples(st.just("delete"), st.just(0)),
)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(_OPERATION, min_size=1, max_size=25))
def test_remote_reader_loses_and_duplicates_nothing(
    remote: SshServer, tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]]
) -> None:
    """tests/test_tail.py's lossless property, the file read over ssh."""
    directory = tmp_path_factory.mktemp("remote-run")
    path = directory / "logging.jsonl"
    writer = _Writer(path)
    reader = TailReader(run_path(f"{host()}:{path}"))
    seen: list[int] = []

    def poll(budget: int) -> None:
        while True:
            chunk = reader.poll(max_bytes=budget)
            assert reader.problem is None
            seen.extend(orjson.loads(line.data)["_seq"] for line in chunk.lines)
            if not chunk.more:
                break
        if path.exists():
            writer.required[-1] = len(writer.generations[-1])

    for op, arg in ops:
        if op == "write":
            writer.write(arg)
        elif op == "poll":
            poll(arg)
        elif op == "truncate" and path.exists():
            path.write_bytes(b"")
            writer.new_generation()
        elif op == "replace":
            (directory / "replacement.tmp").write_bytes(b"")
            os.replace(directory / "replacement.tmp", path)
            writer.new_generation()
        elif op == "delete" and path.exists():
            path.unlink()
            writer.new_generation()
    poll(1 << 20)
    assert seen == sorted(set(seen))
    for written, required in zip(writer.generations, writer.required):
        got = [seq for seq in seen if seq in set(written)]
        assert got == written[: len(got)]
        assert len(got) >= required
    assert [s for s in seen if s in set(writer.generations[-1])] == writer.generations[-1]
    assert {p.name for p in directory.iterdir()} <= {"logging.jsonl"}


class TestControlSocket:
    """The shared connection's socket fits a Unix socket path whatever the host name."""

    def test_a_long_host_name_under_a_long_runtime_dir(
        self, remote: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Issue 46: `node-17.example.org` under /run/user/1000 failed every call; a runtime
        folder too long for any socket (macOS's) falls back to a short one."""
        long_base = tmp_path / ("r" * 60)
        long_base.mkdir()
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(long_base))
        folder = ssh_transport.control_dir()
        assert not folder.is_relative_to(long_base)
        name = f"{host()}-a-rather-long-name-for-a-gpu-box.example.org"
        socket = folder / ssh_transport.socket_name(SshTarget(name))
        expanded = str(socket).replace("%C", "c" * 40)
        assert len(expanded) + ssh_transport.SSH_BIND_SUFFIX <= ssh_transport.SOCKET_PATH_MAX
        output = msswift_run_dir(tmp_path, THREE_REWARDS, THREE_REWARDS_ARGS, completions=True)
        layout = discover(run_path(f"{name}:{output}"))
        assert layout.problem == "" and layout.adapter == "ms-swift"

    def test_two_names_for_one_address_do_not_share_a_socket(self) -> None:
        """The name as given is part of the socket's name (two identities, one address)."""
        a, b = SshTarget("gpu-a"), SshTarget("gpu-b")
        assert ssh_transport.socket_name(a) != ssh_transport.socket_name(b)
        assert ssh_transport.socket_name(a) == ssh_transport.socket_name(SshTarget("gpu-a"))


class TestFaults:
    """What cannot be read says why in one line; `check` exits with the reason's code."""

    def test_permission_denied(self, remote: SshServer, tmp_path: Path) -> None:
        log = tmp_path / "logging.jsonl"
        log.write_bytes(b'{"step": 1, "loss": 1.0}\n')
        log.chmod(0)
        remote_log = run_path(f"{host()}:{log}")
        reader = TailReader(remote_log)
        assert reader.poll().data == b""
        assert reader.problem == f"permission denied: {remote_log}"
        out = io.StringIO()
        assert check_command(remote_log, as_json=True, rules_file=None, out=out) == EXIT_UNREADABLE
        locked = tmp_path / "locked"
        locked.mkdir(mode=0)
        layout = discover(run_path(f"{host()}:{locked}"))
        assert layout.problem.startswith("permission denied: ")

    def test_path_that_does_not_exist(self, remote: SshServer, tmp_path: Path) -> None:
        missing = run_path(f"{host()}:{tmp_path}/no/such/run")
        layout = discover(missing)
        assert layout.waiting and f"{missing}, which does not exist yet" in layout.waiting_for
        assert str(tmp_path) in layout.waiting_for  # the nearest folder that does
        out = io.StringIO()
        assert check_command(missing, as_json=True, rules_file=None, out=out) == EXIT_UNREADABLE

    def test_hostile_file_names_run_nothing(self, remote: SshServer, tmp_path: Path) -> None:
        run = tmp_path / "run"
        run.mkdir()
        names = ["$(touch pwned)", "`touch pwned`", "'; touch pwned; '", "a\nb; touch pwned"]
        for name in names:
            (run / name).write_bytes(b'{"step": 1, "loss": 0.5}\n')
        name = host()
        for file_name in names:
            reader = TailReader(run_path(f"{name}:{run}/{file_name}"))
            assert read_all(reader) == b'{"step": 1, "loss": 0.5}\n'
        discover(run_path(f"{name}:{run}"))  # lists the folder, stats and reads every name
        assert sorted(p.name for p in run.iterdir()) == sorted(names)
        assert not (Path.home() / "pwned").exists()
        assert not Path("pwned").exists()

    def test_host_that_does_not_answer(
        self, remote: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        log = tmp_path / "logging.jsonl"
        log.write_bytes(b'{"step": 1, "loss": 1.0}\n')
        name = host()
        reader = TailReader(run_path(f"{name}:{log}"))
        assert read_all(reader) == b'{"step": 1, "loss": 1.0}\n'
        monkeypatch.setattr(ssh_transport, "CALL_TIMEOUT_S", 2.0)
        remote.pause()  # sshd stops answering: a new connection gets no greeting
        try:
            for pid in remote.connection_pids(name):
                os.kill(pid, signal.SIGKILL)  # and the connection there is gone
            with log.open("ab") as handle:
                handle.write(b'{"step": 2, "loss": 0.9}\n')
            wait_for(lambda: reader.poll().data == b"" and reader.problem, what="a failure")
            assert reader.problem is not None
            assert reader.problem.startswith(f"RECONNECTING {name} (2nd try): ")
            out = io.StringIO()
            unanswered = run_path(f"{host()}:{log}")
            assert (
                check_command(unanswered, as_json=True, rules_file=None, out=out)
                == EXIT_HOST_UNREACHABLE
            )
        finally:
            remote.resume()
        # back: the read resumes where it was, nothing lost, nothing twice
        caught: list[bytes] = []

        def resumed() -> bool:
            caught.append(reader.poll().data)
            return reader.offset == log.stat().st_size

        wait_for(resumed, what="the read to resume")
        assert b"".join(caught) == b'{"step": 2, "loss": 0.9}\n'
        assert reader.problem is None

    def test_authentication_failure_and_changed_host_key(
        self, remote: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        log = tmp_path / "logging.jsonl"
        log.write_bytes(b'{"step": 1, "loss": 1.0}\n')
        wrong_key, wrong_host = remote.refusing_configs(tmp_path)
        assert (
            main(["check", "--ssh-command", f"ssh -F {wrong_key}", f"{host()}:{log}"])
            == EXIT_HOST_AUTH
        )
        assert "authentication failed" in capsys.readouterr().out
        assert (
            main(["check", "--ssh-command", f"ssh -F {wrong_host}", f"{host()}:{log}"])
            == EXIT_HOST_KEY
        )
        assert "host key" in capsys.readouterr().out


def test_a_broken_pipe_to_ssh_is_judged_by_what_ssh_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ssh refuses the key and exits while the call is still being written: the write
    breaks its pipe, and the failure is what ssh said (authentication), not "cannot run"."""
    fake = tmp_path / "ssh"
    fake.write_text("#!/bin/sh\necho 'Permission denied (publickey).' >&2\nexit 255\n")
    fake.chmod(0o755)
    monkeypatch.setenv("GRPO_TUI_SSH", str(fake))
    connection = ssh_transport.Connection(SshTarget(host="gpu-box"))
    # larger than a pipe holds: the write waits for ssh, which ends without reading it
    with pytest.raises(TransportError) as failed:
        connection.run(": " + "x" * (1 << 18))
    assert failed.value.kind == "auth"
    assert "authentication failed" in str(failed.value)


def test_a_poll_costs_one_call_per_machine(remote: SshServer, tmp_path: Path) -> None:
    """Steady polling of several files of one machine: one ssh call per round, and a
    file that did not change is not read again."""
    paths = [tmp_path / f"log{n}.jsonl" for n in range(3)]
    for path in paths:
        path.write_bytes(b"line\n")
    name = host()
    readers = [TailReader(run_path(f"{name}:{path}")) for path in paths]
    for reader in readers:
        assert read_all(reader) == b"line\n"
    machine = next(fs for fs in filesystems() if fs.connection.target.host == name)
    before = machine.connection.traffic.calls
    for _ in range(3):
        for reader in readers:
            assert reader.poll().data == b""
    assert machine.connection.traffic.calls - before == 3


class TestBytesMoved:
    """A growing file moves what it grew by, and a file changed in place is still seen."""

    @staticmethod
    def _machine(name: str) -> ssh_transport.Traffic:
        return next(
            fs for fs in filesystems() if fs.connection.target.host == name
        ).connection.traffic

    def test_growth_moves_the_growth(self, remote: SshServer, tmp_path: Path) -> None:
        """Lines appended (some in two pieces) cost what they add and a fixed part per poll,
        not the bytes the reader checks the file by nor a piece of a line already held."""
        log = tmp_path / "logging.jsonl"
        line = b'{"step": 0, "reward": 0.5, "text": "' + b"x" * 900 + b'"}\n'
        log.write_bytes(line * 3)
        name = host()
        reader = TailReader(run_path(f"{name}:{log}"))
        assert read_all(reader) == line * 3
        traffic = self._machine(name)
        received, grown, polls = traffic.received, 0, 0
        for n in range(20):
            pieces = [line[:500], line[500:]] if n % 2 else [line]
            for piece in pieces:
                with log.open("ab") as handle:
                    handle.write(piece)
                grown += len(piece)
                polls += 1
                read_all(reader)
        assert reader.offset == log.stat().st_size
        per_poll = (traffic.received - received - grown) / polls
        # the stat line, the answer's marks: far less than the 64-byte head in hex and the
        # 64 bytes before the offset (~200 B) or the 500-byte piece read again
        assert 0 < per_poll < 100, per_poll

    def test_rewritten_in_place_longer_is_seen(self, remote: SshServer, tmp_path: Path) -> None:
        """Same inode, bigger, its start changed: read again from the start, not taken for
        growth (the far side's checksum of the bytes held does not match)."""
        log = tmp_path / "logging.jsonl"
        log.write_bytes(b'{"step": 1, "pad": "' + b"a" * 100 + b'"}\n')
        reader = TailReader(run_path(f"{host()}:{log}"))
        first = read_all(reader)
        with log.open("r+b") as handle:  # in place: the inode stays
            handle.write(b'{"step": 9, "pad": "' + b"b" * 100 + b'"}\n{"step": 10}\n')
        chunk = reader.poll()
        assert chunk.restarted == "rewritten"
        assert chunk.data + read_all(reader) != first
        assert reader.offset == log.stat().st_size


def test_header_says_reconnecting_and_names_the_machine() -> None:
    """A run whose machine is being reconnected to shows that as its state, and its label
    says which machine (presentation: the header's words)."""
    path = run_path("gpu7:/data/output")
    run = Run(path)
    run.status.unreadable = "RECONNECTING gpu7 (3rd try): connection refused"
    assert state_headline(run, now=0.0) == (
        RunState.UNREADABLE,
        "RECONNECTING gpu7 (3rd try): connection refused",
    )
    run.status.unreadable = "permission denied: gpu7:/data/output"
    assert state_headline(run, now=0.0)[1] == "UNREADABLE permission denied: gpu7:/data/output"
    assert machine_of(path) == "gpu7"
    assert machine_of(run_path("me@gpu7:runs")) == "me@gpu7"
    assert machine_of(Path("/data/output")) is None


async def test_q_quits_while_the_machine_does_not_answer(
    remote: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live monitor on a machine that stopped answering: the header says it is
    reconnecting, and `q` quits while the reader waits on ssh."""
    log = tmp_path / "logging.jsonl"
    log.write_bytes(b'{"step": 1, "loss": 1.0}\n')
    monkeypatch.setattr(ssh_transport, "CALL_TIMEOUT_S", 2.0)
    remote.pause()
    try:
        app = app_for(run_path(f"{host()}:{log}"))
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(
                pilot,
                lambda: (app.run_screen.session.run.unreadable or "").startswith(
                    "RECONNECTING node"
                ),
                what="the reconnecting state",
            )
            assert "RECONNECTING node" in screen_text(app)
            await pilot.press("q")
            assert app.return_code == 0
    finally:
        remote.resume()
