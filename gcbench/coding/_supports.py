"""Layouts from supports: each worker sends one weighted sum of the partitions it holds.

Most approximate and stochastic codes are of this form (the assignment is the
code); only the decoder differs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gcbench.coding._base import Layout


def support_layout(k: int, supports: Sequence[Sequence[int]], value: float = 1.0) -> Layout:
    """Worker i holds ``supports[i]`` (in that order) and sends ``value`` times the sum of those gradients."""
    coefficients = []
    for support in supports:
        row = np.zeros((1, k))
        row[0, list(support)] = value
        coefficients.append((row,))
    return Layout(tuple(tuple(int(j) for j in support) for support in supports), tuple(coefficients))
