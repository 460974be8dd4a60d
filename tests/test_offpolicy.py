"""Off-policy drift (docs/health.md, "Off-policy drift"): the adapters' off-policy keys, the
judge on constructed series (growing, steady, noisy), on the real corpus runs that log
them, and the finding's words, severity and steadiness."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grpo_tui.context import RunContext
from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.findings import find
from grpo_tui.health.offpolicy import growth, off_policy, stale_bias, staleness_growth
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import RunSnapshot, SeriesView, snapshot
from grpo_tui.health.verdict import Diagnosis, Scenario
from grpo_tui.run.follow import load_run
from grpo_tui.sources.formats.nemorl import NEMORL
from grpo_tui.sources.formats.primerl import PRIMERL
from grpo_tui.sources.formats.skyrl import SKYRL_CONSOLE as SKYRL
from grpo_tui.sources.formats.slime import SLIME_CONSOLE as SLIME
from grpo_tui.sources.formats.trl import TRL
from grpo_tui.sources.formats.verl import VERL
from grpo_tui.vocabulary import ScenarioId, Severity

TESTS = Path(__file__).parent
CORPUS = TESTS / "corpus"
FIXTURES = TESTS / "fixtures"
CONSTRUCTED = FIXTURES / "offpolicy"
RULES = Rules()


def _off(d: Diagnosis) -> Scenario | None:
    return d.scenario(ScenarioId.OFF_POLICY)


def _view(name: str, values: np.ndarray) -> SeriesView:
    steps = np.arange(1, values.size + 1, dtype=np.float64)
    return SeriesView(name, steps, np.asarray(values, dtype=np.float64), np.empty(0))


def _snap(**series: np.ndarray) -> RunSnapshot:
    """A run's snapshot of the given series (names with `/` as `__`), with a rising reward
    so the run is past warm-up."""
    n = len(next(iter(series.values())))
    rng = np.random.default_rng(0)
    views = {"reward": _view("reward", np.linspace(0.2, 0.6, n) + rng.normal(0, 0.02, n))}
    for key, values in series.items():
        name = key.replace("__", "/")
        views[name] = _view(name, values)
    steps = np.arange(1, n + 1, dtype=np.float64)
    return RunSnapshot(views, RunContext(), train_steps=steps, step=float(n))


def _judge(**series: np.ndarray) -> Scenario | None:
    return off_policy(find(_snap(**series), RULES))


def _ramp(a: float, b: float, n: int = 60, start: float = 0.5) -> np.ndarray:
    k = int(n * start)
    return np.concatenate([np.full(k, a), np.linspace(a, b, n - k)])


class TestAdapterAliases:
    """Each adapter maps its trainer's off-policy keys (the source lines are in the adapter)."""

    @pytest.mark.parametrize(
        ("adapter", "key", "canonical"),
        [
            (TRL, "sampling/sampling_logp_difference/mean", "offpolicy/logp_diff_mean"),
            (TRL, "sampling/sampling_logp_difference/max", "offpolicy/logp_diff_max"),
            (TRL, "sampling/importance_sampling_ratio/min", "offpolicy/is_ratio_min"),
            (TRL, "sampling/importance_sampling_ratio/mean", "offpolicy/is_ratio_mean"),
            (TRL, "sampling/importance_sampling_ratio/max", "offpolicy/is_ratio_max"),
            (TRL, "sample/staleness_mean", "offpolicy/staleness_mean"),
            (TRL, "sample/dropped_stale_total", "offpolicy/stale_dropped"),
            (VERL, "training/rollout_probs_diff_mean", "offpolicy/prob_diff_mean"),
            (VERL, "training/rollout_probs_diff_max", "offpolicy/prob_diff_max"),
            (VERL, "rollout_corr/rollout_is_min", "offpolicy/is_ratio_min"),
            (VERL, "rollout_corr/k3_kl", "offpolicy/mismatch_kl"),
            (NEMORL, "token_mult_prob_error", "offpolicy/token_prob_error"),
            (NEMORL, "gen_kl_error", "offpolicy/mismatch_kl"),
            (NEMORL, "avg_trajectory_age", "offpolicy/staleness_mean"),
            (PRIMERL, "mismatch_kl/all/mean", "offpolicy/mismatch_kl"),
            (PRIMERL, "off_policy/mean", "offpolicy/staleness_mean"),
            (PRIMERL, "off_policy/dropped", "offpolicy/stale_dropped"),
            (PRIMERL, "train/agg/all/solver/reward/mean", "offpolicy/generated_reward"),
            (PRIMERL, "train/agg/all/solver/num_output_tokens/mean", "offpolicy/generated_length"),
            (PRIMERL, "train/agg/effective/solver/reward/mean", "reward"),
            (SKYRL, "async/staleness_mean", "offpolicy/staleness_mean"),
            (SKYRL, "async/staleness_max", "offpolicy/staleness_max"),
            (SLIME, "train/train_rollout_logprob_abs_diff", "offpolicy/logp_diff_mean"),
        ],
    )
    def test_key_maps_to_its_quantity(self, adapter: object, key: str, canonical: str) -> None:
        """The trainer's key is read as the canonical metric of the same quantity."""
        assert adapter.canonical(key) == canonical  # type: ignore[attr-defined]

    def test_different_quantities_keep_different_names(self) -> None:
        """A probability difference, a log-probability difference and a multiplicative error
        are three columns, never one."""
        names = {
            VERL.canonical("training/rollout_probs_diff_mean"),
            TRL.canonical("sampling/sampling_logp_difference/mean"),
            NEMORL.canonical("token_mult_prob_error"),
        }
        assert len(names) == 3

    def test_skyrl_keep_rate_is_not_a_staleness_drop(self) -> None:
        """SkyRL's keep rate is its zero-variance filter's, so it keeps its own name."""
        assert SKYRL.canonical("async/keep_rate") == "async/keep_rate"


def _first(path: Path, name: str) -> tuple[float, str]:
    view = snapshot(load_run(path)).get(name)
    assert view is not None and not view.empty, name
    return float(view.values[0]), view.source_key


class TestRealFiles:
    """The keys read from real logs, with the values the files hold."""

    def test_trl_corpus_run(self) -> None:
        """TRL's sampling statistics of a real run (trl-qwen7b-gsm8k-vanilla's console.log)."""
        run = CORPUS / "trl-qwen7b-gsm8k-vanilla"
        text = (run / "checkpoint-200" / "trainer_state.json").read_text()
        first = json.loads(text)["log_history"][0]
        for key, name in [
            ("sampling/sampling_logp_difference/mean", "offpolicy/logp_diff_mean"),
            ("sampling/importance_sampling_ratio/min", "offpolicy/is_ratio_min"),
        ]:
            value, source = _first(run, name)
            assert source == key
            assert value == pytest.approx(first[key])

    def test_verl_console_fixture(self) -> None:
        """verl's rollout probability difference in a real console log (verl#2060)."""
        path = FIXTURES / "verl" / "verl_issue2060_step0_val_and_step1.log"
        value, source = _first(path, "offpolicy/prob_diff_mean")
        assert source == "training/rollout_probs_diff_mean"
        assert "training/rollout_probs_diff_mean:0.003 " in path.read_text()
        assert value == pytest.approx(0.003)

    def test_nemorl_metrics_json(self) -> None:
        """NeMo-RL's token_mult_prob_error and gen_kl_error in a real metrics.json."""
        path = FIXTURES / "nemo-rl" / "nemo-rl-7ea279a_grpo-collapse_metrics.json"
        tags = json.loads(path.read_text())
        for tag, name in [
            ("train/token_mult_prob_error", "offpolicy/token_prob_error"),
            ("train/gen_kl_error", "offpolicy/mismatch_kl"),
        ]:
            first_step = min(tags[tag], key=int)
            value, _ = _first(path, name)
            assert value == pytest.approx(tags[tag][first_step])

    @pytest.mark.parametrize(
        ("run", "names"),
        [
            (
                "prime-rl-stale-drops",
                {
                    "offpolicy/staleness_mean",
                    "offpolicy/stale_dropped",
                    "offpolicy/mismatch_kl",
                    "offpolicy/generated_reward",
                    "offpolicy/generated_length",
                },
            ),
            ("skyrl-async-steady", {"offpolicy/staleness_mean", "offpolicy/staleness_max"}),
            ("trl-async-grpo", {"offpolicy/staleness_mean", "offpolicy/stale_dropped"}),
            (
                "verl-rollout-corr-drift",
                {"offpolicy/prob_diff_mean", "offpolicy/is_ratio_min", "offpolicy/mismatch_kl"},
            ),
            (
                "nemo-rl-async-steady",
                {"offpolicy/token_prob_error", "offpolicy/staleness_mean"},
            ),
        ],
    )
    def test_constructed_runs_are_read(self, run: str, names: set[str]) -> None:
        """Each run built from a trainer's source (its .source.txt) is read with its keys."""
        assert names <= set(load_run(CONSTRUCTED / run).store.names())


class TestGrowth:
    """The judge on constructed series: growing, steady, noisy."""

    def test_growing_mismatch_is_named(self) -> None:
        """A mean |Δlogp| that grows 0.005 → 0.03 beyond its noise is named, a caution."""
        rng = np.random.default_rng(1)
        scenario = _judge(offpolicy__logp_diff_mean=_ramp(0.005, 0.03) + rng.normal(0, 5e-4, 60))
        assert scenario is not None and scenario.severity is Severity.CAUTION
        first = scenario.evidence[0]
        assert first.metric == "offpolicy/logp_diff_mean"
        assert first.text.startswith("offpolicy/logp_diff_mean grew beyond its noise")
        assert first.numbers["first"] == pytest.approx(0.005, rel=0.1)
        assert scenario.onset_step is not None and scenario.onset_step > 30

    def test_steady_mismatch_is_not(self) -> None:
        """A mismatch that stays where it started says nothing, however small."""
        rng = np.random.default_rng(2)
        assert _judge(offpolicy__logp_diff_mean=0.006 + rng.normal(0, 5e-4, 60)) is None

    @pytest.mark.parametrize("seed", range(40))
    def test_noise_is_not_growth(self, seed: int) -> None:
        """Level noise (30 % of the level, autocorrelated) never reads as growth."""
        rng = np.random.default_rng(seed)
        noise = np.zeros(80)
        for i in range(1, 80):
            noise[i] = 0.6 * noise[i - 1] + rng.normal(0, 0.3)
        values = np.abs(0.03 * (1 + noise))
        assert _judge(offpolicy__logp_diff_mean=values) is None

    def test_growth_below_the_floor_is_not_named(self) -> None:
        """0.002 → 0.008 grew ×4, but stays below the 2 % a trainer's guide names."""
        rng = np.random.default_rng(3)
        values = _ramp(0.002, 0.008) + rng.normal(0, 1e-4, 60)
        assert _judge(offpolicy__logp_diff_mean=values) is None

    def test_multiplicative_error_grows_in_its_excess(self) -> None:
        """token_mult_prob_error 1.005 → 1.03 grew ×6 in its excess over 1: named, though
        below NeMo-RL's 1.05."""
        rng = np.random.default_rng(4)
        values = _ramp(1.005, 1.03) + rng.normal(0, 3e-4, 60)
        view = find(_snap(offpolicy__token_prob_error=values), RULES).others
        judgement = view["offpolicy/token_prob_error"]
        times = growth(judgement, 1.0, RULES.offpolicy.token_prob_error_floor, RULES.offpolicy)
        assert times is not None and times > 4
        assert _judge(offpolicy__token_prob_error=values) is not None

    def test_a_rise_that_fell_back_is_not_growth(self) -> None:
        """A mismatch that rose and came back down has not grown."""
        rng = np.random.default_rng(5)
        values = np.concatenate([np.full(20, 0.005), np.full(20, 0.04), np.full(20, 0.006)])
        assert _judge(offpolicy__logp_diff_mean=values + rng.normal(0, 3e-4, 60)) is None


class TestBands:
    """A mismatch in the band its trainer flags."""

    def test_nemo_rl_flag(self) -> None:
        """token_mult_prob_error sustained above NeMo-RL's 1.05 is named with its share."""
        rng = np.random.default_rng(6)
        scenario = _judge(offpolicy__token_prob_error=1.07 + rng.normal(0, 0.003, 60))
        assert scenario is not None and scenario.severity is Severity.CAUTION
        text = scenario.evidence[0].text
        assert "> 1.05 on 20/20 points" in text and "NeMo-RL flags it above 1.05" in text

    def test_verl_flag(self) -> None:
        """verl's mean probability difference sustained above its FAQ's 0.01."""
        rng = np.random.default_rng(7)
        scenario = _judge(offpolicy__prob_diff_mean=0.013 + rng.normal(0, 5e-4, 60))
        assert scenario is not None and "verl's FAQ" in scenario.evidence[0].text

    def test_a_few_points_above_are_not_a_band(self) -> None:
        """Three excursions above 1.05 among points at 1.01 are not sustained."""
        values = np.full(60, 1.01)
        values[[50, 54, 58]] = 1.08
        assert _judge(offpolicy__token_prob_error=values) is None


class TestStaleness:
    """Staleness that grows, against an async run at its bound."""

    def test_growing_staleness(self) -> None:
        """1 → 3 policy versions is rollouts falling behind."""
        rng = np.random.default_rng(8)
        values = _ramp(1.0, 3.0) + rng.normal(0, 0.1, 60)
        scenario = _judge(offpolicy__staleness_mean=values)
        assert scenario is not None
        assert scenario.evidence[0].text.startswith(
            "offpolicy/staleness_mean grew beyond its noise by 1+ policy versions"
        )

    def test_pipeline_filling_is_not_growth(self) -> None:
        """0 for the first steps, then steady at the bound: how every async run starts."""
        rng = np.random.default_rng(9)
        values = np.concatenate([np.zeros(3), np.full(57, 2.0)]) + rng.normal(0, 0.1, 60)
        judgement = find(_snap(offpolicy__staleness_mean=values), RULES).others
        assert not staleness_growth(judgement["offpolicy/staleness_mean"], RULES.offpolicy)

    def test_half_a_version_more_is_not_growth(self) -> None:
        """1 → 1.5 is within an async run's own swing: not a version more."""
        rng = np.random.default_rng(10)
        values = _ramp(0.4, 0.9) + rng.normal(0, 0.02, 60)
        assert _judge(offpolicy__staleness_mean=values) is None


class TestStaleBias:
    """Dropping stale rollouts while what is trained on differs from what was generated."""

    def test_constructed_prime_rl_run(self) -> None:
        """prime-rl: drops on every recent step, shipped rollouts 0.15 above all generated
        and shorter: both named, with the medians the data took."""
        d = diagnose(load_run(CONSTRUCTED / "prime-rl-stale-drops"), RULES)
        scenario = _off(d)
        assert scenario is not None and scenario.severity is Severity.CAUTION
        texts = [e.text for e in scenario.evidence]
        assert any("staleness_mean grew beyond its noise" in t for t in texts)
        bias = [e for e in scenario.evidence if e.metric == "offpolicy/stale_dropped"]
        assert {e.text.split("rollouts' ")[1].split(" ")[0] for e in bias} == {"reward", "length"}
        reward = next(e for e in bias if "reward" in e.text)
        kept, generated = reward.numbers["kept"], reward.numbers["generated"]
        assert kept is not None and generated is not None
        assert kept - generated == pytest.approx(0.15, abs=0.03)

    def test_no_drops_no_bias(self, tmp_path: Path) -> None:
        """The same gap with no stale drop logged is not laid at the drops' door."""
        source = CONSTRUCTED / "prime-rl-stale-drops" / "metrics.jsonl"
        lines = [json.loads(line) for line in source.read_text().splitlines()]
        for line in lines:
            if "off_policy/dropped" in line:
                line["off_policy/dropped"] = 0.0
        (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        f = find(snapshot(load_run(tmp_path / "metrics.jsonl")), RULES)
        assert stale_bias(f) == []


class TestCorpus:
    """On the project's real runs that log the mismatch."""

    @pytest.mark.parametrize(
        "run",
        [
            "trl-qwen7b-gsm8k-vanilla",
            "trl-qwen7b-gsm8k-vanilla-s43",
            "trl-qwen7b-gsm8k-rho150-s44-entropycollapse",
            "trl-qwen7b-gsm8k-rho030-s42-blowup-entropy0",
            "trl-qwen7b-gsm8k-adabalance-s42-maxlencollapse",
            "verl-console-gpg-qwen2-7b-gsm8k-megatron-fastconv",
            "verl-console-gpg-qwen2-7b-gsm8kmath-late-truncation",
        ],
    )
    def test_steady_mismatch_is_never_named(self, run: str) -> None:
        """A mismatch that stayed where it was is never named, at any replayed moment."""
        d = diagnose(load_run(CORPUS / run), RULES)
        assert _off(d) is None
        assert not [span for span in d.history if span.id is ScenarioId.OFF_POLICY]

    def test_blow_up_mismatch_is_named_beside_the_state(self) -> None:
        """lr 1e-4: the logp difference 0.007 → 0.26 is a finding beside "too aggressive",
        quoting the recent median the data took."""
        run = CORPUS / "trl-qwen7b-gsm8k-lr1e-4-collapse"
        d = diagnose(load_run(run), RULES)
        scenario = _off(d)
        assert scenario is not None and scenario.severity is Severity.CAUTION
        assert d.scenario(ScenarioId.TOO_AGGRESSIVE) is not None
        assert d.state.word == "unstable"
        first = scenario.evidence[0]
        view = snapshot(load_run(run)).get("offpolicy/logp_diff_mean")
        assert view is not None
        recent = first.numbers["recent"]
        assert recent is not None and recent == pytest.approx(
            float(np.median(view.values[-5:])), rel=0.05
        )
        assert "> 0.0488 on" in first.text
        spans = [span for span in d.history if span.id is ScenarioId.OFF_POLICY]
        assert len(spans) == 1  # entered once and held: no flicker


class TestSurfaces:
    """`check` says it as every surface does."""

    def test_check_json(self) -> None:
        """`check --json` lists the finding with its id, severity and evidence."""
        path = CONSTRUCTED / "verl-rollout-corr-drift" / "gsm8k_rollout_corr.jsonl"
        out = subprocess.run(
            [sys.executable, "-m", "grpo_tui", "check", "--json", str(path)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        found = json.loads(out)
        scenarios = {s["id"]: s for s in found["scenarios"]}
        assert scenarios["off_policy"]["severity"] == "caution"
        assert found["state"]["id"] != "off_policy"  # a finding beside the state, never it
        evidence = scenarios["off_policy"]["evidence"]
        assert any("offpolicy/prob_diff_mean > 0.01" in e["text"] for e in evidence)
        assert math.isfinite(evidence[0]["numbers"]["recent"])


class TestSteady:
    """Held, not flashed: the finding enters once and stays while its evidence holds."""

    @pytest.mark.parametrize(
        "path",
        [
            CONSTRUCTED / "verl-rollout-corr-drift" / "gsm8k_rollout_corr.jsonl",
            CONSTRUCTED / "prime-rl-stale-drops",
            CORPUS / "trl-qwen7b-gsm8k-rho050-s43-lengthcollapse",
        ],
    )
    def test_one_span_from_its_onset(self, path: Path) -> None:
        """Replayed as the panel judges it live, one span, begun where the drift began."""
        d = diagnose(load_run(path), RULES)
        spans = [span for span in d.history if span.id is ScenarioId.OFF_POLICY]
        assert len(spans) == 1
        assert spans[0].severity is Severity.CAUTION
        assert spans[0].start > 25  # none of these drifted in their first stretch
