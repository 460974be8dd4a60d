"""A JSON document rewritten whole (trainer_state.json), polled as a record store."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from grpo_tui.sources.document import DocumentStore
from grpo_tui.sources.formats.trl import log_history


def write_state(path: Path, steps: list[int], **settings: Any) -> Path:
    """A trainer_state.json whose log_history logs a loss at each step."""
    history = [{"loss": 0.5, "step": step} for step in steps]
    path.write_text(json.dumps({**settings, "log_history": history}))
    stamp = path.stat().st_mtime + len(steps)  # a rewrite always shows in the mtime
    os.utime(path, (stamp, stamp))
    return path


class TestDocumentStore:
    """Each poll hands out the log records new since the last read, once each."""

    def test_new_records_once(self, tmp_path: Path) -> None:
        """A rewrite hands out only the records it added; an unchanged one nothing."""
        path = write_state(tmp_path / "trainer_state.json", [1, 2], max_steps=9)
        store = DocumentStore(path, log_history)
        first = store.poll()
        assert [r["step"] for r in first.records] == [1, 2]
        assert first.settings is not None and first.settings["max_steps"] == 9
        assert first.data_time == path.stat().st_mtime
        unchanged = store.poll()
        assert unchanged.records == [] and unchanged.settings is None
        write_state(path, [1, 2, 3])
        assert [r["step"] for r in store.poll().records] == [3]

    def test_a_newer_checkpoint_goes_on(self, tmp_path: Path) -> None:
        """A store that follows another starts after the last record that one took."""
        old = DocumentStore(write_state(tmp_path / "a.json", [1, 2]), log_history)
        old.poll()
        newer = DocumentStore(
            write_state(tmp_path / "b.json", [1, 2, 3, 4]), log_history, after=old
        )
        assert [r["step"] for r in newer.poll().records] == [3, 4]

    def test_said_not_raised(self, tmp_path: Path) -> None:
        """A document being written is said once; one without records says so."""
        path = tmp_path / "trainer_state.json"
        path.write_text('{"log_history": [')
        store = DocumentStore(path, log_history)
        said = store.poll()
        assert said.records == [] and said.problem is None
        assert [e.split(":")[0] for e in said.events] == ["trainer_state.json unreadable for now"]
        os.utime(path, (1, 1))
        assert store.poll().events == []
        path.write_text('{"global_step": 3}')
        assert store.poll().events == ["trainer_state.json holds no log records"]
        assert DocumentStore(tmp_path / "gone.json", log_history).poll().records == []
