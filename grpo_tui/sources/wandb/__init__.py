"""W&B run files (`wandb/run-*/run-<id>.wandb`): read live, record by record.

- framing.py: the file's LevelDB-log framing, up to the last complete record, past damage;
- schema.py: the Record messages decoded (a subset of W&B's schema, on protobuf);
- store.py: the record store the feed polls: history rows under the trainer's key names,
  the config's settings, the end of the run.

Why this reads the file itself rather than through the `wandb` package (issue 44). W&B's
Python reader, `wandb/sdk/internal/datastore.py` (`DataStore.scan_data`), is what the
trainers' notes point at, but:
- the `wandb` wheel pip installs here (0.31.0) no longer ships it: reading moved into
  wandb-core, a Go binary (`core/internal/transactionlog`), with no Python API;
- where it shipped, it opens the file `r+b` (for writing: it fails on a run folder this
  user may only read, and grpo-tui never opens a run's files for writing), stops with an
  AssertionError at the first damaged chunk, and asserts on a chunk cut by the file's end,
  the normal state of a file being written; it cannot resume a growing file;
- `pip install wandb` is ~100 MB here (a 34 MB Go binary, OpenTelemetry, pydantic), and
  importing its Record classes imports `wandb` (0.4 s before the first row);
- its Record classes come per protobuf major version (v5/v6/v7 folders): a protobuf the
  wheel does not know is an ImportError.
The framing is ~200 lines (framing.py) following wandb-core's own reader; the records
are decoded by protobuf's compiled parser from a descriptor built at run time (schema.py,
any protobuf ≥ 4.21: the `grpo-tui[wandb]` extra). The tests write their files with the
real `wandb` library (offline), so a change in W&B's format shows there.
"""
