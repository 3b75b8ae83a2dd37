"""The decoder's linear algebra: weights from coefficient rows, in float64.

A received set of r messages has coefficient rows R (r x m*k). The targets T
(m x m*k) are "slice u summed over all partitions". Decoding solves W R = T by
the pseudo-inverse, so W is the minimum-norm solution when the set decodes and
the least-squares estimate, with its residual, when it does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Singular values below RANK_RTOL * largest count as zero.
RANK_RTOL = 1e-10
# A target counts as reached when its residual is below this, relative to its norm.
EXACT_RTOL = 1e-8


@dataclass(frozen=True)
class Decoding:
    """How to combine one set of received messages into the full gradient.

    weights[u, i] multiplies message ``message_ids[i]`` to form slice u.
    ``error_coefficients`` = W R - T: the decoded slice u equals the true one plus
    sum_j error_coefficients[u, (v, j)] * g_j^(v), so the error is always known.
    """

    message_ids: tuple[int, ...]
    weights: np.ndarray
    exact: bool
    error_coefficients: np.ndarray
    gain: float
    condition: float

    @property
    def residual(self) -> float:
        """Frobenius norm of W R - T (0 for an exact decode, up to rounding)."""
        return float(np.linalg.norm(self.error_coefficients))


def targets(m: int, k: int) -> np.ndarray:
    """T: row u has ones on slice u of every partition."""
    return np.kron(np.eye(m), np.ones((1, k)))


def condition_number(rows: np.ndarray) -> float:
    """Largest over smallest nonzero singular value of the received rows."""
    if rows.size == 0:
        return float("inf")
    sv = np.linalg.svd(rows, compute_uv=False)
    if sv[0] == 0.0 or sv[0] == 0.0:
        return float("inf")
    kept = sv[sv > sv[0] * RANK_RTOL]
    return float(kept[0] / kept[-1])


def least_squares_weights(rows: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, float]:
    """Minimum-norm W minimising ||W rows - target|| (truncated SVD), and the condition number."""
    u, sv, vt = np.linalg.svd(rows, full_matrices=False)
    keep = sv > sv[0] * RANK_RTOL
    u, sv, vt = u[:, keep], sv[keep], vt[keep]
    return ((target @ vt.T) / sv) @ u.T, float(sv[0] / sv[-1])


def make_decoding(
    ids: tuple[int, ...], rows: np.ndarray, target: np.ndarray, weights: np.ndarray, condition: float | None = None
) -> Decoding:
    """Package weights with their residual, condition number (computed if not given) and error gain."""
    error = weights @ rows - target
    per_target = np.linalg.norm(error, axis=1) / np.linalg.norm(target, axis=1)
    # gain bounds how much rounding in the messages can grow in the decoded slices
    gain = float((np.abs(weights) @ np.abs(rows)).max()) if rows.size else 0.0
    return Decoding(
        message_ids=ids,
        weights=weights,
        exact=bool(per_target.max() <= EXACT_RTOL),
        error_coefficients=error,
        gain=gain,
        condition=condition_number(rows) if condition is None else condition,
    )
