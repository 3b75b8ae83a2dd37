"""Condition numbers of a matrix with a few rows removed, for many removals at once.

For coefficient rows A (M x N) with thin SVD U S V^T, removing the rows in a set Q
leaves R with R^T R = V (S^2 - Z Z^T) V^T, where Z = S U[Q]^T (rank x q). The
extreme eigenvalues of S^2 - Z Z^T are found by bisection on an inertia count
(Haynsworth): the number of its eigenvalues below mu is the number of S^2 below mu
plus the number of negative eigenvalues of the q x q matrix
I - Z^T (S^2 - mu)^-1 Z. One eigendecomposition of A A^T then answers every set in
O(rank q^2) per bisection step, instead of an SVD of R per set.

The squared formulation loses what float64 cannot hold of the smallest eigenvalue:
an absolute error of about eps largest (sqrt(M) eps allowed), so estimates are trusted only up to
``reliable_up_to`` (the caller recomputes larger ones exactly), and a matrix whose own
rank is in doubt (an eigenvalue between rounding noise and ``KEEP_RTOL``) is not
handled here at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EPS = float(np.finfo(np.float64).eps)
KEEP_RTOL = 1e-11  # eigenvalues of A A^T above this times the largest count in A's rank
NOISE = 10.0  # eigenvalues below NOISE * M * eps * largest are rounding noise, not rank
STEPS = 36  # bisection steps: 2^-36 of the bracket (log-scale for the smallest eigenvalue)
SMALLEST_RATIO = 1e-16  # the smallest eigenvalue's bracket reaches this times the largest (condition 1e8)
CHUNK = 1 << 21  # floats of Z per batch of sets


@dataclass(frozen=True)
class Spectrum:
    """A's kept eigenvalues of A A^T (ascending), message i's row of Z in ``z[i]``, and the trust bound."""

    values: np.ndarray
    z: np.ndarray
    reliable_up_to: float

    @classmethod
    def of(cls, rows: np.ndarray) -> Spectrum | None:
        """The spectrum of ``rows``, or None when its rank is in doubt."""
        values, u = np.linalg.eigh(rows @ rows.T)
        top = float(values[-1])
        if top <= 0.0:
            return None
        noise = NOISE * len(values) * EPS * top
        keep = values > max(top * KEEP_RTOL, 10 * noise)
        if np.any((values > noise) & ~keep):
            return None
        # relative error of the smallest eigenvalue: about eps * condition^2 (measured: 2e-3 at 4.9e6, n = 100);
        # with a margin of sqrt(M), trusted while it stays below 1e-3
        reliable = float(np.sqrt(1e-3 / (np.sqrt(len(values)) * EPS)))
        return cls(values[keep], u[:, keep] * np.sqrt(values[keep]), reliable)

    def conditions(self, removed: np.ndarray) -> np.ndarray:
        """Condition number of A without the rows ``removed[k]`` (K x q), per k; inf where rank drops."""
        per_set = max(1, removed.shape[1] ** 2 * len(self.values))
        step = max(1, CHUNK // per_set)
        return np.concatenate([self._conditions(removed[a : a + step]) for a in range(0, len(removed), step)])

    def _conditions(self, removed: np.ndarray) -> np.ndarray:
        d = self.values
        q = removed.shape[1]
        schur = Schur(self.z[removed], d)
        smallest = _bisect(len(removed), np.log(d[-1] * SMALLEST_RATIO), np.log(d[0]), schur.any_below, log_scale=True)
        top_low = d[-1 - q] if len(d) > q else 0.0
        largest = _bisect(len(removed), top_low, d[-1], schur.none_above)
        with np.errstate(divide="ignore"):
            ratio = np.where(smallest > d[-1] * SMALLEST_RATIO * 2, largest / smallest, np.inf)
        return np.sqrt(ratio)


class Schur:
    """Inertia counts of D - Z Z^T for a batch of sets, from the q x q matrices I - Z^T (D - mu)^-1 Z."""

    def __init__(self, z: np.ndarray, d: np.ndarray) -> None:
        self.d = d
        self.q = z.shape[1]
        self.pairs = [(a, b) for a in range(self.q) for b in range(a, self.q)]
        # the products z_a z_b per eigenvalue, once: each step is then one weighted sum over the rank
        self.products = np.stack([z[:, a, :] * z[:, b, :] for a, b in self.pairs], axis=1)  # (K, pairs, rank)

    def any_below(self, mu: np.ndarray) -> np.ndarray:
        """Whether D - Z Z^T has an eigenvalue below mu (every mu below every d)."""
        return self._negatives(mu) >= 1

    def none_above(self, mu: np.ndarray) -> np.ndarray:
        """Whether D - Z Z^T has no eigenvalue above mu."""
        positives = self.q - self._negatives(mu)  # P(mu) is nonsingular but on a set of measure zero
        return np.sum(self.d[None, :] > mu[:, None], axis=1) + positives - self.q < 1

    def _negatives(self, mu: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # mu on an eigenvalue: measure zero
            inverse = 1.0 / (self.d[None, :] - mu[:, None])
            sums = np.einsum("kpj,kj->kp", self.products, inverse)
            p = np.zeros((len(mu), self.q, self.q))
            for index, (a, b) in enumerate(self.pairs):
                p[:, a, b] = p[:, b, a] = (a == b) - sums[:, index]
            return _negative_eigenvalues(np.nan_to_num(p, nan=1.0))


def _negative_eigenvalues(p: np.ndarray) -> np.ndarray:
    """How many eigenvalues of each symmetric q x q matrix are negative (closed forms for q <= 2)."""
    if p.shape[1] == 1:
        return (p[:, 0, 0] < 0).astype(np.int64)
    if p.shape[1] == 2:
        det = p[:, 0, 0] * p[:, 1, 1] - p[:, 0, 1] ** 2
        trace = p[:, 0, 0] + p[:, 1, 1]
        return np.where(det < 0, 1, np.where(trace < 0, 2, 0))
    return np.sum(np.linalg.eigvalsh(p) < 0.0, axis=1)


def _bisect(count: int, low: float, high: float, turned_at, log_scale: bool = False) -> np.ndarray:
    """Per set, the point in [low, high] where ``turned_at(mu)`` turns from False to True."""
    if high <= low:  # a degenerate bracket (equal eigenvalues): the interlacing bound is the answer
        return np.full(count, np.exp(high) if log_scale else high)
    lo, hi = np.full(count, low), np.full(count, high)
    for _ in range(STEPS):
        mid = (lo + hi) / 2
        turned = turned_at(np.exp(mid) if log_scale else mid)
        hi = np.where(turned, mid, hi)
        lo = np.where(turned, lo, mid)
    mid = (lo + hi) / 2
    return np.exp(mid) if log_scale else mid
