"""Results tables compared as the reproducibility promise says (docs/results.md, "Reproducible").

On one machine and BLAS kernel a seed gives the same tables bit for bit (and so do ``--jobs`` and ``--ray``):
``assert_tables_equal(a, b)`` compares every column exactly. A table computed on another machine (a golden
file) differs in the last bits of the kernel-dependent columns only (``KERNEL_DEPENDENT_COLUMNS`` in
gcbench/results/schema.py): ``assert_tables_equal(a, golden, decodes=...)`` compares those within the tolerance
derived below and every other column exactly.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from gcbench.results.schema import KERNEL_DEPENDENT_COLUMNS

EPS = float(np.finfo(np.float64).eps)
# LAPACK's SVD is backward stable (the exact SVD of rows + E, |E| <= c eps |rows|, c a low-order polynomial in the
# size), as is each BLAS product; 64 covers c and the products' terms for the decodes tests make (up to 12 rows):
# measured 3 ulp of the residual between OpenBLAS's SkylakeX, Haswell, Zen, Sandybridge and Prescott kernels.
RESIDUAL_ULPS = 64
# Beyond this many messages decodes_of does not enumerate every received set (2^12 SVDs, a few hundred ms).
EXHAUSTIVE_MESSAGES = 12


@dataclass(frozen=True)
class Decodes:
    """The worst decodes a table can hold: the largest condition number of a received set's kept singular values,
    and the largest target size m * k (T is m x m*k with m*k ones: its Frobenius norm is sqrt(m * k))."""

    condition: float
    size: int

    @property
    def residual_tolerance(self) -> float:
        """How far two kernels' residuals ||W R - T|| of one decode may differ (absolute).

        W R - T = -T (I - P), P the projector on the kept row space of R. Two backward-stable SVDs give projectors
        within about c eps condition of the exact one (Wedin), so the products differ by at most
        ||T||_F c eps condition = c eps condition sqrt(m k), and the norm (1-Lipschitz) by no more.
        """
        return RESIDUAL_ULPS * EPS * self.condition * math.sqrt(self.size)


def decodes_of(schemes: Iterable[Any]) -> Decodes:
    """The worst decodes of these schemes: every received set's condition number where a scheme sends at most
    ``EXHAUSTIVE_MESSAGES`` messages, else the truncated SVD's bound (it keeps no singular value below RANK_RTOL
    times the largest, so no decode is worse conditioned than 1 / RANK_RTOL)."""
    from gcbench.coding import RANK_RTOL

    condition, size = 1.0, 1
    for scheme in schemes:
        size = max(size, scheme.m * scheme.k)
        messages = len(scheme.rows)
        if messages > EXHAUSTIVE_MESSAGES:
            condition = max(condition, 1 / RANK_RTOL)
            continue
        for count in range(1, messages + 1):
            for received in itertools.combinations(range(messages), count):
                condition = max(condition, scheme.approximate_decoding(received).condition)
    return Decodes(condition, size)


def assert_tables_equal(actual: pd.DataFrame, expected: pd.DataFrame, decodes: Decodes | None = None) -> None:
    """The same columns, dtypes and rows; values bit for bit, except, when ``expected`` comes from another machine
    (``decodes`` given: the worst decodes the tables hold), the kernel-dependent columns within their tolerance."""
    assert list(actual.columns) == list(expected.columns), f"columns {list(actual.columns)} != {list(expected.columns)}"
    assert len(actual) == len(expected), f"{len(actual)} rows != {len(expected)}"
    pd.testing.assert_index_equal(actual.index, expected.index)
    for name in actual.columns:
        left, right = actual[name], expected[name]
        if decodes is None or name not in KERNEL_DEPENDENT_COLUMNS:
            pd.testing.assert_series_equal(left, right, check_exact=True, obj=f"column {name!r}")
            continue
        if name != "residual":
            raise ValueError(
                f"{name!r} comes from torch's kernels through training, where rounding differences grow: no tolerance "
                "across machines is promised; compare it on one machine (decodes=None)"
            )
        assert left.dtype == right.dtype, f"{name}: dtype {left.dtype} != {right.dtype}"
        np.testing.assert_allclose(
            left.to_numpy(), right.to_numpy(), rtol=0, atol=decodes.residual_tolerance, err_msg=name
        )
