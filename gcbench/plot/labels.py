"""Axis labels, titles and legends shared by the figures."""

from __future__ import annotations

import numpy as np
import pandas as pd

UNITS = {"slowdown": "×", "delay": "s", "latency": "s", "bandwidth": "bytes/s", "rate": "1/s", "downtime": "s"}


def is_number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def parameter_label(column: str) -> str:
    """A swept path with its unit, e.g. 'straggling.delay (s)'."""
    unit = UNITS.get(column.rsplit(".", 1)[-1])
    return f"{column} ({unit})" if unit else column


def sweep_values(data: pd.DataFrame) -> str:
    """The sweep point of rows from one point: 'straggling.slowdown = 24' ('' without a sweep)."""
    sweep = [c for c in data.columns if "." in c]
    value = {c: data[c].iloc[0] for c in sweep}
    return ", ".join(f"{c} = {v:g}" if is_number(v) else f"{c} = {v}" for c, v in value.items())


def point_title(data: pd.DataFrame, what: str) -> str:
    values = sweep_values(data)
    return f"{what}{f' ({values})' if values else ''}"


def legend(ax, **kwargs) -> None:
    ax.legend(frameon=False, **kwargs)


def legend_below(ax, fontsize: int = 6) -> None:
    """Legend under the axes, in two columns, so it never hides a curve."""
    ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=fontsize)
