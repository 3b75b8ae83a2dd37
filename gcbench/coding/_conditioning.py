"""Worst decoding condition number over the straggler sets a scheme claims.

A set that does not decode (numerically rank deficient) counts as infinite.
Every set of exactly s stragglers is checked when there are at most ``limit``
of them; otherwise the cyclically contiguous sets (the hard ones for cyclic supports)
plus a seeded random sample, and the report says so.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from gcbench.coding._base import Scheme

_REPORTS: dict[str, ConditionReport] = {}


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


def condition_report(scheme: Scheme, limit: int, stop_above: float = float("inf")) -> ConditionReport:
    """Worst condition number of the received rows when exactly s workers straggle.

    ``stop_above``: end the scan at the first set whose condition number exceeds it
    (a refusal needs one such set, not the worst; each set costs an SVD).
    """
    key = f"{type(scheme).__name__}:{scheme!r}:{limit}:{stop_above}"
    if key in _REPORTS:
        return _REPORTS[key]
    sets, exhaustive = straggler_sets(scheme.n, scheme.s, limit)
    worst, worst_set, checked = 0.0, (), 0
    for stragglers in sets:
        absent = set(stragglers)
        ids = tuple(i for i, owner in enumerate(scheme.message_owner) if owner not in absent)
        decoding = scheme._solve(ids)
        value = float("inf") if decoding is None else decoding.condition
        checked += 1
        if value > worst:
            worst, worst_set = value, stragglers
        if worst > stop_above:
            break
    report = ConditionReport(worst, checked, exhaustive and checked == len(sets), worst_set)
    _REPORTS[key] = report
    return report
