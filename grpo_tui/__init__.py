"""grpo-tui: a terminal live monitor that tells whether a GRPO training run is learning."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from grpo_tui.run.live import Run

__version__ = "0.1.0"


def load_run(path: str | Path, *, format: str | None = None, run: str | None = None) -> Run:
    """Read everything PATH holds now (a log, run or output directory, a console log, a
    trainer_state.json, TensorBoard event files, a trackio database) into a Run:
    `load_run("output/").to_pandas()` in a notebook. `format` reads PATH as that
    framework's files (`grpo-tui tail --format`); `run` picks a run in a trackio project."""
    from pathlib import Path

    from grpo_tui.run.follow import load_run as read
    from grpo_tui.sources.feed import SourceOptions

    return read(Path(path), options=SourceOptions(only=format, run_name=run))


__all__ = ["__version__", "load_run"]
