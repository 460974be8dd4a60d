"""The completion groups `grpo-tui samples` (and the MCP server's `samples` tool) hand out:
which groups of the logged completions, in which order, as JSON and as text.

The groups are the completions pane's: the run's completions index (run/completions/)
pages each logged batch into its GRPO groups, with the same rewards, totals, advantages,
flags and zero-spread kinds the pane draws; nothing here reads a file. Batches that repeat
the one before verbatim (the end-of-train line, `num_iterations > 1`) are skipped as the
pane skips them; a batch's role (train, eval, the later batch at a step already seen) is
the index's.

Which steps (`SampleQuery`): one step (`--step N`), every step after one (`--since N`),
or by default the newest step logged (its train batch and its eval batch, when both are
there). Which groups of them, in which order:
- `worst`: the lowest mean total first, ties the smaller spread first: the order the
  pane's `w` key ranks by (ui/completions_cursor.ranked_group), newer batches first among
  equal ones; a group with no known total comes last;
- `tied`: the groups whose totals are all equal (zero spread: no advantage signal);
- `truncated`: the groups holding a completion cut off (a tag or `\\boxed{` opened and
  never closed: the pane's ✂cut; logs give no token counts), the largest share cut first;
- `all`: every group.
`tied`, `truncated` and `all` go newest batch first, in logged order inside a batch.
`limit` keeps the first K; `matched` says how many there were.

Text from the run is untrusted: JSON keeps it whole with every control character a
`\\uXXXX` escape (`untrusted.json_dumps`, at the point of writing); the text form shows it
through `printable` (escapes visible, inert) and caps each completion to a few lines.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from rich.console import Group as RichGroup
from rich.console import RenderableType
from rich.text import Text

from grpo_tui.numbers import format_step, format_value
from grpo_tui.run.completions import CompletionsIndex, Group, IndexState, LineInfo, Sample
from grpo_tui.run.completions.entries import step_key
from grpo_tui.run.live import Run
from grpo_tui.untrusted import printable
from grpo_tui.views.completion_rows import HOW_TO_LOG, KIND_WORDS, group_kind
from grpo_tui.views.presentation import name_of
from grpo_tui.views.sample_text import capped_lines, fold_prompt

Selection = Literal["worst", "tied", "truncated", "all"]
SELECTIONS: tuple[Selection, ...] = get_args(Selection)

#: the defaults `samples` runs with (README, "samples"): the newest step, its worst groups
DEFAULT_SELECTION: Selection = "worst"
DEFAULT_LIMIT = 8
#: characters of each prompt and completion JSON carries (the length is said beside it);
#: 0 = whole. An agent's context is the budget: eight groups of sixteen 8k-token answers
#: would not fit
DEFAULT_MAX_CHARS = 4000
#: lines of each completion (and of the prompt) in the text form
TEXT_LINES = 4
#: the version of the JSON layout: raised when a field changes meaning or goes
SAMPLES_JSON_SCHEMA = 1

#: an entry's role as JSON says it (the index's kinds; "repeat" is never handed out)
ROLES = {"new": "train", "eval": "eval", "eval_or_end": "eval_or_end"}


@dataclass(frozen=True, slots=True)
class SampleQuery:
    """Which steps and which of their groups."""

    #: exactly this step (None: see `since`)
    step: float | None = None
    #: every step after this one (None with `step` None: the newest step logged)
    since: float | None = None
    groups: Selection = DEFAULT_SELECTION
    #: groups handed out at most (0: all)
    limit: int = DEFAULT_LIMIT
    #: characters of each text in JSON (0: whole)
    max_chars: int = DEFAULT_MAX_CHARS

    def __post_init__(self) -> None:
        if self.step is not None and self.since is not None:
            raise ValueError("a step or the steps since one, not both")
        if self.groups not in SELECTIONS:
            raise ValueError(f"groups must be one of {', '.join(SELECTIONS)}")
        if self.limit < 0 or self.max_chars < 0:
            raise ValueError("limit and max_chars are 0 (no limit) or more")


@dataclass(frozen=True, slots=True)
class Picked:
    """One group handed out, with where it is in the index."""

    group: Group
    #: the index entry (a logged batch) and the group's place in it (0-based)
    entry: int
    position: int
    groups_in_batch: int
    info: LineInfo

    @property
    def role(self) -> str:
        return ROLES.get(self.info.kind, self.info.kind)


@dataclass(frozen=True, slots=True)
class SampleAnswer:
    """What a query found: the groups, how many matched, and what the index holds."""

    query: SampleQuery
    groups: list[Picked]
    matched: int
    #: the step labels the groups asked for were read from (newest first)
    steps: list[str]
    #: the steps logged at all: the first and the newest (None: no batch)
    logged: tuple[str, str] | None
    #: the completions file (or folder) read, or the one looked for
    looked_for: Path | None
    state: IndexState | None
    #: batches read in all (bad ones apart)
    batches: int = 0
    #: what the index could not read, said (no completions, a step not logged)
    problem: str | None = field(default=None)


# -- selecting -------------------------------------------------------------------------------


def _number(label: str) -> float:
    return step_key(label)[0]


def _wanted_entries(index: CompletionsIndex, query: SampleQuery) -> tuple[list[LineInfo], int]:
    """The batches worth showing (no repeats) that may hold the steps asked for, newest
    first, and how many batches there are. With no step asked, the newest step's."""
    infos = [index.line_info(i) for i in range(len(index))]
    shown = [info for info in infos if info.kind != "repeat"]
    if query.step is not None:
        step = query.step
        chosen = [i for i in shown if any(_number(s) == step for s in i.steps)]
    elif query.since is not None:
        since = query.since
        chosen = [i for i in shown if any(_number(s) > since for s in i.steps)]
    elif shown:
        newest = _number(shown[-1].step)
        chosen = (
            [i for i in shown if _number(i.step) == newest]
            if not math.isnan(newest)
            else shown[-1:]
        )
    else:
        chosen = []
    return chosen[::-1], len(infos)


def _group_in_steps(group: Group, query: SampleQuery, newest: set[str]) -> bool:
    """The group was logged at a step asked for (a batch may hold rows of several steps)."""
    number = _number(group.step)
    if query.step is not None:
        return number == query.step
    if query.since is not None:
        return number > query.since
    return group.step in newest or math.isnan(number)


def _cut_share(group: Group) -> float:
    return sum(bool(s.truncated) for s in group.completions) / max(1, group.size)


def _matches(group: Group, selection: Selection) -> bool:
    if selection == "tied":
        return group.zero_spread
    if selection == "truncated":
        return any(s.truncated for s in group.completions)
    return True


def _order(picked: Picked, selection: Selection, rank: int) -> tuple[float, ...]:
    """The sort key: smaller first. `rank` counts groups newest batch first, logged order
    inside a batch."""
    group = picked.group
    if selection == "worst":
        mean, spread = group.mean_total, group.spread
        unknown = math.isnan(mean)
        return (
            float(unknown),
            0.0 if unknown else mean,
            0.0 if math.isnan(spread) else spread,
            rank,
        )
    if selection == "truncated":
        return (-_cut_share(group), rank)
    return (rank,)


def select_groups(run: Run, query: SampleQuery) -> SampleAnswer:
    """The groups of `run`'s logged completions that `query` asks for (module docstring)."""
    index = run.completions
    looked_for = run.status.completions_file
    if index is None or len(index) == 0:
        return SampleAnswer(
            query, [], 0, [], None, looked_for, run.completions_state, 0, no_completions(run)
        )
    chosen, batches = _wanted_entries(index, query)
    infos = [index.line_info(i) for i in (0, -1)]
    logged = (infos[0].step, infos[1].step)
    newest_labels = {label for info in chosen for label in info.steps}
    steps: dict[str, None] = {}
    rank = 0

    def candidates() -> Iterator[tuple[tuple[float, ...], Picked]]:
        """Each matching group with its sort key; `rank` counts them (newest batch first)."""
        nonlocal rank
        for info in chosen:
            page = index.page(info.index)
            if page is None:
                continue  # rewritten under us: the next read starts over
            for position, group in enumerate(page.groups):
                if not _group_in_steps(group, query, newest_labels):
                    continue
                steps.setdefault(group.step)
                if not _matches(group, query.groups):
                    continue
                picked = Picked(group, info.index, position, len(page.groups), page.info)
                yield _order(picked, query.groups, rank), picked
                rank += 1

    # the sort keys end with the rank, so two keys never tie and no Picked is compared
    if query.limit:
        ordered = heapq.nsmallest(query.limit, candidates(), key=lambda item: item[0])
    else:
        ordered = sorted(candidates(), key=lambda item: item[0])
    problem = None
    if not steps:
        problem = f"no completions at {_steps_words(query)} (logged: steps {logged[0]}–{logged[1]})"
    return SampleAnswer(
        query,
        [picked for _, picked in ordered],
        rank,
        list(steps),
        logged,
        looked_for,
        run.completions_state,
        batches,
        problem,
    )


def _steps_words(query: SampleQuery) -> str:
    if query.step is not None:
        return f"step {format_step(query.step)}"
    if query.since is not None:
        return f"steps after {format_step(query.since)}"
    return "the newest step"


def no_completions(run: Run) -> str:
    """Why there are no groups: the file looked for and what is wrong with it (the words
    of the pane's empty state, views/completion_rows.empty_state)."""
    looked_for = run.status.completions_file
    state = run.completions_state
    if looked_for is None:
        framework = f"{run.framework} " if run.framework else ""
        return f"no completions logged: this {framework}run has no completions file grpo-tui reads"
    if state is not None and state.problem:
        return f"no completions logged yet: looked for {looked_for} ({state.problem})"
    exists = state is not None and state.file_exists
    where = "present, no completions in it yet" if exists else "not there"
    return f"no completions logged yet: looked for {looked_for} ({where})"


# -- JSON ------------------------------------------------------------------------------------


def _number_json(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _step_json(label: str) -> float | int | None:
    number = _number(label)
    if math.isnan(number):
        return None
    return int(number) if number.is_integer() else number


def _text_json(text: str, max_chars: int) -> dict[str, Any]:
    cut = bool(max_chars) and len(text) > max_chars
    return {"text": text[:max_chars] if cut else text, "chars": len(text), "cut": cut}


def sample_flags(sample: Sample) -> list[str]:
    """What is wrong with one completion, as words (the pane's ✗fmt ✂cut ↻rep)."""
    found = (sample.follows_format is False, bool(sample.truncated), sample.repetitive)
    words = ("format_broken", "cut_off", "repeating")
    return [word for word, on in zip(words, found, strict=True) if on]


def _sample_json(sample: Sample, max_chars: int) -> dict[str, Any]:
    text = _text_json(sample.text, max_chars)
    return {
        "text": text["text"],
        "text_chars": text["chars"],
        "text_cut": text["cut"],
        "rewards": {name: _number_json(value) for name, value in sample.rewards.items()},
        "total": _number_json(sample.total),
        "advantage": _number_json(sample.advantage),
        "flags": sample_flags(sample),
        "follows_format": sample.follows_format,
        "cut_off": sample.truncated,
        "repetition": _number_json(sample.repetition),
        "empty": sample.empty,
        "entropy": _number_json(sample.entropy),
        "solution": sample.solution,
        "extras": dict(sample.extras),
    }


def group_json(picked: Picked, max_chars: int) -> dict[str, Any]:
    """One group as `samples --json` writes it (README, "samples --json")."""
    group = picked.group
    prompt = _text_json(group.prompt, max_chars)
    return {
        "step": _step_json(group.step),
        "step_label": group.step,
        "role": picked.role,
        "batch": picked.entry,
        "line": picked.info.line_no,
        "group": picked.position + 1,
        "groups_in_batch": picked.groups_in_batch,
        "prompt": prompt["text"],
        "prompt_chars": prompt["chars"],
        "prompt_cut": prompt["cut"],
        "size": group.size,
        "mean_total": _number_json(group.mean_total),
        "spread": _number_json(group.spread),
        "zero_spread": group.zero_spread,
        "kind": (group_kind(group) or "").lower().replace(" ", "_") or None,
        "distinct_2": _number_json(group.distinct_2),
        "pairwise_overlap": _number_json(group.pairwise_overlap),
        "reward_functions": list(group.rewards),
        "completions": [_sample_json(s, max_chars) for s in group.completions],
    }


def samples_to_json(run: Run, answer: SampleAnswer) -> dict[str, Any]:
    """The answer as plain JSON data (README, "samples --json")."""
    query = answer.query
    state = answer.state
    named = name_of(run)
    return {
        "schema": SAMPLES_JSON_SCHEMA,
        "path": str(run.path),
        "name": named.called,
        "query": {
            "groups": query.groups,
            "step": _number_json(query.step),
            "since": _number_json(query.since),
            "limit": query.limit,
            "max_chars": query.max_chars,
        },
        "completions": {
            "file": None if answer.looked_for is None else str(answer.looked_for),
            "exists": None if state is None else state.file_exists,
            "batches": answer.batches,
            "bad_batches": 0 if state is None else state.bad_line_count,
            "first_step": None if answer.logged is None else answer.logged[0],
            "last_step": None if answer.logged is None else answer.logged[1],
        },
        "problem": answer.problem,
        "steps": answer.steps,
        "matched": answer.matched,
        "shown": len(answer.groups),
        "groups": [group_json(picked, query.max_chars) for picked in answer.groups],
    }


# -- text ------------------------------------------------------------------------------------


def _group_head(picked: Picked, number: int) -> Text:
    group = picked.group
    head = Text(f"{number}. step {printable(group.step)} ", style="bold")
    head.append(KIND_WORDS.get(picked.info.kind, picked.info.kind))
    head.append(f" · group {picked.position + 1}/{picked.groups_in_batch}")
    head.append(f" · {group.size} completions · mean {format_value(group.mean_total)}")
    head.append(f" · spread {format_value(group.spread)}")
    if (kind := group_kind(group)) is not None:
        head.append(f" · {kind}", style="bold")
    return head


def _sample_line(number: int, sample: Sample, width: int) -> list[Text]:
    rewards = "  ".join(
        f"{printable(name)} {format_value(value)}" for name, value in sample.rewards.items()
    )
    facts = Text(f"  [{number}] ", style="dim")
    if rewards:
        facts.append(rewards + "  ")
    facts.append(f"total {format_value(sample.total)}", style="bold")
    facts.append(f"  adv {format_value(sample.advantage)}")
    if flags := sample_flags(sample):
        facts.append("  " + " ".join(flags), style="yellow")
    body = capped_lines(sample.shown_text, width - 6, TEXT_LINES).text
    if sample.empty:
        body = Text("(empty)", style="dim")
    lines = body.split("\n")
    for line in lines:
        line.pad_left(6)
    return [facts, Text("\n").join(lines)]


def render_samples(
    run: Run, answer: SampleAnswer, width: int = 100, *, how_to_log: bool = True
) -> RenderableType:
    """The answer as text: a line saying what was asked and found, then each group: its
    head, its prompt on one line, each completion's rewards and its first lines.
    `how_to_log`: where no completion is logged, say how to turn logging on."""
    query = answer.query
    named = name_of(run)
    title = Text(f"grpo-tui samples {printable(str(run.path))}", style="bold")
    if named.called != run.path.name:
        title.append(f"  ({printable(named.called)})")
    parts: list[RenderableType] = [title]
    if answer.problem is not None:
        parts.append(Text(printable(answer.problem), style="bold"))
        if answer.logged is None and how_to_log:
            parts.append(Text(HOW_TO_LOG, style="dim"))
        return RichGroup(*parts)
    steps = ", ".join(answer.steps[:6]) + (" …" if len(answer.steps) > 6 else "")
    said = Text(
        f"{query.groups} groups at {_steps_words(query)} (step {printable(steps)}): "
        f"{len(answer.groups)} of {answer.matched} shown",
        style="dim",
    )
    parts.append(said)
    if not answer.groups:
        parts.append(Text(f"no {query.groups} groups there", style="bold"))
    for number, picked in enumerate(answer.groups, 1):
        parts.append(Text(""))
        parts.append(_group_head(picked, number))
        prompt = Text("  prompt: ", style="dim")
        prompt.append(fold_prompt(picked.group.prompt)[: width * 2])
        parts.append(prompt)
        for row, sample in enumerate(picked.group.completions, 1):
            parts.extend(_sample_line(row, sample, width))
    return RichGroup(*parts)
