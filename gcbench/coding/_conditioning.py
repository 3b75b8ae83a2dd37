"""Worst decoding condition number over the straggler sets a scheme claims.

A set that does not decode (numerically rank deficient) counts as infinite.
Every set of exactly s stragglers is checked when there are at most ``limit``
of them; otherwise the cyclically contiguous sets (the hard ones for cyclic supports)
plus a seeded random sample, and the report says so.

One SVD per set made this the cost of building a scheme (CR at n = 100, s = 2: 2,000 SVDs of
98 x 100, seconds; at n = 1000 each SVD takes half a second). Losing s workers' messages is a rank-q
downdate of the Gram matrix A^T A of all coefficient rows A, so one eigendecomposition of A A^T
gives every set's extreme singular values by bisection on an inertia count (``_downdate.py``):
O(sets * rank * q^2) per step, all sets at once. Sets whose estimate is large enough for the
squared formulation's rounding to matter, or that lose rank, are recomputed by the exact SVD
(``Scheme._solve``); a trusted estimate is within 1e-3 of the SVD's (1e-8 in the tests' cases).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from gcbench.coding._downdate import STEPS, Spectrum
from gcbench.coding._linear import Decoding
from gcbench.coding._threads import on_one_blas_thread

_REPORTS: dict[str, ConditionReport] = {}
_SPECTRA: dict[int, tuple[Code, Spectrum | None]] = {}
BUDGET = 3e8  # multiply-adds a bounded check may spend on the bisections (about a second of numpy)


class Code(Protocol):
    """What the check reads of a scheme (a ``Scheme``, coding/_base.py, which calls it): its coefficient rows,
    which worker sends each, and the exact solve of a received set."""

    n: int
    s: int
    rows: np.ndarray
    message_owner: np.ndarray

    @property
    def messages_per_worker(self) -> int: ...

    def messages(self, worker: int) -> tuple[int, ...]: ...

    def _solve(self, key: tuple[int, ...]) -> Decoding | None: ...


@dataclass(frozen=True)
class ConditionReport:
    worst: float
    sets_checked: int
    exhaustive: bool
    worst_stragglers: tuple[int, ...]


def straggler_sets(n: int, s: int, limit: int) -> tuple[list[tuple[int, ...]], bool]:
    """All s-subsets of range(n) if there are at most ``limit``, else a deterministic sample."""
    if math.comb(n, s) <= limit:
        return list(itertools.combinations(range(n), s)), True
    rng = np.random.default_rng(0)
    starts = np.linspace(0, n, num=min(n, limit), endpoint=False).astype(int)
    sets = {tuple(sorted((int(a) + t) % n for t in range(s))) for a in starts}
    while len(sets) < limit:
        sets.add(tuple(sorted(rng.choice(n, size=s, replace=False).tolist())))
    return sorted(sets), False


@on_one_blas_thread
def condition_report(scheme: Code, limit: int | None, stop_above: float = float("inf")) -> ConditionReport:
    """Worst condition number of the received rows when exactly s workers straggle.

    ``limit``: the most sets to check (None: as many as ``BUDGET`` allows). ``stop_above``: end the
    scan at the first set whose condition number exceeds it (a refusal needs one such set, not the
    worst). Cached per scheme parameters (the scheme's repr: name, n, s and its parameters, m and
    seed included), limit and stop.
    """
    key = f"{type(scheme).__name__}:{scheme!r}:{limit}:{stop_above}"
    if key not in _REPORTS:
        sets, exhaustive = straggler_sets(scheme.n, scheme.tolerance, _limit(scheme) if limit is None else limit)
        _REPORTS[key] = _scan(scheme, sets, exhaustive, stop_above)
    return _REPORTS[key]


def _limit(scheme: Code) -> int:
    """How many straggler sets a bounded check looks at: about BUDGET operations (a second or less)."""
    if _spectrum(scheme) is None:  # one SVD of about n x n per set
        return int(np.clip(4e9 / scheme.n**3, 16, 2000))
    pairs = (scheme.tolerance * scheme.messages_per_worker) ** 2
    return int(np.clip(BUDGET / (2 * STEPS * len(scheme.rows) * max(pairs, 1)), 16, 20_000))


def _spectrum(scheme: Code) -> Spectrum | None:
    key = id(scheme)
    if key not in _SPECTRA or _SPECTRA[key][0] is not scheme:
        _SPECTRA.clear()  # one scheme at a time: its eigendecomposition is n x n
        _SPECTRA[key] = (scheme, Spectrum.of(scheme.rows))
    return _SPECTRA[key][1]


def exact_condition(scheme: Code, stragglers: tuple[int, ...]) -> float:
    """The SVD's condition number of the rows received without these workers (inf: does not decode)."""
    absent = set(stragglers)
    ids = tuple(i for i, owner in enumerate(scheme.message_owner) if owner not in absent)
    decoding = scheme._solve(ids)
    return float("inf") if decoding is None else decoding.condition


def _scan(scheme: Code, sets: list[tuple[int, ...]], exhaustive: bool, stop_above: float) -> ConditionReport:
    estimates = _estimates(scheme, sets)
    worst, worst_set, checked = 0.0, (), 0
    for stragglers, estimate in zip(sets, estimates, strict=True):
        value = exact_condition(scheme, stragglers) if estimate is None else estimate
        checked += 1
        if value > worst:
            worst, worst_set = value, stragglers
        if worst > stop_above:
            break
    return ConditionReport(worst, checked, exhaustive and checked == len(sets), worst_set)


def _estimates(scheme: Code, sets: list[tuple[int, ...]]) -> list[float | None]:
    """Per set, the downdate's condition number where it is reliable, None where the SVD must decide."""
    if not sets or not sets[0]:
        return [None] * len(sets)
    spectrum = _spectrum(scheme)
    if spectrum is None:
        return [None] * len(sets)
    per_worker = [scheme.messages(w) for w in range(scheme.n)]
    if len({len(m) for m in per_worker}) > 1:  # sets would remove different numbers of rows
        return [None] * len(sets)
    removed = np.array(per_worker, dtype=np.int64)[np.array(sets, dtype=np.int64)].reshape(len(sets), -1)
    values = spectrum.conditions(removed)
    trusted = values <= spectrum.reliable_up_to
    return [float(v) if ok else None for v, ok in zip(values, trusted, strict=True)]
