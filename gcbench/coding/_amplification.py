"""How much a decoder amplifies errors in the messages it decodes (compression's, for one).

The decoded slice u is sum_i W[u, i] m_i; if every message carries an error e_i (compression, rounding), the
decoded gradient carries sum_i W[u, i] e_i. For independent errors of equal size eps, its expected size is
||W||_F eps: the Frobenius norm of the decoding weights is the factor. Uncoded decodes with every weight 1, so
its factor is sqrt(k); fractional repetition's weights are 0 or 1 (sqrt(k) too); a cyclic-MDS decoder's reach
far beyond. The report scans the straggler sets of size s as the conditioning report does (all of them, or a
seeded sample), decoding from the messages of the other n - s workers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gcbench.coding._conditioning import straggler_sets


@dataclass(frozen=True)
class AmplificationReport:
    """||W||_F over the straggler sets scanned: the worst, the mean, and uncoded's on the same n workers (its n
    messages of m slices summed: sqrt(n m)) to compare with."""

    worst: float
    mean: float
    uncoded: float
    sets_checked: int
    exhaustive: bool
    worst_stragglers: tuple[int, ...]
    # the decode's own error over the same sets: its residual ||W R - T||_F (0 for an exact scheme; 1.0 is one
    # partition's gradient left out of the sum), the worst with its stragglers, and the mean
    residual_worst: float = 0.0
    residual_mean: float = 0.0
    residual_stragglers: tuple[int, ...] = ()


def amplification_report(scheme: Any, limit: int = 2000) -> AmplificationReport:
    """The decoding weights' Frobenius norm over the straggler sets of size s (least squares where the scheme is
    approximate: its weights are what the master applies). ``scheme``: a Scheme (gcbench/coding/_base.py)."""
    sets, exhaustive = straggler_sets(scheme.n, scheme.tolerance, limit)
    norms, residuals = [], []
    for stragglers in sets:
        ids = [mid for w in range(scheme.n) if w not in stragglers for mid in scheme.messages(w)]
        decoding = scheme.decoding(ids) if scheme.exact else scheme.approximate_decoding(ids)
        norms.append(float(np.linalg.norm(decoding.weights)))
        residuals.append(0.0 if scheme.exact else float(decoding.residual))
    worst, worst_residual = int(np.argmax(norms)), int(np.argmax(residuals))
    return AmplificationReport(
        worst=norms[worst],
        mean=float(np.mean(norms)),
        uncoded=float(np.sqrt(scheme.n * scheme.m)),  # (not k: a multiplexed job has k > n partitions)
        sets_checked=len(sets),
        exhaustive=exhaustive,
        worst_stragglers=tuple(sets[worst]),
        residual_worst=residuals[worst_residual],
        residual_mean=float(np.mean(residuals)),
        residual_stragglers=tuple(sets[worst_residual]),
    )
