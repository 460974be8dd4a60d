"""The canonical metrics as a pandas DataFrame: the hand-off to a notebook or a script.

One row per step (a train line and the eval line of the same step become one row; eval
metrics keep their `eval_` prefix), one column per canonical metric in the order the
store met them, NaN where a step did not log a metric. `samples/...` columns are the
statistics of the logged completions. pandas is imported here only, when asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from grpo_tui.run.metrics import MetricStore

if TYPE_CHECKING:
    import pandas as pd


def metrics_frame(store: MetricStore) -> pd.DataFrame:
    """Every metric of the store by step (see the module docstring)."""
    import pandas as pd

    names = store.names()
    frame = pd.DataFrame(
        {name: store.column(name) for name in names}, index=pd.Index(store.steps, name="step")
    )
    if frame.empty:
        return frame
    # train, eval and end lines of one step are one row; the latest value of a metric wins
    frame = frame.groupby(level="step", sort=True).last()
    frame.index = frame.index.astype("int64") if _whole(frame.index) else frame.index
    return frame


def _whole(index: pd.Index) -> bool:
    values = index.to_numpy()
    return bool(len(values)) and bool(((values % 1) == 0).all())
