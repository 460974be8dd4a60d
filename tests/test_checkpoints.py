"""Which checkpoint to keep or go back to: the listing (sources/checkpoints.py), the
advice (health/checkpoints.py) and what `check` says of it, on real corpus runs."""

from __future__ import annotations

import io
import json
import math
import re
import shutil
from pathlib import Path

import pytest
from helpers import (
    CORPUS,
    CORPUS_RUNS,
    RUN_DIR_NAME,
    THREE_REWARDS,
    THREE_REWARDS_ARGS,
    corpus_diagnosis,
    msswift_run_dir,
)

from grpo_tui.commands.check import check_command
from grpo_tui.health.checkpoints import NOT_HARM, RESUME, SPOILS, CheckpointAdvice
from grpo_tui.health.course import Phase
from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sources.checkpoints import CheckpointLister, places
from grpo_tui.sources.formats import ADAPTERS
from grpo_tui.vocabulary import LearningState, ScenarioId, Severity

#: the corpus runs whose folders hold checkpoints
KEEPING = tuple(
    name
    for name in CORPUS_RUNS
    if any(re.fullmatch(r"checkpoint-\d+", p.name) for p in (CORPUS / name).iterdir())
)


def advice_of(name: str) -> CheckpointAdvice:
    advice = corpus_diagnosis(name).checkpoints
    assert advice is not None
    return advice


def write_state(folder: Path, **fields: object) -> None:
    """A trainer_state.json as the HF Trainer writes it (keys sorted, a log_history)."""
    folder.mkdir(parents=True, exist_ok=True)
    state = {"log_history": [], **fields}
    (folder / "trainer_state.json").write_text(json.dumps(state, sort_keys=True, indent=2))


class TestAdapterFolders:
    """Each adapter's checkpoint folders, made as its trainer names them."""

    def listed(self, adapter: str, run_dir: Path, metrics: Path | None = None) -> list[int]:
        listing = CheckpointLister().listing(ADAPTERS[adapter], run_dir, metrics)
        assert listing is not None
        return list(listing.steps)

    def test_trl_checkpoint_folders_under_output_dir(self, tmp_path: Path) -> None:
        """TRL's `checkpoint-N` under output_dir; a file or a look-alike name is not one."""
        for step in (10, 30, 20):
            (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / "checkpoint-40").write_text("not a folder")
        (tmp_path / "checkpoint-50-tmp").mkdir()
        assert self.listed("trl", tmp_path) == [10, 20, 30]

    def test_ms_swift_checkpoints_inside_the_version_folder(self, tmp_path: Path) -> None:
        """ms-swift's `vN-…/checkpoint-N`: the version folder is the run folder."""
        run = tmp_path / "v0-20260101-000000"
        (run / "checkpoint-100").mkdir(parents=True)
        assert self.listed("ms-swift", run) == [100]

    def test_verl_default_local_dir_beside_the_file_logger(self, tmp_path: Path) -> None:
        """verl's `checkpoints/<project>/<experiment>/global_step_N` from where the file
        logger wrote `<project>/<experiment>.jsonl`."""
        log = tmp_path / "gsm8k" / "qwen-grpo.jsonl"
        log.parent.mkdir()
        log.write_text("")
        for step in (5, 15):
            (tmp_path / "checkpoints" / "gsm8k" / "qwen-grpo" / f"global_step_{step}").mkdir(
                parents=True
            )
        assert self.listed("verl", log.parent, log) == [5, 15]

    def test_nemo_rl_step_folders_but_not_those_being_written(self, tmp_path: Path) -> None:
        """NeMo-RL's `step_N`; `tmp_step_N` is a save in progress."""
        (tmp_path / "step_3").mkdir()
        (tmp_path / "tmp_step_6").mkdir()
        assert self.listed("nemo-rl", tmp_path) == [3]

    def test_prime_rl_checkpoints_folder(self, tmp_path: Path) -> None:
        """prime-rl's `<output_dir>/checkpoints/step_N`."""
        (tmp_path / "checkpoints" / "step_50").mkdir(parents=True)
        assert self.listed("prime-rl", tmp_path) == [50]

    def test_skyrl_slime_and_roll(self, tmp_path: Path) -> None:
        """SkyRL's `global_step_N`, slime's Megatron `iter_NNNNNNN`, ROLL's
        `pipeline/checkpoint-N`."""
        (tmp_path / "global_step_8").mkdir()
        (tmp_path / "iter_0000100").mkdir()
        (tmp_path / "pipeline" / "checkpoint-7").mkdir(parents=True)
        assert self.listed("skyrl-console", tmp_path) == [8]
        assert self.listed("slime-console", tmp_path) == [100]
        assert self.listed("roll-console", tmp_path) == [7]

    def test_a_format_with_no_known_folders_lists_nothing(self, tmp_path: Path) -> None:
        """No checkpoint kind declared: no listing, said as "not known"."""
        assert CheckpointLister().listing(ADAPTERS["jsonl"], tmp_path) is None

    def test_places_are_normalised_without_resolving(self, tmp_path: Path) -> None:
        """`../` in a place is taken away by its parts (a remote path is not resolved)."""
        kinds = ADAPTERS["verl"].checkpoints
        found = places(kinds, tmp_path / "proj", tmp_path / "proj" / "exp.jsonl", None)
        assert tmp_path / "checkpoints" / "proj" / "exp" in found


class TestSchedule:
    """What the trainer says about saving, where it says it."""

    def test_trainer_state_and_args_json(self, tmp_path: Path) -> None:
        """save_steps and the best checkpoint from trainer_state.json, save_total_limit from
        args.json."""
        write_state(
            tmp_path / "checkpoint-40",
            save_steps=20,
            best_model_checkpoint=str(tmp_path / "checkpoint-20"),
            best_metric=0.5,
        )
        args = tmp_path / "args.json"
        args.write_text(json.dumps({"save_steps": 20, "save_total_limit": 2}))
        listing = CheckpointLister().listing(ADAPTERS["trl"], tmp_path, args_file=args)
        assert listing is not None
        assert (listing.save_steps, listing.save_total_limit) == (20, 2)
        assert (listing.best_step, listing.best_metric) == (20, 0.5)
        assert listing.said_by == ("trainer_state.json in checkpoint-40", "args.json")

    def test_a_listing_is_redone_once_the_folder_changes(self, tmp_path: Path) -> None:
        """A checkpoint written after the first look is listed at the next look."""
        lister = CheckpointLister()
        (tmp_path / "checkpoint-1").mkdir()
        first = lister.listing(ADAPTERS["trl"], tmp_path)
        (tmp_path / "checkpoint-2").mkdir()
        second = lister.listing(ADAPTERS["trl"], tmp_path)
        assert first is not None and second is not None
        assert (first.steps, second.steps) == ((1,), (1, 2))


class TestCorpusAdvice:
    """The advice on every corpus run that keeps checkpoints, in the labels' spirit."""

    def test_the_corpus_has_runs_that_keep_checkpoints(self) -> None:
        """The tests below look at real folders (aaipl-minesweeper-trl keeps five)."""
        assert "aaipl-minesweeper-trl" in KEEPING
        assert advice_of("aaipl-minesweeper-trl").on_disk == (100, 200, 300, 400, 500)

    @pytest.mark.parametrize("name", KEEPING)
    def test_never_a_checkpoint_after_the_onset(self, name: str) -> None:
        """ "Go back to" is the last checkpoint saved at or before the onset of the worst
        warning a checkpoint precedes; the warnings held since before the first checkpoint
        are named instead; none when nothing warns."""
        advice = advice_of(name)
        diagnosis = corpus_diagnosis(name)
        warnings = [s for s in diagnosis.verdicts if s.severity.warns and s.id not in NOT_HARM]
        saved = sorted((*advice.on_disk, *advice.gone))
        if not warnings:
            assert advice.go_back is None and advice.finding == "" and not advice.before_any
            return
        escapable = [s for s in warnings if s.onset_step is not None and saved[0] <= s.onset_step]
        for s in warnings:
            if s not in escapable and s.onset_step is not None:
                # the worst first: only what is as bad as the one gone back for, or worse
                chosen = min(escapable, key=lambda e: e.severity.rank) if escapable else None
                if chosen is None or s.severity.rank <= chosen.severity.rank:
                    assert any(text.startswith(s.title) for text in advice.before_any)
        if not escapable:
            assert advice.go_back is None and advice.finding == ""
            return
        worst = min(escapable, key=lambda e: (e.severity.rank, e.onset_step))
        assert advice.finding == worst.title and advice.onset == worst.onset_step
        assert advice.go_back is not None and advice.onset is not None
        for pick in (advice.go_back, advice.go_back_on_disk):
            if pick is not None:
                assert pick.step <= advice.onset
        later = [step for step in saved if advice.go_back.step < step]
        assert all(step > advice.onset for step in later)  # the last one before it

    @pytest.mark.parametrize("name", KEEPING)
    def test_keep_is_the_peak_never_the_newest_of_a_fall(self, name: str) -> None:
        """ "Keep" is never after a problem that spoils what came after it (reward hacking,
        a broken policy); among the rest, no checkpoint's stretch sits beyond the kept one's
        noise above it, and a series that fell from its peak never makes the newest
        checkpoint the best when an earlier one sits higher."""
        advice = advice_of(name)
        diagnosis = corpus_diagnosis(name)
        spoils = [
            s.onset_step
            for s in diagnosis.verdicts
            if s.id in SPOILS and s.severity is Severity.PROBLEM and s.onset_step is not None
        ]
        saved = sorted((*advice.on_disk, *advice.gone))
        keepable = [step for step in saved if not spoils or step <= min(spoils)]
        if advice.never_rose:
            # judged not learning, the series never clearly above its start
            assert diagnosis.state is LearningState.NOT_LEARNING and advice.keep is None
            assert "nothing learned to keep" in advice.headline
            return
        if not keepable:
            assert advice.keep is None and advice.spoiled
            assert "none to go back to or keep" in advice.headline or "nothing to keep" in (
                advice.headline
            )
            return
        assert advice.keep is not None and advice.keep.level is not None
        assert advice.keep.step in keepable
        assert advice.chosen_by in ("eval reward", "task reward") or advice.chosen_by.startswith(
            "reward"
        )
        f = diagnosis.findings
        series = f.eval_reward if advice.chosen_by == "eval reward" else None
        if series is None:
            judged = {fn.judgement.name: fn.judgement for fn in f.functions}
            series = judged.get(advice.series, f.reward)
        course = series.shape
        assert course is not None
        peak = max(s.value for s in course.stretches)
        assert advice.keep.level <= peak
        # no stretch that holds a keepable checkpoint sits beyond noise above the one kept
        holding = [
            s for s in course.stretches if any(s.first_step <= c <= s.last_step for c in keepable)
        ]
        error = advice.keep.error or 0.0
        assert all(s.value <= advice.keep.level + error for s in holding)
        if course.phase in (Phase.FALLING, Phase.DECLINING) and len(advice.on_disk) > 1:
            assert advice.keep.step != max(advice.on_disk) or advice.keep.level == peak

    @pytest.mark.parametrize("name", KEEPING)
    def test_on_disk_is_what_is_on_disk(self, name: str) -> None:
        """Every checkpoint named says truly whether its folder is there."""
        advice = advice_of(name)
        for pick in (advice.go_back, advice.go_back_on_disk, advice.keep, advice.keep_on_disk):
            if pick is not None:
                folder = CORPUS / name / f"checkpoint-{pick.step}"
                assert pick.on_disk == folder.is_dir()

    def test_a_schedule_says_which_saves_are_gone(self) -> None:
        """text2sql saved every 25 steps and keeps only checkpoint-1000: 39 saves gone."""
        advice = advice_of("trl-text2sql-3b-spider-1000st")
        assert advice.save_steps == 25 and advice.on_disk == (1000,)
        assert advice.gone == tuple(range(25, 1000, 25))

    def test_the_minesweeper_run(self) -> None:
        """Truncation from step 10, before any checkpoint: named, not gone back for.
        Reward hacking from step 230: go back to checkpoint-200, and keep nothing after
        it (gameplay_scores peaks at 270–320, inside the hacking)."""
        advice = advice_of("aaipl-minesweeper-trl")
        assert advice.before_any == ("Truncation since step 10",)
        assert advice.finding == "Reward hacking" and advice.onset == 230
        assert advice.go_back is not None and advice.go_back.step == 200
        assert advice.series == "rewards/gameplay_scores/mean"
        assert advice.spoiled == "Reward hacking since step 230"
        assert advice.keep is not None and advice.keep.step in (100, 200) and advice.keep.on_disk
        assert advice.headline.startswith("go back to step 200, before Reward hacking")
        assert "the peak (2.05 at steps 270–320) came after it" in advice.lines


class TestGoneFromDisk:
    """A checkpoint deleted (save_total_limit) is said to be gone, the nearest kept beside."""

    def test_the_best_deleted_names_the_best_on_disk(self, tmp_path: Path) -> None:
        """Minesweeper with checkpoints 100 and 200 deleted: the last before the reward
        hacking (200) and the best kept are gone; the nearest on disk is said beside, and
        none on disk is before the hacking, so none is kept on disk."""
        run = tmp_path / "run"
        shutil.copytree(CORPUS / "aaipl-minesweeper-trl", run)
        for step in (100, 200):
            shutil.rmtree(run / f"checkpoint-{step}")
        advice = diagnose(load_run(run), Rules()).checkpoints
        assert advice is not None
        assert advice.gone == (100, 200) and advice.on_disk == (300, 400, 500)
        assert advice.go_back is not None and advice.go_back.step == 200
        assert not advice.go_back.on_disk and advice.go_back_on_disk is None
        assert advice.keep is not None and not advice.keep.on_disk
        assert advice.keep_on_disk is None
        assert "(not on disk)" in advice.headline
        assert "2 saved and gone (100, 200)" in advice.lines[-1]

    def test_a_run_that_keeps_none_says_where_it_looked(self, tmp_path: Path) -> None:
        """No checkpoint folder: said once, with the folder looked in."""
        run = tmp_path / "run"
        shutil.copytree(CORPUS / "trl-qwen7b-gsm8k-vanilla", run)
        state = run / "checkpoint-200" / "trainer_state.json"
        state.rename(run / "trainer_state.json")
        (run / "checkpoint-200").rmdir()
        advice = diagnose(load_run(run), Rules()).checkpoints
        assert advice is not None and advice.known and advice.keep is None
        assert advice.headline == "this run keeps no checkpoints: no checkpoint-N folder in run"
        assert advice.looked_in == (str(run),)


class TestMsSwiftArgs:
    """ms-swift's args.json says the schedule; folders on disk are what it is checked on."""

    def run(self, tmp_path: Path) -> Path:
        args = {**THREE_REWARDS_ARGS, "save_steps": 2, "save_total_limit": 1}
        return msswift_run_dir(tmp_path, THREE_REWARDS, args, completions=False)

    def test_no_folder_invents_no_save(self, tmp_path: Path) -> None:
        """save_steps 2 but no checkpoint folder there: the run is said to keep none."""
        advice = diagnose(load_run(self.run(tmp_path)), Rules()).checkpoints
        assert advice is not None and advice.save_steps == 2 and advice.save_total_limit == 1
        assert advice.gone == () and advice.on_disk == () and advice.keep is None
        assert advice.headline == (
            "this run keeps no checkpoints: no checkpoint-N folder in "
            f"output/{RUN_DIR_NAME} or output"
        )

    def test_the_limit_deleted_the_earlier_saves(self, tmp_path: Path) -> None:
        """checkpoint-6 kept under save_total_limit 1: the saves at 2 and 4 are gone."""
        output = self.run(tmp_path)
        (output / RUN_DIR_NAME / "checkpoint-6").mkdir()
        advice = diagnose(load_run(output), Rules()).checkpoints
        assert advice is not None
        assert advice.on_disk == (6,) and advice.gone == (2, 4)
        assert advice.said_by == ("args.json",)
        assert "saved every 2 steps, at most 1 kept; 2 saved and gone (2, 4)" in advice.lines[-1]


class TestSurfaces:
    """`check` text and JSON quote the one advice object."""

    def test_check_json_has_the_checkpoints_field(self) -> None:
        """The `checkpoints` field is the advice's to_json, its numbers finite or null."""
        out = io.StringIO()
        check_command(CORPUS / "aaipl-minesweeper-trl", as_json=True, rules_file=None, out=out)
        data = json.loads(out.getvalue())["checkpoints"]
        assert data == json.loads(json.dumps(advice_of("aaipl-minesweeper-trl").to_json()))
        assert data["keep"]["checkpoint"]["step"] == 200
        assert data["keep"]["only_before"] == "Reward hacking since step 230"
        assert data["go_back"]["finding"] == "Reward hacking"
        assert data["go_back"]["before_any_checkpoint"] == ["Truncation since step 10"]
        assert data["chosen_by"] == "task reward"
        level = data["keep"]["checkpoint"]["level"]
        assert isinstance(level, float) and math.isfinite(level)

    def test_check_text_has_the_headline_and_lines(self) -> None:
        """The text report's Checkpoints section holds the headline and each line."""
        out = io.StringIO()
        check_command(
            CORPUS / "aaipl-minesweeper-trl", as_json=False, rules_file=None, out=out, width=200
        )
        text = out.getvalue()
        advice = advice_of("aaipl-minesweeper-trl")
        assert "Checkpoints" in text and advice.headline in text
        assert all(line.strip() in text for line in advice.lines)


class TestResumeAdvice:
    """The blow-up's "resume from a checkpoint" advice names the checkpoint the answer names."""

    def test_none_before_the_onset_says_restart(self) -> None:
        """lr1e-4 collapse: too aggressive from step 40, its only checkpoint at 200."""
        diagnosis = corpus_diagnosis("trl-qwen7b-gsm8k-lr1e-4-collapse")
        block = diagnosis.scenario(ScenarioId.TOO_AGGRESSIVE)
        assert block is not None and block.onset_step == 40
        assert "No checkpoint is from before step 40: restart with a lower learning rate." in (
            block.advice
        )
        assert not any(line.startswith(RESUME) for line in block.advice)

    def test_a_checkpoint_before_the_onset_is_named(self, tmp_path: Path) -> None:
        """The same run with a checkpoint-20 folder: the advice and the answer say step 20."""
        run = tmp_path / "run"
        shutil.copytree(CORPUS / "trl-qwen7b-gsm8k-lr1e-4-collapse", run)
        (run / "checkpoint-20").mkdir()
        diagnosis = diagnose(load_run(run), Rules())
        answer = diagnosis.checkpoints
        assert answer is not None and answer.go_back is not None and answer.go_back.step == 20
        block = diagnosis.scenario(ScenarioId.TOO_AGGRESSIVE)
        assert block is not None
        assert (
            "Resume from checkpoint 20, the last before step 40, with a lower learning rate."
            in block.advice
        )
