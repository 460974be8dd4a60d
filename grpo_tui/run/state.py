"""Is the run reading its history, live, stalled, finished, or not there yet?

One answer for every view: the live monitor's header and `grpo-tui check` (a cron job
must hear "stalled" as clearly as the screen shows it).
"""

from __future__ import annotations

from grpo_tui.numbers import format_age, format_duration
from grpo_tui.run.live import Run
from grpo_tui.vocabulary import RunState

#: "stalled" means no data for more than max(STALL_INTERVALS × the usual interval, STALL_FLOOR_S)
STALL_INTERVALS = 5
STALL_FLOOR_S = 120.0
#: with no usual interval known yet (fewer than 3 timed lines), wait this long
STALL_UNKNOWN_INTERVAL_S = 600.0


def stall_threshold(usual_interval: float | None) -> float:
    """Seconds without data after which a run counts as stalled."""
    if usual_interval is None:
        return STALL_UNKNOWN_INTERVAL_S
    return max(STALL_INTERVALS * usual_interval, STALL_FLOOR_S)


def run_state(run: Run, now: float) -> tuple[RunState, float | None]:
    """The run's state and the seconds since its newest data (None before any)."""
    age = run.data_age(now)
    if run.unreadable is not None:
        return RunState.UNREADABLE, age
    if run.reading is not None:
        return RunState.READING, age
    if run.ended():
        return RunState.FINISHED, age
    if age is None or not len(run.store):
        return RunState.WAITING, age  # nothing yet, or only lines that are no metrics
    if age > stall_threshold(run.usual_interval()):
        return RunState.STALLED, age
    return RunState.LIVE, age


def stall_words(run: Run, age: float) -> str:
    """What a stalled run is told with: "no data for 3h52m, usually every 9s"."""
    interval = run.usual_interval()
    usual = f", usually every {format_duration(interval)}" if interval is not None else ""
    return f"no data for {format_age(age)}{usual}"
