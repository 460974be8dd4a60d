"""A run's checkpoints listed over ssh, as they are listed locally (a real sshd: slow)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import CORPUS, SshServer

from grpo_tui.health.diagnose import diagnose
from grpo_tui.health.rules import Rules
from grpo_tui.run.follow import load_run
from grpo_tui.sources.remote import run_path, set_ssh_command

pytestmark = pytest.mark.slow


@pytest.fixture
def remote(sshd: SshServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[SshServer]:
    """The test sshd, reached as the user would: GRPO_TUI_SSH="ssh -F CONFIG"."""
    monkeypatch.setenv("GRPO_TUI_SSH", sshd.ssh_command)
    yield sshd
    set_ssh_command(None)


class TestRemoteListing:
    """Checkpoints over ssh go through the same file-system seam as a local run's."""

    def test_remote_listing_and_advice_match_local(self, remote: SshServer, tmp_path: Path) -> None:
        """The minesweeper run with two checkpoints deleted: the same folders, schedule and
        advice read on the far side as here."""
        run = tmp_path / "run"
        shutil.copytree(CORPUS / "aaipl-minesweeper-trl", run)
        for step in (100, 200):
            shutil.rmtree(run / f"checkpoint-{step}")
        local = load_run(run)
        far = load_run(run_path(f"ckpthost:{run}"))
        assert local.checkpoints is not None and far.checkpoints is not None
        assert far.checkpoints.steps == local.checkpoints.steps == (300, 400, 500)
        assert far.checkpoints.save_steps == local.checkpoints.save_steps == 100
        near_advice = diagnose(local, Rules()).checkpoints
        far_advice = diagnose(far, Rules()).checkpoints
        assert near_advice is not None and far_advice is not None
        assert far_advice.headline == near_advice.headline
        assert far_advice.gone == (100, 200)
        # the last before the reward hacking (200) is gone; the folders on disk are named
        # by the far side's path
        assert far_advice.go_back == near_advice.go_back
        assert far_advice.go_back is not None and not far_advice.go_back.on_disk
        assert tuple(c.path for c in far.checkpoints.kept) == tuple(
            f"ckpthost:{run}/checkpoint-{step}" for step in (300, 400, 500)
        )
