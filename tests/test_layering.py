"""Core (everything but grpo_tui.ui and the tail command) runs without Textual.

The import contracts themselves (layers and their direction, no Textual in core, views
that parse no file, health that reads no file) are import-linter's, in pyproject.toml, run
by .ci/run; this checks the same at run time: importing core loads no Textual module.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "grpo_tui"
UI_PARTS = {"ui"}
UI_MODULES = {"commands/tail.py"}


def _core_modules() -> list[Path]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in UI_PARTS or rel.as_posix() in UI_MODULES:
            continue
        modules.append(path)
    return modules


def test_importing_core_does_not_load_textual() -> None:
    modules = [
        "grpo_tui." + p.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", ".")
        for p in _core_modules()
        if p.name != "__init__.py"
    ]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}:\n"
        "    importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_framework_names_live_in_adapters_only() -> None:
    """A new framework is a new adapter: no `if framework == ...` outside sources/formats."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("sources/formats/"):
            continue
        text = path.read_text(encoding="utf-8")
        for needle in ('framework == "', "framework == '", 'adapter.name == "'):
            if needle in text:
                offenders.append(rel)
    assert offenders == []
