"""`load_run`: a whole run read headlessly (for `check`, `inspect` and tests)."""

from __future__ import annotations

from grpo_tui.run.follow import load_run

__all__ = ["load_run"]
