"""ROLL (sources/formats/roll.py): the stdout tracker's `metrics_tag:` lines and TensorBoard
files with ROLL's tags, its reduction tags in three spellings. Fixture: tests/fixtures/roll/,
built from ROLL's source at 8eb27cc (its .source.txt); event files are written here with
TensorBoard's own writer."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers import write_tb_events
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sources.discover import discover
from grpo_tui.sources.formats.roll import RollConsoleParser

CONSOLE = Path(__file__).parent / "fixtures" / "roll" / "roll-8eb27cc_console.log"
PREFIX = "[2026-08-19 15:36:11] [tracking.py (161)] [INFO] [DRIVER 0 / 1][PID 42] "


def reward(step: int) -> float:
    return 0.2 + 0.012 * step + (0.02 if step % 3 else -0.01)


class TestConsole:
    """The stdout tracker's lines."""

    def test_the_run(self) -> None:
        """Every step, the eval accuracy at its steps, a verdict."""
        run = load_run(CONSOLE)
        assert run.framework == "ROLL console log"
        store = run.store
        assert store.points("reward").steps.tolist() == [float(s) for s in range(40)]
        assert store.points("eval_reward").steps.tolist() == [9.0, 19.0, 29.0, 39.0]
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}

    def test_the_clip_count_is_no_share(self) -> None:
        """`total_response_length/clip` counts responses: kept under its own name."""
        store = load_run(CONSOLE).store
        assert "clipped_ratio" not in store.names()
        assert store.points("token/total_response_length/clip").values[0] == 3.0

    def test_a_bare_nan(self) -> None:
        """json.dumps writes NaN bare: read as NaN, never a bad line."""
        parser = RollConsoleParser()
        line = (
            PREFIX
            + 'metrics_tag: {"step": 2, "metrics": {"actor/kl_loss": NaN, "critic/score/mean": 0.5}}'
        )
        (record,) = parser.feed(line, 1)
        assert record.values["step"] == 2 and math.isnan(record.values["actor/kl_loss"])
        assert parser.bad == []

    def test_a_line_cut_off(self) -> None:
        """A metrics_tag line cut in its JSON is counted."""
        parser = RollConsoleParser()
        assert parser.feed(PREFIX + 'metrics_tag: {"step": 2, "metrics": {"actor/kl', 1) == []
        assert [reason for _, reason, _ in parser.bad] == ["a metrics_tag line cut off"]

    @settings(max_examples=60, deadline=None)
    @given(
        st.integers(min_value=0, max_value=10**6),
        st.dictionaries(
            st.text(min_size=1, max_size=30),
            st.floats(allow_nan=False) | st.integers(min_value=-(10**9), max_value=10**9),
            max_size=8,
        ),
    )
    def test_any_metrics_dict_round_trips(self, step: int, metrics: dict[str, float]) -> None:
        """What StdoutTracker writes is read back, value for value."""
        parser = RollConsoleParser()
        line = PREFIX + f"metrics_tag: {json.dumps({'step': step, 'metrics': metrics})}"
        records = parser.feed(line, 1)
        assert [r.values for r in records] == ([{**metrics, "step": step}] if metrics else [])


class TestTensorBoard:
    """Event files with ROLL's tags."""

    @pytest.mark.parametrize("tag", ["", "@sum", "_sum"])
    def test_every_spelling_of_the_reduction_tag(self, tmp_path: Path, tag: str) -> None:
        """`@sum` kept (old ROLL), `_sum` (tensorboardX's rewrite), stripped (now); a
        domain's score when the batch's is not logged."""
        rows = [
            (
                step,
                {
                    "math_rule/critic/score/mean": reward(step),
                    "math_rule/token/response_length/mean": 700.0 + step,
                    f"actor/ppo_ratio_clipfrac{tag}": 0.002,
                    f"actor/kl_loss{tag}": 0.0004 * step,
                    f"actor/pg_loss{tag}": 0.01,
                    "token/total_response_length/clip": 2.0,
                },
            )
            for step in range(40)
        ]
        write_tb_events(tmp_path / "tensorboard", rows)
        assert discover(tmp_path).adapter == "roll-tensorboard"
        run = load_run(tmp_path)
        store = run.store
        assert store.points("clip_ratio").values[0] == pytest.approx(0.002)
        assert store.points("kl").values[-1] == pytest.approx(0.0004 * 39)
        assert store.points("reward").values[0] == pytest.approx(reward(0))
        assert "healthy" in {s.id.value for s in diagnose(run, Rules()).scenarios}
