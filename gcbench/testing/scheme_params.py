"""The parameter sets each scheme accepts, one table for exhaustive and Hypothesis tests."""

from __future__ import annotations

from typing import Any

# Largest n Hypothesis draws per scheme: big enough to reach the conditioning
# limits, small enough that construction (an exhaustive condition check) stays fast.
HYPOTHESIS_MAX_N = {
    "uncoded": 32,
    "ignore_stragglers": 32,
    "fr": 32,
    "cr": 16,
    "cyclic_mds": 16,
    "cce_cr": 13,
    "cce_fr": 24,
}


def _divisors(n: int) -> list[int]:
    return [g for g in range(1, n + 1) if n % g == 0]


def valid_parameter_sets(name: str, n: int) -> list[tuple[int, dict[str, Any]]]:
    """Every (s, extra parameters) the scheme's rules admit for n workers.

    The scheme may still refuse some of them as numerically unusable; tests
    skip those and check that the refusal says why.
    """
    if name == "uncoded":
        return [(0, {})]
    if name == "fr":
        return [(g - 1, {}) for g in _divisors(n)]
    if name == "cce_fr":
        return [(g - m, {"m": m}) for g in _divisors(n) for m in range(1, g + 1)]
    if name == "cce_cr":
        return [(s, {"m": m}) for s in range(n) for m in range(1, n - s + 1)]
    return [(s, {}) for s in range(n)]
