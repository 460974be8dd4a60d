"""What following a run over ssh costs: bytes moved against bytes the log grew, and CPU.

    PYTHONPATH=$PWD python bench/remote.py [--polls 300]

Starts a real sshd on 127.0.0.1 (tests/helpers.py `start_sshd`: needs /usr/sbin/sshd),
grows a log with a real ms-swift run's lines (tests/corpus), some written in two pieces
(a line split across polls), and polls it after every write with two tail readers: one
over ssh (`bench:PATH`), one local. Bytes are counted where they cross: what ssh's stdout
returned and the scripts written to it (grpo_tui/sources/remote/transport.py `Traffic`).
Prints the ratio to the growth, the fixed cost of a poll that found nothing new, and the
CPU each reader took (the remote one with its ssh client's share).
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
    print(
        f"burst: {len(burst)} B grown at once, {burst_moved} B moved ({burst_moved / len(burst):.4f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
