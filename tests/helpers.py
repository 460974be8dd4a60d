"""Shared test helpers, the one module tests import them from (test modules never import
each other): where the copied real fixtures live, an ms-swift run folder rebuilt from one,
and a corpus of hostile strings with a run directory built from them, for the tests that
walk every output path (tests/test_hostile_output.py, and the completions tests).

Each hostile string is valid in a JSON key, a value, a file name (no "/" or NUL where it
names a file) or a completion, and each would act on a terminal or a renderer if printed raw.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
MS_SWIFT = FIXTURES / "ms-swift"
TRL = FIXTURES / "trl"


def msswift_run_dir(
    tmp_path: Path, name: str, args: dict[str, object], *, completions: bool
) -> Path:
    """An ms-swift output dir rebuilt from a fixture: its logging.jsonl (and completions), with
    the args.json its .source.txt command implies (ms-swift 4.6 defaults num_iterations 1)."""
    run_dir = tmp_path / "output" / "v0-20261202-132949"
    run_dir.mkdir(parents=True)
    shutil.copy(MS_SWIFT / f"{name}_logging.jsonl", run_dir / "logging.jsonl")
    if completions:
        shutil.copy(MS_SWIFT / f"{name}_completions.jsonl", run_dir / "completions.jsonl")
    (run_dir / "args.json").write_text(json.dumps(args), encoding="utf-8")
    return tmp_path / "output"


#: the args.json implied by the recorded command of the 4.6.0 "3rewards-eval" local run
THREE_REWARDS = "local-run-msswift-4.6.0_grpo-3rewards-eval"
THREE_REWARDS_ARGS: dict[str, object] = {
    "rlhf_type": "grpo",
    "reward_funcs": ["format", "length_bonus", "coin_flip"],
    "max_completion_length": 24,
    "num_generations": 4,
    "max_steps": 6,
    "logging_steps": 2,
    "learning_rate": 1e-4,
    "beta": 0.04,
    "temperature": 1.0,
    "num_iterations": 1,
    "epsilon": 0.2,
    "loss_type": "grpo",
}


#: name → the hostile text
HOSTILE: dict[str, str] = {
    "csi_clear": "\x1b[2J\x1b[H",
    "osc_title_bel": "\x1b]2;HACKED\x07",
    "osc_title_st": "\x1b]0;HACKED\x1b\\",
    "osc52_clipboard": "\x1b]52;c;SGFja2Vk\x07",
    "osc8_link": "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\",
    "dcs": "\x1bP1$r0m\x1b\\",
    "c1_csi": "\x9b2J",
    "c1_osc": "\x9d2;HACKED\x9c",
    "backspace": "good\x08\x08\x08\x08evil",
    "carriage_return": "shown\roverwritten",
    "bell_nul": "\x07\x00",
    "bidi_override": "abc\u202edcba\u202c",
    "bidi_isolate": "\u2067x\u2069",
    "zero_width": "in\u200bvis\u200dible\ufeff",
    "tag_chars": "\U000e0041\U000e0042",
    "line_separator": "a\u2028b\u2029c",
    "rich_markup": "[bold red]markup[/] [link=http://evil.example]x[/link]",
    "textual_markup": "$accent [@click=app.quit]quit[/]",
}
#: where a leak would show: any C0/C1 control, DEL, or the bidi / zero-width / tag characters
LEAK = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
#: what Rich and Textual write themselves: colours (SGR) and cursor moves (CUP); the hostile
#: strings hold none of these forms, so stripping them cannot hide a leak
OWN_SEQUENCES = re.compile(
    r"\x1b\[[0-9;?]*[mHhlJK]|\x1b[=>78]|\x1b\][0-9]+;[^\x07\x1b]*(?:\x07|\x1b\\)"
)

FIXTURE_LOG = MS_SWIFT / "local-run-msswift-4.6.0_grpo-3rewards-eval_logging.jsonl"


def leaks(text: str) -> list[str]:
    """The unsafe characters in `text` (empty when it is safe to print)."""
    return LEAK.findall(text)


def terminal_leaks(ansi: str) -> list[str]:
    """The unsafe characters in terminal output once the renderer's own sequences are
    removed. OSC sequences Textual itself writes (none in headless output) would be too."""
    return leaks(OWN_SEQUENCES.sub("", ansi))


def file_safe(text: str) -> str:
    return text.replace("/", "_").replace("\x00", "_")


def hostile_lines() -> list[str]:
    """Real ms-swift train lines whose keys, values and neighbours are hostile."""
    lines = FIXTURE_LOG.read_text(encoding="utf-8").splitlines()
    train = json.loads(lines[0])
    out: list[str] = []
    for step, (name, text) in enumerate(HOSTILE.items(), 1):
        record = dict(train)
        record["global_step/max_steps"] = f"{step}/{len(HOSTILE)}"
        record[f"rewards/{file_safe(text)}/mean"] = 0.5
        record[text] = 1.0  # a whole key
        record["note"] = text  # a string value nobody reads as a metric
        out.append(json.dumps(record))
        if name == "csi_clear":
            out.append("{not json " + text + "}")  # a bad line quoted in messages
    return out


def hostile_run(root: Path) -> Path:
    """An ms-swift output dir under a hostile directory name, with hostile keys, a bad line,
    and an args.json whose fields are hostile. Returns the output dir."""
    output = root / file_safe("out" + HOSTILE["osc_title_bel"] + HOSTILE["bidi_override"])
    run_dir = output / "v0-20260101-000000"
    run_dir.mkdir(parents=True)
    (run_dir / "logging.jsonl").write_text("\n".join(hostile_lines()) + "\n", encoding="utf-8")
    args = {
        "model": HOSTILE["osc52_clipboard"],
        "reward_funcs": [HOSTILE["csi_clear"], HOSTILE["rich_markup"]],
        "beta": HOSTILE["osc_title_st"],  # not a number: a note quotes it
        "max_completion_length": 24,
    }
    (run_dir / "args.json").write_text(json.dumps(args), encoding="utf-8")
    (run_dir / "completions.jsonl").write_text(
        "\n".join(json.dumps(record) for record in hostile_completions()) + "\n",
        encoding="utf-8",
    )
    return output


def hostile_completions() -> list[dict[str, object]]:
    """completions.jsonl lines (ms-swift 4.x shape) whose prompts, completions, step labels
    and reward-function names are the hostile strings: the panel, the full view, `check`
    (sample evidence) and `inspect` show them."""
    texts = list(HOSTILE.values())
    size = len(texts)
    records: list[dict[str, object]] = []
    for step in (1, 2):
        record: dict[str, object] = {
            "step": [str(step)] * (size - 1) + [texts[0]],
            "prompt": [f"<|im_start|>user\n{t}<|im_end|>\n" for t in texts],
            "completion": [f"<think>{t}</think><answer>{t}</answer>" for t in texts],
            "advantages": [(-1.0) ** i for i in range(size)],
        }
        for position, text in enumerate(texts[:4]):
            record[text] = [float((i + position + step) % 2) for i in range(size)]
        records.append(record)
    return records
