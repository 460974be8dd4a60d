"""Fixtures shared by test modules: a real sshd on 127.0.0.1 for the remote-run tests.

`sshd` starts Debian's OpenSSH server (/usr/sbin/sshd; `.ci/run` installs it) as an
ordinary process of this session: a free port on 127.0.0.1, a host key and a client key
made for the session, its own sshd_config (the authorized keys, pid file and everything
else in a temp folder), and a client config that pins the host key. Nothing touches
~/.ssh or a system sshd. The tests hand the client config to grpo-tui as the user would,
through GRPO_TUI_SSH (`ssh -F CONFIG`). Every host name reaches this sshd (`Host *`), so a
test that breaks its connection uses a name of its own (its own shared connection).

As root, the remote session drops the capabilities that let root read any file
(setpriv), so a mode-000 file is "permission denied" there as it is for a user.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import SSHD, SshServer, start_sshd

from grpo_tui.health.rules import RULES_ENV


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (the default, pyproject.toml): two workers per core. Much of the suite
    waits rather than computes (a pilot for its screen, a pty, sshd, a file event), so a
    core has room for a second worker: on 2 cores the suite took 152 s with 4 workers,
    162 s with 3 and 188 s with 2. PYTEST_XDIST_AUTO_NUM_WORKERS still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return 2 * len(os.sched_getaffinity(0))


#: the long tests, left out of the quick subset (`pytest -m "not slow"`, the README's
#: development loop): whole modules, and single tests, each with why it is long
SLOW_MODULES = {
    "test_one_story.py": "every corpus run and simulated scenario at several cuts",
    "test_bench_diagnosis.py": "the labelled runs and simulated runs judged live",
    "test_remote.py": "a real sshd",
    "test_remote_lifecycle.py": "a real sshd, a silent host, ssh timeouts",
    "test_terminal_gone.py": "a real terminal closed under the app",
    "test_ui_snapshots.py": "SVG snapshots",
    "test_detail_snapshots.py": "SVG snapshots",
    "test_distribution_snapshots.py": "SVG snapshots",
    "test_board_snapshots.py": "SVG snapshots",
    "test_one_judgement.py": "every corpus run and simulated scenario",
    "test_mcp.py": "a real `grpo-tui mcp` per test, driven by the mcp client; a run followed live",
    # the Textual pilot modules: a real app per test (the full suite and CI run them)
    "test_ui_completions.py": "Textual pilots",
    "test_ui_app.py": "Textual pilots",
    "test_ui_board.py": "Textual pilots",
    "test_ui_detail.py": "Textual pilots",
    "test_ui_distribution.py": "Textual pilots",
    "test_ui_steady.py": "Textual pilots",
}
SLOW_TESTS = {
    "test_the_header_says_permission_denied": "waits for a read that is refused",
    "test_the_checklist_gives_a_metric_the_zone_the_grid_gives_it": "every corpus run",
    "test_every_corpus_run_fits_80_columns_with_its_verdict_first": "every corpus run",
    "test_a_million_rows_are_diagnosed": "a million rows",
    "test_a_resize_storm_while_paused_lets_no_batch_slip": "a resize storm",
    "test_every_line_reads_as_if_alone": "hypothesis over every line",
    "test_every_corpus_run": "every corpus run",
    "test_every_corpus_run_s_names_stay_apart_at_the_grid_widths": "every corpus run",
    "test_every_corpus_run_keeps_its_names_apart": "every corpus run",
    "test_each_simulated_scenario_is_named": "every simulated scenario",
    "test_no_verdict_is_told": "every healthy corpus run",
    "test_every_pane_shows_the_verdict_line": "a real app per pane",
    "test_a_run_going_wrong": "a real app, live",
    "test_every_pane_of_the_live_monitor_is_inert": "a real app per pane",
    "test_remote_samples_are_local_samples": "a real sshd",
    "test_same_setting_seeds_are_rarely_called_apart": "48 simulated runs",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the long tests `slow` (SLOW_MODULES, SLOW_TESTS)."""
    for item in items:
        name = getattr(item, "originalname", item.name)
        if item.path.name in SLOW_MODULES or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """A real sshd for the session (the test is skipped when none is installed)."""
    if not SSHD.exists() or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        pytest.skip("no OpenSSH server here (/usr/sbin/sshd: apt-get install openssh-server)")
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture
def no_user_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither GRPO_TUI_RULES nor a rules file in the user's config folder: the tests judge
    with the default rules whatever the machine has set."""
    monkeypatch.delenv(RULES_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
