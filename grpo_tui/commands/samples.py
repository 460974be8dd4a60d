"""`grpo-tui samples PATH`: the completion groups of a run with no screen, for a person in a
shell or an agent (`--json`); the MCP server's `samples` tool is the same call.

The run is read once as `check` reads it (commands/headless.read_run: over ssh too), and
the groups are the completions pane's, chosen by views/sample_groups.py. Read-only.

Exit codes: 0 groups were read at the steps asked (none may match the selection: then
the answer says so); 3 no completions are logged (yet), or none at the steps asked (the
message names the file looked for, or the steps that are logged); 5 to 8 as `check`: PATH
cannot be read, or its machine cannot be asked.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from grpo_tui.commands.headless import read_run
from grpo_tui.commands.output import (
    EXIT_NOTHING,
    EXIT_UNREADABLE,
    machine_exit_code,
    print_renderable,
    say,
    write_json,
)
from grpo_tui.files import lexists
from grpo_tui.run.live import Run
from grpo_tui.sources.feed import SourceOptions
from grpo_tui.views.sample_groups import (
    SampleAnswer,
    SampleQuery,
    render_samples,
    samples_to_json,
    select_groups,
)


def read_samples(
    path: Path, query: SampleQuery, *, source: SourceOptions | None = None
) -> tuple[Run, SampleAnswer, int]:
    """The run at `path` read once, the groups `query` asks for, and the exit code."""
    run = read_run(path, options=source)
    answer = select_groups(run, query)
    code = samples_exit_code(run, answer)
    if code != EXIT_NOTHING and answer.problem is not None:
        # PATH itself cannot be read: that, not "no completions", is the answer
        problem = run.unreadable or (None if lexists(path) else f"{path} does not exist")
        answer = replace(answer, problem=problem or answer.problem)
    return run, answer, code


def samples_exit_code(run: Run, answer: SampleAnswer) -> int:
    """0 groups were read at the steps asked; 3 none there; 5 to 8 PATH or its machine
    cannot be read (module docstring)."""
    if answer.problem is None:
        return 0
    if (code := machine_exit_code(run.path)) is not None:
        return code
    if run.unreadable or not lexists(run.path):
        return EXIT_UNREADABLE
    return EXIT_NOTHING


def samples_document(
    path: Path, query: SampleQuery, *, source: SourceOptions | None = None
) -> tuple[dict[str, Any], int]:
    """`samples --json`'s object for the run at `path`, and the exit code."""
    run, answer, code = read_samples(path, query, source=source)
    return samples_to_json(run, answer), code


def samples_command(
    path: Path,
    query: SampleQuery,
    *,
    as_json: bool,
    source: SourceOptions | None = None,
    width: int | None = None,
    out: TextIO | None = None,
) -> int:
    """Print the groups `query` asks for (text or JSON); see `samples_exit_code`."""
    out = out or sys.stdout
    run, answer, code = read_samples(path, query, source=source)
    if as_json:
        write_json(out, samples_to_json(run, answer))
    else:
        width = width or shutil.get_terminal_size((100, 24)).columns
        shown = render_samples(run, answer, width, how_to_log=code == EXIT_NOTHING)
        print_renderable(shown, width=width, file=out)
    out.flush()
    if answer.problem is not None and as_json:
        say(answer.problem)  # the text form says it already
    return code
