"""What following a run over ssh costs: bytes moved against bytes the log grew, and CPU.

    PYTHONPATH=$PWD python bench/remote.py [--polls 300]

Starts a real sshd on 127.0.0.1 (tests/helpers.py `start_sshd`: needs /usr/sbin/sshd),
grows a log with a real ms-swift run's lines (tests/corpus), some written in two pieces
(a line split across polls), and polls it after every write with two tail readers: one
over ssh (`bench:PATH`), one local. Bytes are counted where they cross: what ssh's stdout
returned and the scripts written to it (grpo_tui/sources/remote/transport.py `Traffic`).
Prints the ratio to the growth, the fixed cost of a poll that found nothing new, the
bytes moved as a share of the growth plus a fixed cost per poll (fitted from the two
phases: same growth, twice the polls), and the CPU each reader took (the remote one with
its ssh client's share). Then (`--monitor S`, needs tmux) two monitors side by side in
tmux for S seconds while the log grows by a line a second: `grpo-tui tail LOG` and
`grpo-tui tail bench:LOG`, and the share of a core each took (the remote one with its ssh
session and ControlMaster).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from helpers import SSHD, start_sshd  # noqa: E402

from grpo_tui.sources.remote import filesystems, run_path  # noqa: E402
from grpo_tui.sources.tail import TailReader  # noqa: E402

SOURCE = ROOT / "tests/corpus/msswift-qwen3vl-summary-pein/v0-20251231-032857/logging.jsonl"


def _cpu_of(pid: int) -> float:
    """Seconds of CPU a process used so far (/proc: utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _master_pid(check: list[str]) -> int:
    """The ControlMaster's pid (`ssh -O check` says it)."""
    said = subprocess.run(check, capture_output=True, text=True, check=False).stderr
    return int(said.split("pid=")[1].split(")")[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=300, help="polls in the steady phase")
    parser.add_argument(
        "--monitor", type=float, default=60.0, help="seconds of the two monitors (0: none)"
    )
    args = parser.parse_args()
    if not SSHD.exists():
        print("no /usr/sbin/sshd here (apt-get install openssh-server)")
        return 1
    work = Path(tempfile.mkdtemp(prefix="grpo-tui-bench-remote-"))
    (work / "sshd").mkdir()
    sshd = start_sshd(work / "sshd")
    os.environ["GRPO_TUI_SSH"] = sshd.ssh_command
    try:
        log = work / "run" / "logging.jsonl"
        log.parent.mkdir()
        log.write_bytes(b"")
        lines = SOURCE.read_bytes().splitlines(keepends=True)
        remote = TailReader(run_path(f"bench:{log}"))
        local = TailReader(log)
        remote.poll()
        local.poll()
        machine = filesystems()[0]
        traffic = machine.connection.traffic
        session = machine.connection._shell
        assert session is not None

        def poll_both(cpu: list[float]) -> tuple[bytes, bytes]:
            start = time.process_time()
            far = remote.poll().data
            cpu[0] += time.process_time() - start
            start = time.process_time()
            near = local.poll().data
            cpu[1] += time.process_time() - start
            return far, near

        # idle polls: nothing new, the fixed cost of asking
        cpu = [0.0, 0.0]
        before = (traffic.calls, traffic.sent + traffic.received)
        for _ in range(args.polls):
            poll_both(cpu)
        idle_calls = traffic.calls - before[0]
        idle_bytes = traffic.sent + traffic.received - before[1]
        master = _master_pid(machine.connection.argv("-O", "check"))
        phases = []
        for split in (False, True):
            # steady growth: a line per poll; then every line in two pieces (a line split
            # across polls is read again whole once its end came: the worst case)
            cpu = [0.0, 0.0]
            ssh_cpu = _cpu_of(session.pid) + _cpu_of(master)
            before = (traffic.calls, traffic.sent, traffic.received)
            grown = polls = 0
            far_read, near_read = bytearray(), bytearray()
            for n in range(args.polls):
                line = lines[n % len(lines)]
                pieces = [line[: len(line) // 2], line[len(line) // 2 :]] if split else [line]
                for piece in pieces:
                    with log.open("ab") as handle:
                        handle.write(piece)
                    grown += len(piece)
                    polls += 1
                    far, near = poll_both(cpu)
                    far_read += far
                    near_read += near
            assert far_read == near_read, "the readers disagree"
            phases.append(
                (
                    "split lines" if split else "whole lines",
                    grown,
                    polls,
                    traffic.calls - before[0],
                    traffic.sent - before[1],
                    traffic.received - before[2],
                    cpu,
                    _cpu_of(session.pid) + _cpu_of(master) - ssh_cpu,
                )
            )
        assert remote.offset == local.offset == log.stat().st_size
        # a burst: a backlog of 2000 lines at once
        burst = b"".join(lines[n % len(lines)] for n in range(2000))
        before_burst = traffic.sent + traffic.received
        with log.open("ab") as handle:
            handle.write(burst)
        while remote.poll().more:
            pass
        burst_moved = traffic.sent + traffic.received - before_burst
        monitors = _monitors(work, lines, sshd.ssh_command, args.monitor) if args.monitor else None
    finally:
        sshd.stop()
    print(
        f"idle: {args.polls} polls, {idle_calls} ssh calls, {idle_bytes / args.polls:.0f} B per poll"
    )
    for name, grown, polls, calls, sent, received, cpu, ssh_cpu in phases:
        print(
            f"{name}: {grown} B grown in {polls} polls ({grown / polls:.0f} B per poll), "
            f"{calls} ssh calls; received {received} B, sent {sent} B"
        )
        print(
            f"  received / grown = {received / grown:.3f}; (sent + received) / grown = "
            f"{(sent + received) / grown:.3f}; beyond the growth: "
            f"{(sent + received - grown) / polls:.0f} B per poll"
        )
        print(
            f"  CPU: remote reader {cpu[0] * 1e3:.0f} ms + ssh (session and master) "
            f"{ssh_cpu * 1e3:.0f} ms; local reader {cpu[1] * 1e3:.0f} ms"
        )
    (
        (_, grown, polls_1, _, sent_1, received_1, _, _),
        (_, _, polls_2, _, sent_2, received_2, _, _),
    ) = phases
    per_poll = (sent_2 + received_2 - sent_1 - received_1) / (polls_2 - polls_1)
    share = (sent_1 + received_1 - per_poll * polls_1) / grown
    print(
        f"moved = {share:.3f} x the growth + {per_poll:.0f} B per poll that found data "
        f"(target: <= 1.1 x + a small fixed cost)"
    )
    print(
        f"burst: {len(burst)} B grown at once, {burst_moved} B moved ({burst_moved / len(burst):.4f}x)"
    )
    if monitors is not None:
        local_cpu, remote_cpu, seconds = monitors
        print(
            f"monitors over {seconds:.0f} s, a line a second: local {local_cpu:.2f} % of a core, "
            f"over ssh {remote_cpu:.2f} % (with its ssh processes); ratio {remote_cpu / local_cpu:.2f}"
        )
    return 0


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a process and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += _cpu_of(current)
        except OSError:
            continue
        todo += children.get(current, [])
    return total


def _monitors(
    work: Path, lines: list[bytes], ssh_command: str, seconds: float
) -> tuple[float, float, float]:
    """Two monitors in tmux on one log growing a line a second, local and over ssh: the
    share of a core each took (the remote one with its ssh session and ControlMaster)."""
    from footprint import Pane, python

    log = work / "watched" / "logging.jsonl"
    log.parent.mkdir()
    log.write_bytes(b"".join(lines[:50]))
    *env, interpreter = python()
    tail = [*env, f"GRPO_TUI_SSH={ssh_command}", interpreter, "-m", "grpo_tui.cli", "tail"]
    near, far = Pane("local", [*tail, str(log)]), Pane("remote", [*tail, f"bench:{log}"])
    try:
        for pane in (near, far):
            pane.wait_for("step ", timeout=60)
        masters = subprocess.run(
            ["pgrep", "-f", r"\[mux\]"], capture_output=True, text=True, check=False
        ).stdout.split()

        def cpu() -> tuple[float, float]:
            master = sum(_cpu_of(int(m)) for m in masters if Path(f"/proc/{m}").exists())
            return _tree_cpu(near.pid), _tree_cpu(far.pid) + master

        time.sleep(3)
        before, started = cpu(), time.perf_counter()
        n = 50
        while time.perf_counter() - started < seconds:
            with log.open("ab") as handle:
                handle.write(lines[n % len(lines)])
            n += 1
            time.sleep(1.0)
        after, took = cpu(), time.perf_counter() - started
    finally:
        near.close()
        far.close()
    return 100 * (after[0] - before[0]) / took, 100 * (after[1] - before[1]) / took, took


if __name__ == "__main__":
    sys.exit(main())
