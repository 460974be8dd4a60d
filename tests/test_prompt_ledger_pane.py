"""Pilot test of the completions pane's `c`: the groups of one prompt-ledger category at a
time (never solved, regressed, first solved, always solved), then every group again."""

from __future__ import annotations

import functools
from pathlib import Path

from helpers import app_for, wait_until

from grpo_tui.run.completions.ledger import LINKED
from grpo_tui.sim import SimConfig, write_run
from grpo_tui.ui.widgets.completions import CompletionsPanel
from grpo_tui.views.prompts import CATEGORY_WORDS


def status(panel: CompletionsPanel) -> str:
    return str(panel.query_one("#completions-status").render())


def shows(panel: CompletionsPanel, words: str) -> bool:
    return words in status(panel)


class TestCategoryKey:
    """`c` links each ledger category to its completions."""

    async def test_c_cycles_the_categories_and_shows_their_groups(self, tmp_path: Path) -> None:
        """Each press shows only groups of prompts in the next category the ledger holds
        prompts in (or says none is at this step), the empty ones passed over, and the
        press after the last shows every group again."""
        config = SimConfig("healthy", seed=0, prompt_pool=16, max_steps=80, eval_steps=0)
        run = write_run(tmp_path, config=config)
        app = app_for(run, cycle_seconds=3600)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: app.run_screen.session.run.version > 0 and app.settled)
            await pilot.press("3")
            panel = app.run_screen.query_one(CompletionsPanel)
            await wait_until(pilot, lambda: panel.settled and panel.page is not None)
            index = panel._source.index
            assert index is not None
            await wait_until(pilot, lambda: app.run_screen.session.prompts is not None)
            ledger = app.run_screen.session.prompts
            assert ledger is not None
            held = [category for category in LINKED if ledger.counts.get(category, 0) > 0]
            assert held and len(held) < len(LINKED)  # at least one passed over
            shown = []
            for category in held:
                await pilot.press("c")
                only = f"{CATEGORY_WORDS[category][0]} prompts only (c)"
                none = f"with a {CATEGORY_WORDS[category][0]} prompt"
                await wait_until(pilot, functools.partial(shows, panel, only))
                await wait_until(pilot, lambda: panel.settled and not panel._loading)
                group = panel.shown_group
                if group is not None and panel.cursor.place.group in panel.visible_groups:
                    assert index.prompt_categories([group]) == [category]
                    shown.append(category)
                else:
                    await wait_until(pilot, functools.partial(shows, panel, none))
            await pilot.press("c")
            await wait_until(pilot, lambda: "prompts only" not in status(panel))
            assert panel.cursor.category is None
        # the healthy run's prompts get solved: that category has groups to show
        assert shown and LINKED[2] in shown
