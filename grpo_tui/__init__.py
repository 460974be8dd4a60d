"""grpo-tui: a terminal live monitor that tells whether a GRPO training run is learning."""

from __future__ import annotations

__version__ = "0.1.0"
