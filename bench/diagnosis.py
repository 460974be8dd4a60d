"""How far the diagnosis can be trusted, in one run.

1. Agreement with expert labels: every run of tests/corpus/ (other people's real GRPO
   runs) and every labelled real log of tests/fixtures/ (labels.json in each says which
   verdicts must, may and must never appear, and the numbers why).
2. The real runs replayed live: every corpus run cut after 10 %, 20 %, ... 100 % of its
   logged train points, in the layout its trainer writes (a trainer_state.json whose
   log_history ends at the cut, a logging.jsonl / console log / W&B output.log / verl
   JSONL cut just after the line that logged the cut's step), each cut read and judged
   as `check` (and a panel opened at that moment) judges it. A false alarm (target 0):
   after warm-up, a verdict the run's `never` names among LIVE_VERDICTS, or a PROBLEM
   its `status` does not allow (labels.json `_doc`: the labels hold at every moment).
3. The simulator, judged live (and each verdict's false-alarm rate on healthy runs at two
   batch sizes, the noisier one as in the corpus's small real runs): every scenario x N seeds, judged after every logged step
   the way the panel is (one VerdictTracker fed one moment at a time), against the
   simulator's ground truth (grpo_tui.sim.SCENARIO_REGIMES):
   - false alarms: moments after warm-up showing a caution or problem verdict that the
     regime (or the one before it, within one judging window of the boundary) does not
     name, counted on the healthy scenario (target 0) and on all;
   - headline changes per run after warm-up, from the first verdict named (target: the
     regimes' changes + 1);
   - delay from a regime's onset to the first moment a right verdict (its headline or one
     it also accepts) is named, as a share of
     the run (target <= 10 %); a regime that starts at step 0 is timed from the end of
     warm-up (docs/health.md, "Warm-up": no verdict on the first points), and the warm-up's own share is
     printed beside it.

4. The rates the course states (health/course.py): how often the 99 % bound on a rise
   misses the true rise, and how often a flat series is called risen, on series with
   AR(1) noise of the lengths and autocorrelations real runs have.
5. With --blind DIR: our held-back runs (tests/blind/labels.json, labelled from their
   numbers before the tool ran on them; their files in DIR/<name>), judged by this tree
   and, with --baseline REV, by that revision side by side: the figure that tuning on the
   corpus cannot have bent.

    python bench/diagnosis.py [--seeds 10] [--scenarios healthy,plateau] [--no-live] [-v]
    python bench/diagnosis.py --seeds 0 --no-live --blind /work/blind --baseline cba0c96

Exit status 0 when every target is met, 1 otherwise. tests/test_bench_diagnosis.py runs
the same functions on a small scale.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from grpo_tui.health.diagnose import Diagnosis, diagnose, diagnose_snapshot, finish
from grpo_tui.health.rules import Rules
from grpo_tui.health.series import snapshot
from grpo_tui.health.steady import VerdictTracker
from grpo_tui.health.verdict import Scenario
from grpo_tui.run.follow import load_run
from grpo_tui.sim import SCENARIO_REGIMES, SCENARIOS, SimConfig, demo_config, regime_at, write_run
from grpo_tui.sources.discover import discover
from grpo_tui.sources.stop_lines import console_logs
from grpo_tui.vocabulary import ScenarioId, Status

ROOT = Path(__file__).resolve().parent.parent
LABEL_SETS = (
    ROOT / "tests" / "corpus",
    ROOT / "tests" / "fixtures",
    # blind runs a change was made for: seen, so regression data (their labels.json says)
    ROOT / "tests" / "blind" / "seen",
)
#: a swift-layout fixture goes into a run directory named like ms-swift's own
SWIFT_RUN_DIR = "v0-20250101-000000"
WARMING_UP = ScenarioId.WARMING_UP.word
ALARMS = (Status.CAUTION, Status.PROBLEM)
DELAY_TARGET = 0.10


# -- 1. labels ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelResult:
    name: str
    status: str
    shown: list[str]
    problems: list[str]
    seconds: float

    @property
    def agreed(self) -> bool:
        return not self.problems


def labelled_runs(label_dir: Path) -> list[tuple[str, dict[str, Any]]]:
    labels = json.loads((label_dir / "labels.json").read_text(encoding="utf-8"))
    return [(name, label) for name, label in labels.items() if not name.startswith("_")]


def run_path(label_dir: Path, name: str, label: dict[str, Any], scratch: Path) -> Path:
    """Where the labelled run can be read: the corpus keeps each run in its own layout;
    a fixture is copied under its canonical file names into `scratch` (never renamed or
    written where it lives)."""
    files: dict[str, str] | None = label.get("files")
    if not files:
        return label_dir / name
    top = scratch / name
    target = top / SWIFT_RUN_DIR if label.get("layout") == "swift" else top
    target.mkdir(parents=True, exist_ok=True)
    for canonical, source in files.items():
        shutil.copyfile(label_dir / source, target / canonical)
    return top


def label_problems(diagnosis: Diagnosis, label: dict[str, Any]) -> list[str]:
    """What the diagnosis gets wrong against one label (empty: it agrees)."""
    shown = set(diagnosis.ids)
    problems = [f"missing {needed}" for needed in label.get("must", []) if needed not in shown]
    any_of = label.get("any_of")
    if any_of and not shown & set(any_of):
        problems.append(f"none of {', '.join(any_of)}")
    problems += [f"has {banned}" for banned in label.get("never", []) if banned in shown]
    if "status" in label and diagnosis.status.word not in label["status"]:
        problems.append(f"status {diagnosis.status.word}, expected {' or '.join(label['status'])}")
    for metric, zones in label.get("zones", {}).items():
        health = diagnosis.metrics.get(metric)
        zone = health.zone.word if health is not None else "absent"
        if zone not in zones:
            problems.append(f"{metric} {zone}, expected {' or '.join(zones)}")
    return problems


#: our own held-back check: labels committed before the tool ran on the runs (their files
#: are read from --blind DIR, not kept in the repository)
BLIND_LABELS = ROOT / "tests" / "blind" / "labels.json"

#: judges labelled runs with another tree's grpo_tui (PYTHONPATH), one JSON line per run:
#: what `label_problems` reads (a baseline revision's package has the same few names)
_JUDGE_ELSEWHERE = """
import json, sys
from pathlib import Path
from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
for path in sys.argv[1:]:
    d = diagnose(load_run(Path(path)), Rules())
    print(json.dumps({"path": path, "status": d.status.word, "ids": list(d.ids),
        "zones": {k: m.zone.word for k, m in d.metrics.items()}}))
"""


@dataclass(frozen=True)
class Judged:
    """What a label is checked against: a diagnosis's status, verdict ids and zones."""

    status: str
    ids: list[str]
    zones: dict[str, str]


def judged_problems(judged: Judged, label: dict[str, Any]) -> list[str]:
    """`label_problems` for a diagnosis made elsewhere (another tree's package)."""
    shown = set(judged.ids)
    problems = [f"missing {needed}" for needed in label.get("must", []) if needed not in shown]
    any_of = label.get("any_of")
    if any_of and not shown & set(any_of):
        problems.append(f"none of {', '.join(any_of)}")
    problems += [f"has {banned}" for banned in label.get("never", []) if banned in shown]
    if "status" in label and judged.status not in label["status"]:
        problems.append(f"status {judged.status}, expected {' or '.join(label['status'])}")
    for metric, zones in label.get("zones", {}).items():
        zone = judged.zones.get(metric, "absent")
        if zone not in zones:
            problems.append(f"{metric} {zone}, expected {' or '.join(zones)}")
    return problems


def blind_agreement(data: Path, tree: Path | None = None) -> list[LabelResult]:
    """The blind set judged by this tree's grpo_tui, or by the one in `tree` (a checkout of
    a baseline revision), each run read from `data/<name>`."""
    import subprocess

    runs = [(n, label) for n, label in labelled_runs(BLIND_LABELS.parent) if (data / n).is_dir()]
    env = dict(os.environ, PYTHONPATH=str(tree if tree is not None else ROOT))
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _JUDGE_ELSEWHERE, *(str(data / n) for n, _ in runs)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tree or ROOT,
    ).stdout
    seconds = (time.perf_counter() - started) / max(len(runs), 1)
    results = []
    for (name, label), line in zip(runs, out.splitlines(), strict=True):
        found = json.loads(line)
        judged = Judged(found["status"], found["ids"], found["zones"])
        results.append(
            LabelResult(
                f"blind/{name}", judged.status, judged.ids, judged_problems(judged, label), seconds
            )
        )
    return results


def baseline_tree(rev: str, scratch: Path) -> Path:
    """A checkout of revision `rev` of this repository (a detached worktree in `scratch`)."""
    import subprocess

    tree = scratch / f"baseline-{rev}"
    if not tree.exists():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), rev],
            check=True,
        )
    return tree


def label_agreement(label_dirs: Iterable[Path], rules: Rules) -> list[LabelResult]:
    results = []
    with tempfile.TemporaryDirectory(prefix="grpo-tui-labels-") as tmp:
        for label_dir in label_dirs:
            for name, label in labelled_runs(label_dir):
                run = load_run(run_path(label_dir, name, label, Path(tmp) / label_dir.name))
                started = time.perf_counter()
                diagnosis = diagnose(run, rules)
                seconds = time.perf_counter() - started
                results.append(
                    LabelResult(
                        f"{label_dir.name}/{name}",
                        diagnosis.status.word,
                        [f"{s.id.word}:{s.severity.word}" for s in diagnosis.scenarios],
                        label_problems(diagnosis, label),
                        seconds,
                    )
                )
    return results


# -- 2. the real runs replayed live ---------------------------------------------------------------

CORPUS = ROOT / "tests" / "corpus"
#: the verdicts a run's `never` forbids at every moment of it (labels.json `_doc`)
LIVE_VERDICTS = frozenset(
    s.word
    for s in (
        ScenarioId.NOT_LEARNING,
        ScenarioId.TOO_AGGRESSIVE,
        ScenarioId.REWARD_HACKING,
        ScenarioId.LENGTH_COLLAPSE,
        ScenarioId.LOW_DIVERSITY,
        ScenarioId.OFF_POLICY,
    )
)
#: the cuts, as shares of a run's logged train points: 5 %, 10 %, ... 100 %
CUTS = tuple(twentieth / 20 for twentieth in range(1, 21))


@dataclass
class ReplayResult:
    name: str
    #: per cut: (share, train step, status, verdict ids) as judged at that moment
    moments: list[tuple[float, float, str, list[str]]] = field(default_factory=list)
    #: per cut after warm-up that raised a false alarm: "30%: not_learning"
    false_alarms: list[str] = field(default_factory=list)
    #: statuses that dropped and came back while the label does not allow the drop
    flips: list[str] = field(default_factory=list)
    #: per cut, what two surfaces said differently (bench/consistency.py)
    contradictions: list[str] = field(default_factory=list)

    @property
    def judged(self) -> int:
        return sum(1 for *_, ids in self.moments if WARMING_UP not in ids)


def _max_train_step(path: Path) -> float | None:
    steps = snapshot(load_run(path)).train_steps
    return float(steps.max()) if steps.size else None


def _cut_trainer_state(path: Path, upto: float) -> None:
    """trainer_state.json as a save at step `upto` writes it: the log_history so far."""
    state = json.loads(path.read_text(encoding="utf-8"))
    state["log_history"] = [
        entry for entry in state.get("log_history", []) if float(entry.get("step", 0)) <= upto
    ]
    state["global_step"] = int(upto)
    path.write_text(json.dumps(state, indent=2), encoding="utf-8")


def _cut_lines(top: Path, path: Path, upto: float) -> None:
    """The log as it stood just after the line that logged step `upto`: the fewest whole
    lines whose train steps reach it (found by reading prefixes, as the tool reads them)."""
    lines = path.read_bytes().splitlines(keepends=True)
    low, high = 1, len(lines)
    while low < high:
        middle = (low + high) // 2
        path.write_bytes(b"".join(lines[:middle]))
        reached = _max_train_step(top)
        if reached is not None and reached >= upto:
            high = middle
        else:
            low = middle + 1
    path.write_bytes(b"".join(lines[:low]))


def _cut_events(path: Path, upto: float) -> None:
    """A TensorBoard event file as it stood once step `upto` was written: its records up
    to the first one of a later step (re-framed as TFRecords, the bytes of each kept)."""
    from grpo_tui.sources.tensorboard import load_tensorboard
    from grpo_tui.sources.tfrecord import RecordReader, masked_crc

    tb = load_tensorboard()
    assert not isinstance(tb, str), tb
    with path.open("rb") as handle:
        records = RecordReader().read(handle, path.stat().st_size, 1 << 30)
    kept = []
    for data in records:
        if tb.parse_event(data).step > upto:
            break
        kept.append(data)
    out = bytearray()
    for data in kept:
        header = len(data).to_bytes(8, "little")
        out += header + masked_crc(header).to_bytes(4, "little")
        out += data + masked_crc(data).to_bytes(4, "little")
    path.write_bytes(bytes(out))


def cut_run(top: Path, upto: float, scratch: Path) -> Path:
    """A copy of the run folder `top` as it stood when step `upto` had just been logged
    (the original is never written)."""
    layout = discover(top)
    assert layout.metrics_file is not None, f"{top}: nothing to read"
    copy = scratch / top.name
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(top, copy)
    metrics = copy / layout.metrics_file.relative_to(top)
    stat = layout.metrics_file.stat()
    if metrics.name == "trainer_state.json":
        _cut_trainer_state(metrics, upto)
    elif metrics.is_dir() or "tfevents" in metrics.name:
        for events in sorted(metrics.rglob("*tfevents*")) if metrics.is_dir() else [metrics]:
            _cut_events(events, upto)
    else:
        _cut_lines(copy, metrics, upto)
    # the file keeps its time, so discovery picks it as it did in the whole run
    if not metrics.is_dir():
        os.utime(metrics, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    # the console beside the metrics cannot be cut at a step: it goes (its end line, HF's
    # train_runtime, would finish a run cut half-way)
    for log in console_logs([copy, metrics.parent], exclude=metrics):
        log.unlink()
    assert discover(copy).metrics_file == metrics, f"{top}: the cut is read from another file"
    return copy


def live_problems(
    diagnosis: Diagnosis, label: dict[str, Any], verdicts: frozenset[str] = LIVE_VERDICTS
) -> list[str]:
    """What one moment after warm-up shows that the label forbids at every moment."""
    ids = set(diagnosis.ids)
    wrong = sorted(ids & set(label.get("never", [])) & verdicts)
    if diagnosis.status is Status.PROBLEM and "problem" not in label.get("status", ["problem"]):
        wrong.append("PROBLEM")
    return wrong


def _consistency() -> Any:
    """bench/consistency.py, beside this file (a script's folder is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_consistency", ROOT / "bench" / "consistency.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


#: how bad a status is (a flip is a drop in this, and a return)
_RANK = {"unknown": 0, "healthy": 0, "caution": 1, "problem": 2}


def flips(statuses: Sequence[str], allowed: Sequence[str]) -> list[int]:
    """Indexes of moments whose status dropped below one shown before and came back
    later, where the label does not allow the status it dropped to."""
    found = []
    for i, status in enumerate(statuses):
        before = max((_RANK[s] for s in statuses[:i]), default=0)
        after = max((_RANK[s] for s in statuses[i + 1 :]), default=0)
        if _RANK[status] < before and _RANK[status] < after and status not in allowed:
            found.append(i)
    return found


def replay_run(
    top: Path, label: dict[str, Any], rules: Rules, scratch: Path, *, consistency: bool = True
) -> ReplayResult:
    contradictions = _consistency().contradictions

    result = ReplayResult(top.name)
    steps = np.unique(snapshot(load_run(top)).train_steps)
    cuts: dict[float, float] = {}  # step -> the first share that cuts there (short runs)
    for share in CUTS:
        cuts.setdefault(float(steps[max(0, math.ceil(share * steps.size) - 1)]), share)
    statuses: list[str] = []
    shares: list[float] = []
    for upto, share in cuts.items():
        run = load_run(cut_run(top, upto, scratch))
        d = diagnose(run, rules)
        ids = list(d.ids)
        result.moments.append((share, upto, d.status.word, ids))
        if consistency:
            result.contradictions += [
                f"{_pct(share)}: {c}" for c in contradictions(run, d, rules, time.time())
            ]
        if WARMING_UP in ids:
            continue
        statuses.append(d.status.word)
        shares.append(share)
        wrong = live_problems(d, label)
        if wrong:
            result.false_alarms.append(f"{_pct(share)}: {'+'.join(wrong)}")
    for i in flips(statuses, label.get("status", [])):
        result.flips.append(f"{_pct(shares[i])}: {statuses[i]}")
    return result


def live_replay(
    corpus: Path, rules: Rules, names: Sequence[str] | None = None
) -> list[ReplayResult]:
    results = []
    with tempfile.TemporaryDirectory(prefix="grpo-tui-replay-") as tmp:
        for name, label in labelled_runs(corpus):
            if names is None or name in names:
                results.append(replay_run(corpus / name, label, rules, Path(tmp)))
    return results


# -- 3. the simulator, judged live ----------------------------------------------------------------


@dataclass
class SimResult:
    scenario: str
    seed: int
    max_steps: int
    #: judged moments, and those after warm-up
    moments: int = 0
    judged: int = 0
    #: moments after warm-up showing an alarm the ground truth does not name
    false_alarms: int = 0
    false_alarm_examples: list[str] = field(default_factory=list)
    headline_changes: int = 0
    headlines: list[str] = field(default_factory=list)
    #: the changes of named verdict the ground truth has (its regimes' headline changes)
    regime_changes: int = 0
    #: per regime that names a problem: share of the run until it was named (None: never)
    delays: list[float | None] = field(default_factory=list)
    #: share of the run spent warming up
    warmup: float = 0.0
    #: judged moments after warm-up showing each warning verdict
    shown: Counter[str] = field(default_factory=Counter)

    @property
    def change_target(self) -> int:
        return self.regime_changes + 1


def judge_live(run_dir: Path, rules: Rules) -> list[tuple[float, Diagnosis]]:
    """The diagnosis after every logged train step, as the live panel would show it."""
    snap = snapshot(load_run(run_dir))
    tracker = VerdictTracker(rules)
    moments = []
    for step in np.unique(snap.train_steps).tolist():
        raw = diagnose_snapshot(snap.upto(step), rules, tracker.holding, full=False)
        moments.append((float(step), finish(raw, tracker.feed(raw, step))))
    return moments


def _said(scenario: Scenario) -> str:
    """The verdict a block warns of: "Not learning? too early to say" is a not_learning,
    "Too aggressive / unstable? too early to say" a too_aggressive (a verdict building up)."""
    if scenario.id is ScenarioId.TOO_EARLY:
        asked = scenario.title.split("?")[0]
        named = next((s for s in ScenarioId if s.title == asked), ScenarioId.NOT_LEARNING)
        return named.word
    return scenario.id.word


def _accepted(scenario: str, t: float, lag: float) -> set[str]:
    """The verdicts right at progress t: the regime's, and within `lag` of a boundary the
    neighbouring regime's too (a judge reading a window sees the old regime for a while;
    a regime's start is where its curves bend, and a sharp judge may see it a little
    before the nominal boundary)."""
    words: set[str] = set()
    for at in (t, t - lag, t + lag):
        regime = regime_at(scenario, at)
        words |= {regime.headline, *regime.also}
    return words


def _headline_changes(scenario: str) -> int:
    words = [r.headline for r in SCENARIO_REGIMES[scenario]]
    return sum(1 for a, b in itertools.pairwise(words) if a != b)


def evaluate_sim(
    scenario: str,
    seed: int,
    rules: Rules,
    scratch: Path,
    max_steps: int,
    prompts_per_step: int = SimConfig.prompts_per_step,
) -> SimResult:
    config = SimConfig(
        scenario=scenario, seed=seed, max_steps=max_steps, prompts_per_step=prompts_per_step
    )
    run_dir = write_run(scratch / f"{scenario}-{seed}-{prompts_per_step}", config=config)
    moments = judge_live(run_dir, rules)
    result = SimResult(scenario, seed, max_steps, moments=len(moments))
    for _, d in moments:
        if WARMING_UP not in d.ids:
            result.shown.update(s.id.word for s in d.scenarios if s.severity.warns)
    result.regime_changes = _headline_changes(scenario)
    # one judging window of logged points, as progress
    lag = rules.window.points * config.logging_steps / max_steps
    warm_end = next((step for step, d in moments if WARMING_UP not in d.ids), None)
    result.warmup = (warm_end or max_steps) / max_steps
    previous: str | None = None
    for step, d in moments:
        if WARMING_UP in d.ids:
            continue
        result.judged += 1
        t = step / max_steps
        if d.status in ALARMS:
            accepted = _accepted(scenario, t, lag)
            wrong = [
                word for s in d.scenarios if s.severity.warns and (word := _said(s)) not in accepted
            ]
            if wrong:
                result.false_alarms += 1
                if len(result.false_alarm_examples) < 3:
                    result.false_alarm_examples.append(f"step {step:g}: {', '.join(wrong)}")
        verdicts = d.verdicts
        headline = verdicts[0].id.word if verdicts else "none"
        if previous is None and headline == "none":
            continue  # no verdict yet after warm-up: the first one named is no change
        if previous is not None and headline != previous:
            result.headline_changes += 1
        if headline != previous:
            result.headlines.append(f"{step:g}:{headline}")
        previous = headline
    for regime in SCENARIO_REGIMES[scenario]:
        if regime.headline == ScenarioId.HEALTHY.word:
            continue
        # a regime from step 0 can only be named once warm-up is over
        onset = max(regime.start, result.warmup if regime.start == 0 else 0.0)
        # right: the regime's words; for a regime that follows another, only the words that
        # are news (an "also" the previous regime already accepted is not its detection)
        right = {regime.headline, *regime.also}
        if regime.start > 0:
            before = next(r for r in reversed(SCENARIO_REGIMES[scenario]) if r.start < regime.start)
            right = {regime.headline} | (set(regime.also) - {before.headline, *before.also})
        named = next(
            (
                step
                for step, d in moments
                if step / max_steps >= regime.start and right & set(d.ids)
            ),
            None,
        )
        result.delays.append(None if named is None else max(0.0, named / max_steps - onset))
    return result


def evaluate_sims(
    scenarios: Sequence[str], seeds: Sequence[int], rules: Rules, max_steps: int = 1000
) -> list[SimResult]:
    with tempfile.TemporaryDirectory(prefix="grpo-tui-sims-") as tmp:
        return [
            evaluate_sim(s, seed, rules, Path(tmp), max_steps) for s in scenarios for seed in seeds
        ]


# -- the demo: every scenario as `grpo-tui demo` runs it ------------------------------------------

#: the demo names the state each scenario simulates by this share of its run...
DEMO_NAMED_BY = 0.30
#: ...and the healthy one says "learning" by this share, never showing a ✗
DEMO_LEARNING_BY = 0.25


@dataclass
class DemoResult:
    scenario: str
    seed: int
    #: what the screen shows at DEMO_NAMED_BY of the run (status and verdict ids)
    shown: str
    #: the share of the run at which the regime's state was first named (None: never)
    named_at: float | None
    ok: bool
    why: str = ""


def demo_check(scenarios: Sequence[str], seeds: Sequence[int], rules: Rules) -> list[DemoResult]:
    """Each scenario at the demo's own settings (sim.demo_config: 300 steps, prompts that
    come back, checkpoint folders): at
    DEMO_NAMED_BY of the run the screen names what the scenario simulates there (its
    regime's headline or a word it accepts; "learning" for a healthy stretch) and nothing
    the regime does not accept; the healthy scenario says learning by DEMO_LEARNING_BY and
    never shows a ✗."""
    results = []
    with tempfile.TemporaryDirectory(prefix="grpo-tui-demo-") as tmp:
        for scenario in scenarios:
            for seed in seeds:
                config = demo_config(scenario, seed=seed)
                moments = judge_live(
                    write_run(Path(tmp) / f"{scenario}-{seed}", config=config), rules
                )
                end = config.max_steps
                at = max((m for m in moments if m[0] / end <= DEMO_NAMED_BY), key=lambda m: m[0])
                t, d = at[0] / end, at[1]
                regime = regime_at(scenario, t)
                accepted = {regime.headline, *regime.also}
                ids = set(d.ids) | ({"healthy"} if d.state.word == "learning" else set())
                first = next(
                    (step / end for step, m in moments if regime.headline in set(m.ids)), None
                )
                why = []
                if not ids & accepted:
                    why.append(f"names {sorted(ids) or 'nothing'}, not {sorted(accepted)}")
                warned = {w for s in d.scenarios if s.severity.warns and (w := _said(s))}
                if warned - accepted:
                    why.append(f"also warns {sorted(warned - accepted)}")
                if scenario == "healthy":
                    learning = next(
                        (step / end for step, m in moments if m.state.word == "learning"), None
                    )
                    if learning is None or learning > DEMO_LEARNING_BY:
                        why.append(f"learning first at {learning}")
                    if any(m.status is Status.PROBLEM for _, m in moments):
                        why.append("shows a ✗ problem")
                    first = learning
                results.append(
                    DemoResult(
                        scenario,
                        seed,
                        f"{d.status.word}: {' + '.join(sorted(ids)) or '-'}",
                        first,
                        not why,
                        "; ".join(why),
                    )
                )
    return results


def report_demo(results: list[DemoResult]) -> bool:
    print()
    print(
        f"The demo (each scenario at `grpo-tui demo`'s settings, {len({r.seed for r in results})} "
        f"seeds): named by {_pct(DEMO_NAMED_BY)} of the run, healthy says learning by "
        f"{_pct(DEMO_LEARNING_BY)}"
    )
    for scenario in dict.fromkeys(r.scenario for r in results):
        runs = [r for r in results if r.scenario == scenario]
        firsts = [r.named_at for r in runs]
        shown = ", ".join(sorted({r.shown for r in runs}))
        named = " ".join("-" if f is None else _pct(f) for f in firsts)
        bad = "; ".join(f"seed {r.seed}: {r.why}" for r in runs if not r.ok)
        print(
            f"  {'ok ' if not bad else 'BAD'} {scenario:16} at {_pct(DEMO_NAMED_BY)}: {shown:40} first named {named}  {bad}"
        )
    met = all(r.ok for r in results)
    print(f"  {sum(r.ok for r in results)} of {len(results)} demo runs meet the target")
    return met


#: batch sizes the healthy runs are simulated at for the error rates: the simulator's 4
#: prompts × 8 completions, and 1 × 8 as in the small real runs of the corpus (noisier)
NOISE_LEVELS = (4, 1)
#: the error rate each verdict's entering rule states (rules.py); the others are measured only
STATED = {"not_learning": f"≤ 1 % (the bound's z {Rules().learning.z:g})"}


def error_rates(seeds: Sequence[int], rules: Rules, max_steps: int) -> dict[int, list[SimResult]]:
    """Healthy simulated runs at each noise level: how often each verdict fires by chance."""
    with tempfile.TemporaryDirectory(prefix="grpo-tui-rates-") as tmp:
        return {
            prompts: [
                evaluate_sim("healthy", seed, rules, Path(tmp), max_steps, prompts)
                for seed in seeds
            ]
            for prompts in NOISE_LEVELS
        }


def report_error_rates(rates: dict[int, list[SimResult]]) -> None:
    print()
    print(
        "Each verdict's false-alarm rate on healthy simulated runs (judged moments after warm-up):"
    )
    verdicts = sorted(
        {v for runs in rates.values() for r in runs for v in r.shown} | set(STATED) | LIVE_VERDICTS
    )
    header = "  ".join(f"{f'batch {p}x8':>12}" for p in rates)
    print(f"  {'verdict':16} {header}  stated")
    for verdict in verdicts:
        cells = []
        for runs in rates.values():
            judged = sum(r.judged for r in runs)
            fired = sum(r.shown[verdict] for r in runs)
            cells.append(f"{fired:>4}/{judged:<4} {_pct(fired / max(judged, 1)):>3}")
        print(
            f"  {verdict:16} {'  '.join(f'{c:>12}' for c in cells)}  {STATED.get(verdict, 'measured')}"
        )


# -- 4. the rates the course states ------------------------------------------------------------------


@dataclass(frozen=True)
class CourseRate:
    points: int
    rho: float
    #: the 99 % bound on the rise fell below the true rise (stated: 1 % at one moment)
    missed: float
    #: a series with no trend was called "rose" (stated: at most 1 %)
    false_rise: float


def _ar1(rng: np.random.Generator, n: int, rho: float, sigma: float) -> np.ndarray:
    shocks = rng.normal(0.0, sigma, n)
    x = np.empty(n)
    x[0] = shocks[0] / math.sqrt(1 - rho**2)
    for i in range(1, n):
        x[i] = rho * x[i - 1] + shocks[i]
    return x


def course_rates(
    points: Sequence[int] = (20, 40, 100, 300),
    rhos: Sequence[float] = (0.0, 0.3, 0.6),
    repeats: int = 1000,
) -> list[CourseRate]:
    """The course's two stated rates measured on simulated series: a linear rise (or none)
    under AR(1) noise with lag-1 autocorrelation `rho`, as real reward curves have."""
    from grpo_tui.health.course import analyse
    from grpo_tui.health.rules import TrendRules

    trend_rules = TrendRules()
    z = Rules().learning.z
    rates = []
    for n in points:
        steps = np.arange(n, dtype=float)
        for rho in rhos:
            rng = np.random.default_rng(1)
            missed = false_rise = 0
            for _ in range(repeats):
                noise = _ar1(rng, n, rho, 0.05)
                trend = np.linspace(0.0, 0.075, n)
                course = analyse(steps, trend + noise, trend_rules, warmup=10)
                true = trend[-course.end.points :].mean() - trend[: course.start.points].mean()
                missed += int(course.bound(z).high < true)
                false_rise += int(analyse(steps, noise, trend_rules, warmup=10).rose)
            rates.append(CourseRate(n, rho, missed / repeats, false_rise / repeats))
    return rates


def report_course_rates(rates: list[CourseRate]) -> None:
    print()
    print("The course's stated rates, measured (AR(1) noise, 1000 series each):")
    print(f"  {'points':>6} {'rho':>4}  {'bound misses the rise':>22}  {'flat called risen':>18}")
    for r in rates:
        print(f"  {r.points:>6} {r.rho:>4.1f}  {r.missed:>22.1%}  {r.false_rise:>18.1%}")
    print("  stated: 1 % each at one moment (the bound is Student's t at 99 %, exact)")


# -- 5. the blind set, before and after -------------------------------------------------------------


def report_blind(data: Path, baseline: str | None) -> None:
    """The held-back runs judged by this tree and (side by side) by a baseline revision."""
    after = blind_agreement(data)
    before: dict[str, LabelResult] = {}
    if baseline is not None:
        with tempfile.TemporaryDirectory(prefix="grpo-tui-baseline-") as tmp:
            tree = baseline_tree(baseline, Path(tmp))
            try:
                before = {r.name: r for r in blind_agreement(data, tree)}
            finally:
                import subprocess

                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                    check=False,
                )
    print()
    print(f"Blind set ({len(after)} runs labelled before the tool ran on them, read from {data}):")
    for r in after:
        old = before.get(r.name)
        was = "" if old is None else f"{'ok ' if old.agreed else 'BAD'} → "
        why = "; ".join(r.problems)
        print(f"  {was}{'ok ' if r.agreed else 'BAD'} {r.name:58} {r.status:8} {why}")
    if before:
        print(f"  agreement {baseline}: {sum(r.agreed for r in before.values())}/{len(before)}")
    print(f"  agreement this tree: {sum(r.agreed for r in after)}/{len(after)}")


# -- the report -------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def report(
    labels: list[LabelResult],
    replays: list[ReplayResult],
    sims: list[SimResult],
    *,
    verbose: bool,
) -> bool:
    """Print the figures; True when every target is met."""
    ok = True
    agreed = sum(r.agreed for r in labels)
    print(f"Labelled real runs, finished: {agreed}/{len(labels)} agree")
    for r in labels:
        if verbose or not r.agreed:
            mark = "ok " if r.agreed else "BAD"
            print(
                f"  {mark} {r.name:46} {r.status:8} {' '.join(r.shown) or '-'}  {'; '.join(r.problems)}"
            )
    ok &= agreed == len(labels)
    if replays:
        finished = {r.name.removeprefix(f"{CORPUS.name}/"): r.agreed for r in labels}
        judged = sum(r.judged for r in replays)
        false = sum(len(r.false_alarms) for r in replays)
        print()
        print(f"Corpus runs replayed live (cut after {_pct(CUTS[0])}, {_pct(CUTS[1])}, ... 100 %):")
        for r in replays:
            agreement = "agree " if finished.get(r.name, True) else "DIFFER"
            alarms = "; ".join(r.false_alarms) or "no false alarm"
            print(f"  {r.name:50} finished: {agreement} live: {r.judged:>2} judged, {alarms}")
            if verbose:
                for share, upto, status, ids in r.moments:
                    print(f"      {_pct(share):>4} step {upto:g}: {status} {' '.join(ids) or '-'}")
        flipped = sum(len(r.flips) for r in replays)
        contradicted = sum(len(r.contradictions) for r in replays)
        moments = sum(len(r.moments) for r in replays)
        for r in replays:
            for flip in r.flips:
                print(f"  FLIP {r.name} {flip}")
            for c in r.contradictions[: 3 if not verbose else None]:
                print(f"  CONTRADICTION {r.name} {c}")
        print(f"  false alarms after warm-up: {false} of {judged} judged moments (target 0)")
        print(
            f"  flips (a status dropping and coming back, not allowed by the label): {flipped} (target 0)"
        )
        print(
            f"  contradictions between surfaces: {contradicted} in {moments} moments of "
            f"{len(replays)} runs (target 0)"
        )
        ok &= false == 0 and flipped == 0 and contradicted == 0
    if not sims:
        return ok
    print()
    print(f"Simulated runs judged live ({len({s.seed for s in sims})} seeds each):")
    print(
        f"  {'scenario':16} {'alarms':>7} {'false':>6} {'changes':>8} {'target':>7} {'delay med':>9} {'max':>6} {'late':>5} {'missed':>6} {'warm-up':>8}"
    )
    for scenario in dict.fromkeys(s.scenario for s in sims):
        runs = [s for s in sims if s.scenario == scenario]
        judged = sum(s.judged for s in runs)
        false = sum(s.false_alarms for s in runs)
        changes = max(s.headline_changes for s in runs)
        target = runs[0].change_target
        delays = [d for s in runs for d in s.delays]
        timed = [d for d in delays if d is not None]
        missed = len(delays) - len(timed)
        late = sum(1 for d in timed if d > DELAY_TARGET)
        median = _pct(statistics.median(timed)) if timed else "-"
        worst = _pct(max(timed)) if timed else "-"
        warm = _pct(statistics.median(s.warmup for s in runs))
        print(
            f"  {scenario:16} {judged:>7} {false:>6} {changes:>8} {target:>7} {median:>9} {worst:>6} {late:>5} {missed:>6} {warm:>8}"
        )
        if verbose:
            for s in runs:
                print(
                    f"      seed {s.seed}: {' → '.join(s.headlines)}  {'; '.join(s.false_alarm_examples)}"
                )
    healthy_false = sum(s.false_alarms for s in sims if s.scenario == "healthy")
    all_false = sum(s.false_alarms for s in sims)
    judged = sum(s.judged for s in sims)
    over = [s for s in sims if s.headline_changes > s.change_target]
    delays = [d for s in sims for d in s.delays]
    late = [d for d in delays if d is None or d > DELAY_TARGET]
    print()
    print(f"  false alarms on healthy runs after warm-up: {healthy_false} (target 0)")
    print(
        f"  false alarms on all runs: {all_false} of {judged} judged moments ({_pct(all_false / max(judged, 1))})"
    )
    print(
        f"  runs whose headline changed more than their regimes + 1: {len(over)} of {len(sims)} (target 0)"
    )
    print(
        f"  problems named later than {_pct(DELAY_TARGET)} of the run, or never: {len(late)} of {len(delays)} (target 0)"
    )
    ok &= healthy_false == 0 and not over and not late
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=10, help="seeds per scenario (default 10)")
    parser.add_argument(
        "--scenarios", default=",".join(SCENARIOS), help="comma-separated (default: all)"
    )
    # 1000 steps logged every 5 (201 points): a judging window of 20 points is a tenth of
    # the run, as in the real runs of the corpus; the simulator's own default of 300 steps
    # makes the window a third of the run
    parser.add_argument(
        "--steps", type=int, default=1000, help="steps per simulated run (default 1000)"
    )
    parser.add_argument(
        "--no-live", action="store_true", help="leave out the live replay of the real runs"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="every run, every headline")
    parser.add_argument(
        "--blind", type=Path, metavar="DIR", help="the blind set's runs, DIR/<name> each"
    )
    parser.add_argument(
        "--baseline", metavar="REV", help="with --blind: judge it by this revision too"
    )
    args = parser.parse_args(argv)
    rules = Rules()
    started = time.perf_counter()
    labels = label_agreement(LABEL_SETS, rules)
    replays = [] if args.no_live else live_replay(CORPUS, rules)
    sims = evaluate_sims(args.scenarios.split(","), range(args.seeds), rules, args.steps)
    ok = report(labels, replays, sims, verbose=args.verbose)
    if args.seeds:
        ok &= report_demo(demo_check(args.scenarios.split(","), range(min(args.seeds, 5)), rules))
    if args.seeds:
        report_error_rates(error_rates(range(args.seeds), rules, args.steps))
        report_course_rates(course_rates())
    if args.blind is not None:
        report_blind(args.blind, args.baseline)
    print(
        f"\n{'all targets met' if ok else 'targets missed'} ({time.perf_counter() - started:.0f} s)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
