"""What `pip install .` ships: every package of the source tree is listed in pyproject.toml
(setuptools takes the list as it is: a package left out is missing from the wheel, and the
tests, which import the source tree, would not notice)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project's own fallback (pyproject: tomli below 3.11)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_of_the_tree_is_in_the_wheel() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    in_tree = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "grpo_tui").rglob("__init__.py")
    }
    assert in_tree <= listed, sorted(in_tree - listed)
    mapped = config["tool"]["setuptools"]["package-dir"]
    assert all((ROOT / folder).is_dir() for folder in mapped.values())
