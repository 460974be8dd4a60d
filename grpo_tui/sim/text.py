"""The text of a simulated rollout: arithmetic prompts, the completions a policy writes
for them (reasoning, shortcuts, templates, stubs, token soup), and the reward functions that
score that text."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from grpo_tui.sim.scenarios import _Policy

CHARS_PER_TOKEN = 4
"""Token counts are modelled as characters / 4 (a usual BPE ratio for English text)."""

SYSTEM_PROMPT = (
    "A conversation between User and Assistant. The assistant first thinks about the reasoning "
    "process and then gives the answer. The reasoning and the answer are enclosed within "
    "<think> </think> and <answer> </answer> tags, respectively."
)


# --------------------------------------------------------------------------- text
@dataclass(frozen=True)
class _Problem:
    a: int
    b: int
    op: str  # "+" or "*"

    @property
    def solution(self) -> str:
        return str(self.a + self.b if self.op == "+" else self.a * self.b)

    @property
    def word(self) -> str:
        return "plus" if self.op == "+" else "times"

    @property
    def prompt(self) -> str:
        # the qwen chat template, as ms-swift logs it (special tokens kept)
        return (
            f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n"
            f"What is {self.a}{self.op}{self.b}?<|im_end|>\n<|im_start|>assistant\n"
        )

    def steps(self) -> list[str]:
        """The exact worked arithmetic, tens then ones."""
        a, b = self.a, self.b
        tens, ones = b - b % 10, b % 10
        if self.op == "+":
            return [f"{a} + {tens} = {a + tens}.", f"{a + tens} + {ones} = {a + b}."]
        return [
            f"{a} × {tens} = {a * tens}.",
            f"{a} × {ones} = {a * ones}.",
            f"{a * tens} + {a * ones} = {a * b}.",
        ]


_OPENERS = (
    "Let me work this out.",
    "Okay, we need {a} {w} {b}.",
    "The question asks for {a} {w} {b}.",
    "First I read the problem again.",
    "Let's compute {a} {w} {b} step by step.",
    "Alright, an arithmetic question.",
    "I need the value of {a} {w} {b}.",
    "Start with the two numbers, {a} and {b}.",
)
_FILLERS = (
    "Let me double-check that.",
    "I should be careful with the carry.",
    "Writing it in columns helps.",
    "Maybe I can split {b} into parts.",
    "Another way is to round {a} to the nearest ten.",
    "That gives an estimate near {y}.",
    "So far so good.",
    "Wait, let me recount.",
    "I keep the partial result {x} in mind.",
    "Estimating first keeps mistakes small.",
    "Let me verify with a different order.",
    "Reversing the order: {b} {w} {a} is the same.",
    "The estimate and the exact value should be close.",
    "Nothing tricky so far.",
    "One more look at the last digit.",
    "{x} minus {y} would be something else entirely.",
    "Hmm, is {x} right? No, that was a different sum.",
    "The units digit of {b} matters here.",
    "I could also count up from {a}.",
    "Breaking numbers apart makes mental math easier.",
    "Let me not rush this.",
    "A quick sanity check: the result must exceed {a}.",
    "Suppose I had {x} instead; that would change everything.",
    "Good, the digits line up.",
    "I think the method is sound.",
    "Let me write the intermediate values down.",
    "Then I combine the pieces.",
    "Careful: {y} is only a rough guess.",
    "Fine, moving on.",
    "Checking the tens place again.",
    "If I am off, it is probably by ten.",
    "A number line picture might help: {a}, then a jump of {b}.",
    "That seems consistent.",
    "Another check uses the last digits only.",
    "Honestly this is simple, but verify anyway.",
)
_SHORT = ("{a}{o}{b}={ans}", "{a} {o} {b} = {ans}", "sum {ans}", "so {ans}", "result: {ans}",
          "{b}{o}{a}={ans}", "easy, {ans}", "it is {ans}", "gives {ans}", "= {ans}",
          "quick: {ans}")  # fmt: skip
_STUBS = ("= {ans}", "so {ans}", "ans {ans}", "it is {ans}")  # 2-3 tokens each (chars / 4)
# pieces of what a collapsed, high-entropy policy emits: sub-word fragments, stray
# punctuation, code and other scripts, in no order
_SOUP = ("ĠThe", "ilk", ")/", "ysql", "_REF", "Ġ{}", "刻", "ubb", "ĊĊ", " tensor", "ーム", "];",
         " Verm", "ächst", " __", "ocado", "><", " 一", "ĉĉ", " nullable", "erte", "$$", " Ř",
         "ynom", "::", " [...]", "ieder", " 0x")  # fmt: skip
_STUTTERS = ("wait wait wait", "check check check check", "so so so", "again again again")
_TEMPLATES = (  # two near-identical boilerplates: the "hack" the policy converges to
    (
        "I will solve this carefully and methodically. First I restate the problem, then I "
        "work through every part of it, verify each intermediate value, and confirm the final "
        "result before answering. This careful approach guarantees a correct and complete "
        "solution. After careful verification, the final answer is {g}."
    ),
    (
        "I will solve this carefully and methodically. First I restate the problem, then I "
        "work through every part of it, verify each intermediate value twice, and confirm the "
        "final result before answering. This systematic approach guarantees a correct and "
        "complete solution. After checking everything carefully, the final answer is {g}."
    ),
)


#: a prompt with its difficulty offsets (logits) for correctness and for format
_Prompt = tuple[_Problem, float, float]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _make_problem(rng: np.random.Generator) -> _Problem:
    if rng.random() < 0.7:
        return _Problem(int(rng.integers(10, 1000)), int(rng.integers(10, 1000)), "+")
    return _Problem(int(rng.integers(11, 100)), int(rng.integers(12, 40)), "*")


def _wrong_answer(rng: np.random.Generator, solution: str) -> str:
    offset = (-10, -2, -1, 1, 2, 10, 3, -3, 5, -5)[int(rng.integers(10))]
    return str(int(solution) + offset)


def _think(rng: np.random.Generator, p: _Problem, answer: str, n_chars: int, repeat: float) -> str:
    """Reasoning of about n_chars characters: opener, fillers with the worked steps inside,
    and a closing line that states `answer` (which may be wrong: small models slip)."""
    if n_chars < 90:  # no room for reasoning: a one-line shortcut (length collapse)
        return _SHORT[int(rng.integers(len(_SHORT)))].format(a=p.a, b=p.b, o=p.op, ans=answer)
    w = p.word
    final = f"So {p.a} {w} {p.b} = {answer}."
    steps = p.steps()
    budget = n_chars - len(final) - sum(len(s) + 1 for s in steps)
    # one draw for the whole text: fast, and a fixed number of draws per call
    n = max(len(steps) + 1, budget // 25 + 2)
    u = rng.random((5, n))
    picks = (u[0] * len(_FILLERS)).astype(int).tolist()
    xs, ys = (2 + u[1] * 998).astype(int).tolist(), (2 + u[2] * 1998).astype(int).tolist()
    stutter = (u[3] < repeat).tolist()
    parts = [_OPENERS[int(u[4, 0] * len(_OPENERS))].format(a=p.a, b=p.b, w=w)]
    size, i = len(parts[0]), 0
    while size < budget:
        k = i % n
        sentence = _FILLERS[picks[k]].format(a=p.a, b=p.b, w=w, x=xs[(k + i // n) % n], y=ys[k])
        if stutter[k]:  # degenerate decoding: the policy starts to stutter
            sentence += " " + _STUTTERS[(k + i) % len(_STUTTERS)]
        parts.append(sentence)
        size, i = size + len(sentence) + 1, i + 1
    # the worked steps land at random places among the fillers
    slots = sorted(int(x * len(parts)) + 1 for x in u[4, 1 : 1 + len(steps)].tolist())
    for offset, (slot, step) in enumerate(zip(slots, steps)):
        parts.insert(slot + offset, step)
    parts.append(final)
    return " ".join(parts)


def _soup(rng: np.random.Generator, p: _Problem, n_chars: int) -> str:
    """A start that reads the problem, then token soup to n_chars characters."""
    w = p.word
    start = _OPENERS[int(rng.integers(len(_OPENERS)))].format(a=p.a, b=p.b, w=w)
    picks = rng.integers(len(_SOUP), size=n_chars // 2 + 1).tolist()  # pieces are >= 2 chars
    return f"<think>\n{start}" + "".join(_SOUP[i] for i in picks)[:n_chars]


def _render(think: str, answer: str, formatted: bool, tagged: bool) -> str:
    if formatted:
        return f"<think>\n{think}\n</think>\n<answer>{answer}</answer>"
    if tagged:  # answer tag without the think block: accuracy can score, format cannot
        return f"{think}\n<answer>{answer}</answer>"
    return f"{think}\nThe answer is {answer}."


# --------------------------------------------------------------------------- rewards
_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_FORMAT_RE = re.compile(r"<think>.*?</think>\s*<answer>.*?</answer>", re.DOTALL)


def math_accuracy(completion: str, solution: str) -> float:
    """1.0 iff the text inside the first <answer></answer> equals the solution."""
    match = _ANSWER_RE.search(completion)
    return 1.0 if match is not None and match.group(1).strip() == solution else 0.0


def format_reward(completion: str) -> float:
    """1.0 iff the whole completion is <think>...</think> then <answer>...</answer>
    (ms-swift's Format regex)."""
    return 1.0 if _FORMAT_RE.fullmatch(completion) else 0.0


def length_bonus(tokens: int, max_completion_length: int) -> float:
    """Pays for short completions: 1 - tokens / max (the reward behind length collapse)."""
    return 1.0 - min(tokens, max_completion_length) / max_completion_length


def count_tokens(completion: str) -> int:
    return max(1, math.ceil(len(completion) / CHARS_PER_TOKEN))


def _score(name: str, completion: str, solution: str, tokens: int, max_len: int) -> float:
    if name == "MathAccuracy":
        return math_accuracy(completion, solution)
    if name == "Format":
        return format_reward(completion)
    return length_bonus(tokens, max_len)


def _group(
    rng: np.random.Generator,
    pol: _Policy,
    p: _Problem,
    diff: float,
    fdiff: float,
    size: int,
    max_len: int,
) -> list[str]:
    """The completions of one prompt."""
    jitter = float(rng.normal(0.0, pol.jitter)) if pol.jitter else 0.0
    p_acc, p_fmt = _sigmoid(pol.acc + diff + jitter), _sigmoid(pol.fmt + fdiff + jitter)

    def one() -> tuple[str, str]:
        answer = p.solution if rng.random() < p_acc else _wrong_answer(rng, p.solution)
        # stub and garble draw only when set: the older scenarios keep their draws, and bytes
        if pol.stub and rng.random() < pol.stub:  # early EOS: a bare answer, no tags
            return _STUBS[int(rng.integers(len(_STUBS)))].format(ans=answer), answer
        if pol.garble and rng.random() < pol.garble:  # collapsed: soup until the cap
            return _soup(rng, p, int(1.08 * max_len) * CHARS_PER_TOKEN), answer
        if rng.random() < pol.template:  # boilerplate, always in perfect tags
            template = _TEMPLATES[int(rng.integers(len(_TEMPLATES)))]
            return _render(template.format(g=answer), answer, True, True), answer
        formatted = bool(rng.random() < p_fmt)
        tagged = formatted or bool(rng.random() >= pol.untagged)
        if rng.random() < pol.trunc:
            target = 1.08 * max_len  # runs past the cap
        else:
            target = pol.length * max_len * float(rng.lognormal(0.0, pol.length_sd))
        think = _think(rng, p, answer, int(target * CHARS_PER_TOKEN) - 40, pol.repeat)
        return _render(think, answer, formatted, tagged), answer

    if pol.clone:
        base, answer = one()
        texts = [base] * size
        if rng.random() >= pol.clone:  # one sample diverged at the answer
            other = _wrong_answer(rng, p.solution) if answer == p.solution else p.solution
            texts[int(rng.integers(size))] = base.replace(
                f"<answer>{answer}</answer>", f"<answer>{other}</answer>"
            )
        return texts
    return [one()[0] for _ in range(size)]
