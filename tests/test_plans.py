"""Line plans are cached by adapter and key set, so a derived adapter reads its own way."""

from __future__ import annotations

from dataclasses import replace

from grpo_tui.sources.formats import MSSWIFT, TRL
from grpo_tui.sources.plans import fresh_plan, line_plan


class TestPlanCache:
    """The plan cache lives in sources/plans.py, keyed on the adapter itself."""

    def test_one_key_set_one_plan(self) -> None:
        """Two lines of one key set share the cached plan; a fresh plan is a new one."""
        first = line_plan(MSSWIFT, {"loss": 1.0, "global_step/max_steps": "1/9"})
        again = line_plan(MSSWIFT, {"loss": 2.0, "global_step/max_steps": "2/9"})
        assert first is again
        assert fresh_plan(MSSWIFT, {"loss": 1.0, "global_step/max_steps": "1/9"}) is not first

    def test_derived_adapter_plans_of_its_own(self) -> None:
        """An adapter made with `replace` (no cache reset by hand) reads by its own tables."""
        line = {"loss": 0.5, "progress": "3/10"}
        assert line_plan(TRL, line).step_keys == ()
        derived = replace(TRL, name="trl-progress", fraction_step_keys=("progress",))
        assert line_plan(derived, line).step_keys == ("progress",)
        assert line_plan(TRL, line).step_keys == ()

    def test_canonical_names_per_adapter(self) -> None:
        """A derived adapter with other aliases names keys its own way."""
        derived = replace(TRL, name="trl-renamed", aliases={"reward": ("score",)})
        assert TRL.canonical("score") == "score"
        assert derived.canonical("score") == "reward"
