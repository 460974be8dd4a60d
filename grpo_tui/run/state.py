"""Is the run reading its history, live, stalled, stopped, finished, or not there yet?

One answer for every view: the live monitor's header and `grpo-tui check` (a cron job
must hear "stalled" as clearly as the screen shows it).

"Data" is metric records: a log that grows with warnings while no record comes is no live
run (a hung trainer keeps printing), and says so ("no metrics for 12m while output.log
grows"). A run whose console says why it ended is STOPPED with that cause: at once for a
line that ends runs by itself (out of memory, a collective timeout, a signal), once the
metrics are late too for a bare traceback (a trainer may print one and go on). A run that
ran to its end (an end line or record, max_steps, `done_frac` 1, its schedule) is FINISHED,
never live.
"""

from __future__ import annotations

from grpo_tui.numbers import format_age, format_duration, format_step
from grpo_tui.run.live import Run
from grpo_tui.sources.stop_lines import StopLine
from grpo_tui.vocabulary import RunState, StopKind

#: "stalled" means no data for more than max(STALL_INTERVALS × the usual interval, STALL_FLOOR_S)
STALL_INTERVALS = 5
STALL_FLOOR_S = 120.0
#: with no usual interval known yet (fewer than 3 timed lines), wait this long
STALL_UNKNOWN_INTERVAL_S = 600.0


#: a stop line that does not end runs by itself (a bare traceback) is the run's end once
#: no metric record came for max(STOP_INTERVALS × the usual interval, STOP_FLOOR_S)
STOP_INTERVALS = 2
STOP_FLOOR_S = 30.0
#: with no usual interval known yet, wait this long
STOP_UNKNOWN_INTERVAL_S = 120.0


def stall_threshold(usual_interval: float | None) -> float:
    """Seconds without data after which a run counts as stalled."""
    if usual_interval is None:
        return STALL_UNKNOWN_INTERVAL_S
    return max(STALL_INTERVALS * usual_interval, STALL_FLOOR_S)


def stop_threshold(usual_interval: float | None) -> float:
    """Seconds without metrics after which a bare traceback is the run's end."""
    if usual_interval is None:
        return STOP_UNKNOWN_INTERVAL_S
    return max(STOP_INTERVALS * usual_interval, STOP_FLOOR_S)


def stopped_by(run: Run, now: float) -> StopLine | None:
    """The failure or kill that ended the run, when its console says so (None: none
    stands, or the line that stands says it completed)."""
    stop = run.stop
    if stop is None or stop.kind is StopKind.COMPLETED:
        return None
    if stop.decisive:
        return stop
    age = run.data_age(now)
    if age is None or age > stop_threshold(run.usual_interval()):
        return stop
    return None


def run_state(run: Run, now: float) -> tuple[RunState, float | None]:
    """The run's state and the seconds since its newest data (None before any)."""
    age = run.data_age(now)
    if run.unreadable is not None:
        return RunState.UNREADABLE, age
    if run.reading is not None:
        return RunState.READING, age
    if run.ended():
        return RunState.FINISHED, age
    if stopped_by(run, now) is not None:
        return RunState.STOPPED, age
    if age is None or not len(run.store):
        return RunState.WAITING, age  # nothing yet, or only lines that are no metrics
    if age > stall_threshold(run.usual_interval()):
        return RunState.STALLED, age
    return RunState.LIVE, age


def stall_words(run: Run, age: float, now: float | None = None) -> str:
    """What a stalled run is told with: "no data for 3h52m, usually every 9s", or, while
    its console log still grows, "no metrics for 12m while output.log grows, usually every
    9s" (at `now`)."""
    interval = run.usual_interval()
    usual = f", usually every {format_duration(interval)}" if interval is not None else ""
    log_age = run.log_age(now) if now is not None else None
    if log_age is not None and log_age <= stall_threshold(interval) and log_age < age:
        name = run.status.log_name or "the log"
        return f"no metrics for {format_age(age)} while {name} grows{usual}"
    return f"no data for {format_age(age)}{usual}"


def line_number(line_no: int) -> str:
    """A line number as the header quotes it: "9 812" (thousands apart)."""
    return f"{line_no:,}".replace(",", " ")


def stop_words(run: Run, stop: StopLine) -> str:
    """What a stopped run is told with: "at step 412: CUDA out of memory (output.log line
    9 812)". The step is the one the line names, else the newest step read. The cause is
    the log's text: untrusted, made printable where it is shown."""
    step = float(stop.step) if stop.step is not None else run.store.last_step()
    at = f"at step {format_step(step)}: " if step is not None else ""
    return f"{at}{stop.cause} ({stop.name} line {line_number(stop.line_no)})"
