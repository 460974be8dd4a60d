"""Reading the run context (grpo_tui.context.RunContext) from ms-swift's `args.json` (the
run directory, or a checkpoint's copy) and from a `trainer_state.json` header. Unknown or
missing fields stay None."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grpo_tui.context import RunContext
from grpo_tui.files import UTF8_BOM, describe_os_error, read_regular
from grpo_tui.sources.logreader import parse_json

#: the largest count or length taken from args (anything above is not a real setting)
_LARGEST_SETTING = 2**53


class ArgsError(ValueError):
    """An args file that cannot be used; the message says why, for the user."""


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):  # an int too big for a float, a word
        return None
    return number if math.isfinite(number) else None


def _as_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value if abs(value) <= _LARGEST_SETTING else None
    number = _as_float(value)
    return int(number) if number is not None and abs(number) <= _LARGEST_SETTING else None


#: fields read as whole numbers and as floats (the rest are strings and lists)
_INT_FIELDS = (
    "max_completion_length",
    "num_generations",
    "num_iterations",
    "logging_steps",
    "steps_per_generation",
)
_FLOAT_FIELDS = ("beta", "epsilon", "epsilon_high", "learning_rate", "temperature")


def context_and_problems(args: dict[str, Any]) -> tuple[RunContext, list[str]]:
    """The context from an args dict, and one note per setting that is there but unusable
    (a length of 10**400, a beta of "high"): such a setting is unknown, and the user hears why."""
    problems: list[str] = []

    def unusable(name: str, value: Any) -> None:
        shown = repr(value)
        problems.append(
            f"{name} = {shown[:40] + '…' if len(shown) > 40 else shown} is not a usable number"
        )

    numbers: dict[str, Any] = {}
    for names, convert in ((_INT_FIELDS, _as_int), (_FLOAT_FIELDS, _as_float)):
        for name in names:
            value = args.get(name)
            numbers[name] = convert(value)
            if value is not None and numbers[name] is None:
                unusable(name, value)
    reward_funcs = args.get("reward_funcs") or []
    if isinstance(reward_funcs, str):
        reward_funcs = [reward_funcs]
    if not isinstance(reward_funcs, list):
        reward_funcs = []
    reward_weights = _weights(args.get("reward_weights"), unusable)
    max_steps = _as_int(args.get("max_steps"))
    model = args.get("model") or args.get("model_name_or_path")
    loss_type = args.get("loss_type")
    context = RunContext(
        model=str(model) if isinstance(model, (str, int, float)) and model else None,
        max_steps=max_steps if max_steps and max_steps > 0 else None,
        reward_funcs=[str(name) for name in reward_funcs if isinstance(name, (str, int, float))],
        reward_weights=reward_weights,
        loss_type=str(loss_type) if isinstance(loss_type, str) and loss_type else None,
        **numbers,
    )
    return context, problems


def _weights(value: Any, unusable: Callable[[str, Any], None]) -> list[float] | None:
    """`reward_weights` as floats: a list of numbers (one number is a list of one); None
    when not set, and when any weight is not a usable number (which weight belongs to which
    function is then not known)."""
    if value is None or value == []:
        return None
    items = value if isinstance(value, list) else [value]
    weights = [_as_float(item) for item in items]
    if any(weight is None for weight in weights):
        unusable("reward_weights", value)
        return None
    return [weight for weight in weights if weight is not None]


def read_json_document(path: Path) -> tuple[Any, bool]:
    """Parse a whole JSON file, accepting NaN/Infinity tokens and a byte order mark, and
    say whether bytes that are not UTF-8 had to be replaced (a key or value holding them
    is no longer what the file says). Only a regular file is opened (a FIFO would block).
    Raises OSError/ValueError."""
    data = read_regular(path).removeprefix(UTF8_BOM)
    document = parse_json(data)  # orjson takes only UTF-8: other bytes were replaced (U+FFFD)
    return document, b"\xef\xbf\xbd" not in data and "\ufffd" in data.decode("utf-8", "replace")


def read_yaml_config(path: Path) -> tuple[Any, bool]:
    """A YAML config (W&B's config.yaml) as plain data: W&B's `{key: {desc, value}}`
    entries as `{key: value}`, its own `_wandb` entry left out. Raises OSError/ValueError."""
    import yaml  # only a run kept by W&B needs it

    try:
        data = yaml.safe_load(read_regular(path).removeprefix(UTF8_BOM))
    except yaml.YAMLError as error:
        raise ValueError(f"not readable YAML ({str(error).splitlines()[0]})") from None
    if isinstance(data, dict) and any(isinstance(v, dict) and "value" in v for v in data.values()):
        data = {
            key: entry["value"] if isinstance(entry, dict) and "value" in entry else entry
            for key, entry in data.items()
            if key != "_wandb"
        }
    return data, False


def read_args_json(
    path: Path, mapper: Callable[[dict[str, Any]], dict[str, Any]] | None = None
) -> tuple[RunContext, list[str]]:
    """The context from an args file (JSON; W&B's config.yaml) and notes on what in it
    could not be used; `mapper` names a framework's own config keys as args.json's. Raises
    ArgsError (with a message for the user) when the file cannot be used at all."""
    yaml_file = path.suffix in (".yaml", ".yml")
    try:
        args, lossy = read_yaml_config(path) if yaml_file else read_json_document(path)
    except OSError as error:
        raise ArgsError(describe_os_error(error, path)) from None
    except ValueError as error:
        raise ArgsError(f"{path.name} is {error}") from None
    if not isinstance(args, dict):
        kind = "YAML" if yaml_file else "JSON"
        raise ArgsError(f"{path.name} holds a {kind} {_json_type(args)}, not an object")
    if mapper is not None:
        args = {**args, **mapper(args)}
    context, problems = context_and_problems(args)
    if lossy:
        problems.insert(
            0, "holds bytes that are not UTF-8 (shown as �): a setting named with them is lost"
        )
    return context, problems


def _json_type(value: Any) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), "null"
    )
