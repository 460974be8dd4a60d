"""What the monitor and the board share as Textual apps: our themes, one toast at a time,
and a command palette of our own actions with a screenshot that saves where it can."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TypeVar

from rich.cells import cell_len, set_cell_size
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from grpo_tui.alerts import AlertSettings, terminal_text
from grpo_tui.events import Event
from grpo_tui.ui.screenshot import (
    NAME_FORMAT,
    screenshot_directories,
    shown_path,
    writable_directory,
)
from grpo_tui.ui.themes import ThemeSpec, load_themes, next_theme_name, resolve_theme_name
from grpo_tui.untrusted import printable

ResultT = TypeVar("ResultT")

#: a toast's widest share of the screen, and the cells its padding and border take (Toast in
#: toast.tcss, Textual's own border, and the rack's edge: measured, a longer one wraps)
TOAST_SHARE = 0.7
TOAST_PADDING = 6


class GrpoApp(App[ResultT]):
    """A grpo-tui screen app: themed from the start, telling one thing at a time."""

    def __init__(self, *, theme: str | None, environ: Mapping[str, str] | None) -> None:
        # Textual removes NO_COLOR from the environment in App.__init__: decide first
        start = resolve_theme_name(theme, os.environ if environ is None else environ)
        super().__init__()
        self._themes: dict[str, ThemeSpec] = load_themes()
        # every theme before the first stylesheet pass, so startup styles the screen once
        for spec in self._themes.values():
            self.register_theme(spec.textual_theme())
        self.theme = start

    @property
    def theme_spec(self) -> ThemeSpec:
        """The theme shown now (its zone palette colours the data; the default for a
        theme we do not ship). Set from the start: widgets built before mount take it."""
        return self._themes.get(self.theme) or self._themes[resolve_theme_name(None, {})]

    def tell(self, text: str, *, title: str = "", error: bool = False, timeout: float = 5) -> None:
        """One notification at a time, on the footer's line (the .tcss), cut to that line: a
        new one takes the place of the one shown, so none stacks up over the data. Inert:
        never markup."""
        self.clear_notifications()
        words = printable(f"{title}: {text}" if title else text)
        # a toast is one line (the .tcss): a longer text would wrap out of sight
        room = max(12, int(self.size.width * TOAST_SHARE) - TOAST_PADDING)
        if cell_len(words) > room:
            words = set_cell_size(words, room - 1) + "…"
        self.notify(
            words,
            severity="error" if error else "information",
            timeout=timeout,
            markup=False,
        )

    def tell_events(self, events: Sequence[Event], settings: AlertSettings, *, named: bool) -> None:
        """Tell the events the runs bring (core decided them): the newest in a toast (after
        its run's name when `named`), the bell or notification as the settings say."""
        if not events:
            return
        newest = events[-1]
        self.tell(
            f"{newest.run}: {newest.summary}" if named else newest.summary,
            title=f"alert {newest.kind.word}",
            error=newest.worsening,
            timeout=15,
        )
        for event in events:
            text = terminal_text(event, settings)
            if text and self._driver is not None and not self.is_headless:
                self._driver.write(text)  # our own fixed text, as App.bell() writes BEL

    def action_cycle_theme(self) -> None:
        self.theme = next_theme_name(self.theme)
        self.tell(self.theme, title="theme", timeout=2)

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """An SVG of the screen, saved where it can be (Downloads, else home, else the
        temporary directory), and where it went told."""
        where = Path(path) if path else writable_directory(screenshot_directories())
        if where is None:
            self.tell("no writable directory to save it in", title="screenshot", error=True)
            return
        name = filename or time.strftime(NAME_FORMAT)
        try:
            saved = self.save_screenshot(name, str(where))
        except OSError as error:
            self.tell(f"not saved: {error}", title="screenshot", error=True)
            return
        # a toast is one line (the .tcss): the path is cut to it, never wrapped out of sight
        words = "screenshot saved "
        room = max(12, int(self.size.width * TOAST_SHARE) - TOAST_PADDING - len(words))
        self.tell(words + shown_path(Path(saved), room), timeout=8)

    def palette_extras(self) -> Iterable[SystemCommand]:
        """Commands of this app beyond its key bindings (none unless overridden)."""
        return ()

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        # our actions first; Textual's theme picker is replaced by our own themes
        for binding in self.BINDINGS:
            if isinstance(binding, Binding) and binding.description:
                key = self.get_key_display(binding)
                run = partial(self.run_action, binding.action)
                yield SystemCommand(binding.description, f"key: {key}", run)
        yield from self.palette_extras()
        for name, spec in self._themes.items():
            choose = partial(setattr, self, "theme", name)
            yield SystemCommand(f"Theme: {name}", spec.description, choose, discover=False)
        for command in super().get_system_commands(screen):
            if command.title == "Screenshot":
                # Textual's saves to ~/Downloads only, which a GPU server seldom has
                yield SystemCommand(command.title, command.help, self.action_screenshot)
            elif command.title not in ("Theme", "Quit"):
                yield command
