"""`grpo-tui mcp` driven by the `mcp` package's own client (mcp.client.stdio + ClientSession),
the server spawned as a subprocess as an agent's client spawns it: initialize, list the
tools, call each on real runs and check what it says against the commands' own `--json`
on the same path; `watch_events` follows a run appended to across calls."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    CORPUS,
    HOSTILE,
    THREE_REWARDS,
    THREE_REWARDS_ARGS,
    hostile_run,
    leaks,
    msswift_run_dir,
    simulated_run,
)
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from grpo_tui.cli import main
from grpo_tui.commands.compare import compare_document
from grpo_tui.commands.mcp_server import DATA_NOT_INSTRUCTIONS
from grpo_tui.commands.output import EXIT_USAGE
from grpo_tui.health.rules import RULES_ENV, Rules

#: a finished TRL run of the corpus: unstable, then truncated
COLLAPSE = CORPUS / "trl-qwen7b-gsm8k-lr1e-4-collapse"
#: two seeds of one setting (the corpus' gsm8k vanilla pair)
SEEDS = (CORPUS / "trl-qwen7b-gsm8k-vanilla", CORPUS / "trl-qwen7b-gsm8k-vanilla-s43")
TOOLS = {"check", "samples", "compare", "watch_events"}
#: a simulated run that blows up mid-run, logged every 4 steps: its first 6 lines are too
#: early to say anything (no event), the whole of its 30 a problem
WATCHED = "blow_up"
WATCHED_STEPS = 120
HEALTHY_LINES = 6
#: the fields of check --json that move with the clock
AGES = ("data_age_s", "log_age_s")


def _command() -> list[str]:
    """`grpo-tui` as installed beside this interpreter (else the module)."""
    script = shutil.which("grpo-tui", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "grpo_tui"]


@pytest.fixture
def environment(tmp_path: Path) -> dict[str, str]:
    """The server's and the commands' environment: no user rules."""
    env = {k: v for k, v in os.environ.items() if k != RULES_ENV}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "no-config")
    return env


@asynccontextmanager
async def served(env: dict[str, str]) -> AsyncIterator[ClientSession]:
    """A session with a fresh `grpo-tui mcp`, initialized."""
    command = _command()
    params = StdioServerParameters(command=command[0], args=[*command[1:], "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _text(result: Any) -> str:
    """The one text block a tool answers with."""
    assert not _is_error(result), result
    assert len(result.content) == 1
    return _any_text(result)


def _any_text(result: Any) -> str:
    """The text of a result, an error's too."""
    text: str = result.content[0].text
    return text


def _is_error(result: Any) -> bool:
    # mcp 2 names it is_error, mcp 1 isError
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def _command_json(args: list[str], env: dict[str, str]) -> tuple[Any, int]:
    """What `grpo-tui ARGS` prints, parsed, and its exit code."""
    done = subprocess.run(
        [*_command(), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return json.loads(done.stdout), done.returncode


def _without_ages(document: dict[str, Any]) -> dict[str, Any]:
    for age in AGES:
        document["run"].pop(age)
    return document


class TestTools:
    """Each tool on real runs, against the command line's JSON."""

    async def test_initialize_and_list_the_tools(self, environment: dict[str, str]) -> None:
        """Four tools, each read-only, each saying its results are data."""
        async with served(environment) as session:
            listed = await session.list_tools()
        assert {tool.name for tool in listed.tools} == TOOLS
        for tool in listed.tools:
            assert tool.description is not None
            assert tool.description.endswith(DATA_NOT_INSTRUCTIONS)
            assert tool.annotations is not None
            hints = tool.annotations.model_dump(by_alias=True)
            assert (hints["readOnlyHint"], hints["destructiveHint"]) == (True, False)

    async def test_check_is_check_json(self, environment: dict[str, str]) -> None:
        """`check` and `check` with `since` give the commands' objects on a corpus run."""
        async with served(environment) as session:
            whole = json.loads(_text(await session.call_tool("check", {"path": str(COLLAPSE)})))
            since = json.loads(
                _text(await session.call_tool("check", {"path": str(COLLAPSE), "since": 100}))
            )
        printed, code = _command_json(["check", str(COLLAPSE), "--json"], environment)
        assert code == 2
        assert _without_ages(whole) == _without_ages(printed)
        printed, _ = _command_json(
            ["check", str(COLLAPSE), "--since", "100", "--json"], environment
        )
        assert _without_ages(since) == _without_ages(printed)
        assert since["since"]["step"] == 100

    async def test_samples_is_samples_json(
        self, tmp_path: Path, environment: dict[str, str]
    ) -> None:
        """`samples` on the ms-swift 4.6.0 run with completions, and on a corpus run with none."""
        run = msswift_run_dir(tmp_path, THREE_REWARDS, THREE_REWARDS_ARGS, completions=True)
        asked = {"path": str(run), "since": 1, "groups": "worst", "limit": 3, "max_chars": 100}
        async with served(environment) as session:
            got = json.loads(_text(await session.call_tool("samples", asked)))
            none = json.loads(_text(await session.call_tool("samples", {"path": str(COLLAPSE)})))
            refused = await session.call_tool("samples", {"path": str(run), "groups": "best"})
        printed, code = _command_json(
            ["samples", str(run), "--since", "1", "--limit", "3", "--max-chars", "100", "--json"],
            environment,
        )
        assert (got, code) == (printed, 0)
        assert (got["matched"], got["shown"]) == (10, 3)
        means = [group["mean_total"] for group in got["groups"]]
        assert means == sorted(means)
        assert none["groups"] == []
        assert none["problem"].startswith("no completions logged")
        assert _is_error(refused)

    async def test_compare_is_compare_document(self, environment: dict[str, str]) -> None:
        """`compare` on two seeds of one setting: compare_document's object."""
        paths = [str(path) for path in SEEDS]
        async with served(environment) as session:
            got = json.loads(_text(await session.call_tool("compare", {"paths": paths})))
        assert got == json.loads(json.dumps(compare_document(paths, Rules())))

    async def test_a_folder_of_runs_is_an_error_naming_them(
        self, tmp_path: Path, environment: dict[str, str]
    ) -> None:
        """A folder holding two runs: `check` asks for one and names both."""
        folder = tmp_path / "runs"
        folder.mkdir()
        for name, seed in zip("ab", SEEDS, strict=True):
            (folder / name).symlink_to(seed, target_is_directory=True)
        async with served(environment) as session:
            result = await session.call_tool("check", {"path": str(folder)})
        assert _is_error(result)
        said = _any_text(result)
        assert f"holds 2 runs; ask about one: {folder / 'a'}, {folder / 'b'}" in said

    async def test_hostile_text_stays_inert_and_whole(
        self, tmp_path: Path, environment: dict[str, str]
    ) -> None:
        """Escape sequences in completions come back as \\u escapes, whole once parsed."""
        run = hostile_run(tmp_path)
        asked = {"path": str(run), "groups": "all", "limit": 0, "max_chars": 0, "since": -1}
        async with served(environment) as session:
            text = _text(await session.call_tool("samples", asked))
        assert leaks(text) == []
        texts = {s["text"] for g in json.loads(text)["groups"] for s in g["completions"]}
        assert f"<think>{HOSTILE['osc52_clipboard']}</think>" in "".join(texts)


class TestWatchEvents:
    """`watch_events` follows a run across calls, from a cursor."""

    async def test_a_run_appended_to(self, tmp_path: Path, environment: dict[str, str]) -> None:
        """A simulated run that goes wrong, its log written in two parts: nothing to tell
        while it is healthy, then the event once the rest is appended; the cursor hands
        each event out once."""
        source = simulated_run(WATCHED, 0, WATCHED_STEPS)
        run = tmp_path / "run"
        shutil.copytree(source, run)
        (run / "completions.jsonl").unlink()  # only the log is followed here
        log = run / "logging.jsonl"
        lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
        log.write_text("".join(lines[:HEALTHY_LINES]), encoding="utf-8")
        asked: dict[str, Any] = {"paths": [str(run)], "timeout_s": 3}
        async with served(environment) as session:
            first = json.loads(_text(await session.call_tool("watch_events", asked)))
            assert (first["started"], first["events"], first["missed"]) == (True, [], 0)
            with log.open("a", encoding="utf-8") as appended:
                appended.write("".join(lines[HEALTHY_LINES:]))
            asked |= {"cursor": first["cursor"], "timeout_s": 60}
            second = json.loads(_text(await session.call_tool("watch_events", asked)))
            asked |= {"cursor": second["cursor"], "timeout_s": 1}
            third = json.loads(_text(await session.call_tool("watch_events", asked)))
            asked |= {"cursor": "elsewhere:3", "timeout_s": 0}
            again = json.loads(_text(await session.call_tool("watch_events", asked)))
        assert second["started"] is False
        assert [event["event"] for event in second["events"]][:1] == ["worse"]
        assert second["events"][0]["path"] == str(run)
        assert second["events"][0]["status"] in ("caution", "problem")
        assert (third["events"], third["cursor"]) == ([], second["cursor"])
        assert again["cursor_reset"] is True
        assert again["events"] == second["events"]


class TestWithoutThePackage:
    """grpo-tui works without the extra; `grpo-tui mcp` says what to install."""

    def test_the_install_line_is_said(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` raises ImportError
        assert main(["mcp"]) == EXIT_USAGE
        assert capsys.readouterr().err == (
            "grpo-tui: the MCP server needs the mcp package: pip install 'grpo-tui[mcp]'\n"
        )

    def test_the_other_commands_never_import_it(self) -> None:
        """`check` and `samples` run in a process where mcp cannot be imported."""
        code = (
            "import sys; sys.modules['mcp'] = None; from grpo_tui.cli import main; "
            f"sys.exit(main(['samples', {str(COLLAPSE)!r}, '--json']))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 3
        assert json.loads(done.stdout)["groups"] == []
