"""Which prompts are learning, in words: the prompt ledger (run/completions/ledger.py) as
the diagnosis pane, `check` and `check --json` say it. Every number is the LedgerReport's;
nothing is computed here but its wording."""

from __future__ import annotations

import math
from typing import Any

from grpo_tui.numbers import format_step
from grpo_tui.run.completions.ledger import CATEGORIES, Category, LedgerReport
from grpo_tui.run.live import Run

#: each category's name and what it means, as every surface says it
CATEGORY_WORDS: dict[Category, tuple[str, str]] = {
    Category.NEVER_SOLVED: (
        "never solved",
        "no completion passed on any visit: no signal however long it trains",
    ),
    Category.REGRESSED: ("regressed", "solved before, unsolved on its latest visit"),
    Category.FIRST_SOLVED: ("first solved", "unsolved on its first visit, solved on its latest"),
    Category.ALWAYS_SOLVED: ("always solved", "all-pass on every visit: too easy, spent compute"),
    Category.KEPT_SOLVED: (
        "kept solved",
        "solved on its first and latest visits, not all-pass every time",
    ),
}
#: the headline's order and short names (kept solved is the rest; never solved is too
#: hard, always solved too easy)
_HEADLINE: tuple[tuple[Category, str], ...] = (
    (Category.FIRST_SOLVED, "first solved"),
    (Category.REGRESSED, "regressed"),
    (Category.NEVER_SOLVED, "too hard"),
    (Category.ALWAYS_SOLVED, "too easy"),
)
#: visit numbers shown in the all-pass line before the middle ones are elided
_VISITS_SHOWN = 6
#: what a completion passing means, said once where the detail is
PASS_MEANING = (
    "a completion passes at the highest total seen (as an ALL PASS group's do); a visit "
    "is a prompt's train group at one step, solved when one completion passes"
)


def ledger_of(run: Run) -> LedgerReport | None:
    """The run's prompt ledger now (None: no completions file followed, or none there)."""
    index = run.completions
    if index is None or not index.state().file_exists:
        return None
    return index.prompt_ledger()


def _prompts(count: int) -> str:
    return f"{count} prompt{'' if count == 1 else 's'}"


def _percent(share: float) -> str:
    return "–" if math.isnan(share) else f"{share:.0%}"


def prompts_headline(report: LedgerReport) -> str:
    """The one-line answer: which prompts are learning."""
    if report.prompts == 0:
        return "no train group with a known reward read yet: no prompt to follow"
    if report.repeated == 0:
        return (
            f"{report.prompts} prompts, each seen once: prompts never came back, nothing to follow"
        )
    shares = ", ".join(f"{_percent(report.share(category))} {word}" for category, word in _HEADLINE)
    # one line of an 80-column pane: the prompts seen again, then where they stand
    return f"{report.repeated} prompts: {shares}"


def _by_visit(report: LedgerReport) -> str | None:
    visits = report.by_visit
    if not visits:
        return None
    shown = list(visits)
    if len(shown) > _VISITS_SHOWN:
        shown = [*shown[:2], *shown[-(_VISITS_SHOWN - 2) :]]
    shares = []
    for position, visit in enumerate(shown):
        if position and visit.visit != shown[position - 1].visit + 1:
            shares.append("…")
        shares.append(_percent(visit.share))
    first, last = visits[0], visits[-1]
    return (
        f"all-pass groups by visit: {' → '.join(shares)} (visits {first.visit}–{last.visit}, "
        f"median steps {format_step(first.step)}–{format_step(last.step)})"
    )


def forecast_words(report: LedgerReport) -> str | None:
    """When every group would be all-pass at the current rate (None: nothing to follow)."""
    visits = report.by_visit
    if report.repeated == 0 or not visits:
        return None
    last = visits[-1]
    if last.all_pass == last.groups:
        return f"every group all-pass on visit {last.visit} already (around step {format_step(last.step)})"
    forecast = report.forecast
    if forecast is None:
        return "one visit number with enough groups: no trend yet"
    if forecast.visit is None:
        return (
            "the all-pass share is not rising: never every group all-pass, not at the current rate"
        )
    where = f"around visit {forecast.visit:.0f}"
    if forecast.step is not None:
        where += f", step {format_step(round(forecast.step))}"
    points = forecast.per_visit * 100
    return f"at the current rate (+{points:.1f} points a visit) every group all-pass {where}"


def prompts_lines(report: LedgerReport) -> list[str]:
    """The detail under the headline: each category with its pool, the all-pass share by
    visit and the forecast."""
    if report.repeated == 0:
        return []
    lines = []
    for category in CATEGORIES:
        count = report.counts.get(category, 0)
        if not count:
            continue
        word, meaning = CATEGORY_WORDS[category]
        line = f"{word}: {_prompts(count)} ({_percent(report.share(category))}), {meaning}"
        if category in (Category.NEVER_SOLVED, Category.ALWAYS_SOLVED):
            line += f"; {_percent(report.group_share(category))} of the groups trained"
        lines.append(line)
    if report.seen_once:
        lines.append(f"{_prompts(report.seen_once)} more seen once so far, not followed yet")
    for extra in (_by_visit(report), forecast_words(report)):
        if extra is not None:
            lines.append(extra)
    return lines


def _json_number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _json_step(value: float | None) -> float | int | None:
    if value is None or not math.isfinite(value):
        return None
    return int(value) if float(value).is_integer() else float(value)


def prompts_json(report: LedgerReport | None) -> dict[str, Any] | None:
    """`check --json`'s `prompts` (the README's JSON table documents each field)."""
    if report is None:
        return None
    forecast = report.forecast
    return {
        "prompts": report.prompts,
        "visits": report.visits,
        "seen_once": report.seen_once,
        "repeated": report.repeated,
        "first_step": _json_step(report.first_step),
        "last_step": _json_step(report.last_step),
        "categories": {
            category.value: {
                "prompts": report.counts.get(category, 0),
                "share": _json_number(report.share(category)),
                "groups": report.groups.get(category, 0),
                "group_share": _json_number(report.group_share(category)),
            }
            for category in CATEGORIES
        },
        "by_visit": [
            {
                "visit": v.visit,
                "groups": v.groups,
                "all_pass": v.all_pass,
                "share": _json_number(v.share),
                "step": _json_step(v.step),
            }
            for v in report.by_visit
        ],
        "forecast": None
        if forecast is None
        else {
            "rising": forecast.rising,
            "per_visit": _json_number(forecast.per_visit),
            "visit": None if forecast.visit is None else round(forecast.visit, 2),
            "step": None if forecast.step is None else _json_step(round(forecast.step)),
        },
        "answer": prompts_headline(report),
        "lines": prompts_lines(report),
    }
