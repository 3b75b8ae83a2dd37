"""Fractional repetition's decode times take one of two paths by group size (a speed choice); both give the
definition, the slowest group's fastest arrival, on many rows at once, with messages that never arrive."""

from __future__ import annotations

import numpy as np
import pytest

from gcbench.coding.fractional_repetition import SMALL_GROUP, FractionalRepetition


def slowest_group_fastest_arrival(arrivals: np.ndarray, size: int) -> np.ndarray:
    rows, n = arrivals.shape
    return np.array([max(min(row[g : g + size]) for g in range(0, n, size)) for row in arrivals.tolist()])


@pytest.mark.parametrize(("n", "s"), [(4, 0), (12, 3), (64, SMALL_GROUP - 1), (66, SMALL_GROUP), (100, 49)])
def test_decode_times_is_the_slowest_groups_fastest_arrival(n, s):
    rng = np.random.default_rng(n + s)
    arrivals = rng.exponential(1.0, (50, n))
    arrivals[rng.random((50, n)) < 0.3] = np.inf  # crashed for good
    arrivals[7] = np.inf  # nothing arrives: never decodes
    got = FractionalRepetition(n, s).decode_times(arrivals)
    assert np.array_equal(got, slowest_group_fastest_arrival(arrivals, s + 1))
    assert got[7] == np.inf
