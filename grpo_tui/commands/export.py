"""`grpo-tui export PATH -o FILE`: the canonical metrics as CSV or Parquet.

The same table as `grpo_tui.load_run(PATH).to_pandas()`: one row per step, one column per
canonical metric. The file goes where the user says, never into the run directory
(grpo-tui writes nothing there); `-o -` writes CSV to stdout.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from grpo_tui.commands.headless import read_run
from grpo_tui.commands.output import EXIT_NOTHING, EXIT_UNREADABLE, EXIT_USAGE, say
from grpo_tui.sources.feed import SourceOptions
from grpo_tui.untrusted import printable

FORMATS = ("csv", "parquet")


def export_format(output: str, chosen: str | None) -> str | None:
    """The format asked for, else the output's suffix; None when neither says."""
    if chosen is not None:
        return chosen
    if output == "-":
        return "csv"
    suffix = Path(output).suffix.lower().lstrip(".")
    return suffix if suffix in FORMATS else None


def _inside(target: Path, folder: Path) -> bool:
    try:
        target.resolve().relative_to(folder.resolve())
    except (ValueError, OSError):
        return False
    return True


def export_command(
    path: Path, output: str, chosen: str | None, source: SourceOptions | None = None
) -> int:
    kind = export_format(output, chosen)
    if kind is None:
        say(f"say --format csv or parquet (or end {printable(output)} in .csv / .parquet)")
        return EXIT_USAGE
    try:
        run_folder = path if path.is_dir() else path.parent
    except OSError:  # a folder this process may not enter: reading it says so below
        run_folder = path.parent
    if output != "-" and _inside(Path(output), run_folder):
        say(
            f"{printable(output)} is inside the run directory: grpo-tui never writes there; "
            "choose a path outside it"
        )
        return EXIT_USAGE
    if kind == "parquet" and importlib.util.find_spec("pyarrow") is None:
        # pandas writes parquet through pyarrow, an optional extra
        say("parquet needs pyarrow: pip install 'grpo-tui[parquet]' (or export --format csv)")
        return EXIT_USAGE
    run = read_run(path, options=source)
    if len(run.store) == 0:
        if run.unreadable:
            say(printable(run.unreadable))
            return EXIT_UNREADABLE
        say(f"no metric lines in {printable(str(path))} yet: nothing to export")
        return EXIT_NOTHING
    frame = run.to_pandas()
    if output == "-":
        frame.to_csv(sys.stdout)
    elif kind == "csv":
        frame.to_csv(output)
    else:
        frame.to_parquet(output)
    if output != "-":
        say(f"{len(frame)} steps × {len(frame.columns)} metrics → {printable(output)}")
    return 0
