"""grpo-tui: a terminal live monitor that tells whether a GRPO training run is learning."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from grpo_tui.run.live import Run

__version__ = "0.1.0"


def load_run(path: str | Path) -> Run:
    """Read everything PATH holds now (a log, run or output directory, a console log, a
    trainer_state.json) into a Run: `load_run("output/").to_pandas()` in a notebook."""
    from pathlib import Path

    from grpo_tui.run.follow import load_run as read

    return read(Path(path))


__all__ = ["__version__", "load_run"]
