"""Spacing out repeated work (frames, diagnoses) so a slow one never eats the box."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Pacer:
    """Work may run again `interval` seconds after it last ran, or later when it was slow:
    a run that took t seconds waits `share` × t, so it takes at most 1/share of the time."""

    interval: float
    share: float = 5.0
    next_at: float = 0.0

    def ready(self) -> bool:
        return time.monotonic() >= self.next_at

    def done(self, seconds: float) -> None:
        """It just ran, taking `seconds`."""
        self.next_at = time.monotonic() + max(self.interval, self.share * seconds)

    def now(self) -> None:
        """Let it run at once, whenever it last ran (a theme change, an unpause)."""
        self.next_at = 0.0
