"""Fractional repetition's decode times take one of two paths by group size, the small groups' a block of rows
at a time (speed choices); every way gives the definition, the slowest group's fastest arrival, on many rows at
once, with messages that never arrive."""

from __future__ import annotations

import numpy as np
import pytest

from gcbench.coding import fractional_repetition
from gcbench.coding.fractional_repetition import SMALL_GROUP, FractionalRepetition


def slowest_group_fastest_arrival(arrivals: np.ndarray, size: int) -> np.ndarray:
    n = arrivals.shape[1]
    return np.array([max(min(row[g : g + size]) for g in range(0, n, size)) for row in arrivals.tolist()])


def arrivals_with_losses(n: int, rows: int = 50) -> np.ndarray:
    rng = np.random.default_rng(n)
    arrivals = rng.exponential(1.0, (rows, n))
    arrivals[rng.random((rows, n)) < 0.3] = np.inf  # crashed for good
    arrivals[7] = np.inf  # nothing arrives: never decodes
    return arrivals


@pytest.mark.parametrize(("n", "s"), [(4, 0), (12, 3), (48, SMALL_GROUP - 1), (68, SMALL_GROUP), (100, 49)])
def test_decode_times_is_the_slowest_groups_fastest_arrival(n, s):
    arrivals = arrivals_with_losses(n)
    got = FractionalRepetition(n, s).decode_times(arrivals)
    assert np.array_equal(got, slowest_group_fastest_arrival(arrivals, s + 1))
    assert got[7] == np.inf


@pytest.mark.parametrize("block", [1, 40, 120])  # a row a block (n above it); 3 rows a block, the last 2; 10
def test_decode_times_in_blocks_of_rows_covers_every_row(monkeypatch, block):
    monkeypatch.setattr(fractional_repetition, "BLOCK_ELEMENTS", block)
    arrivals = arrivals_with_losses(12)
    got = FractionalRepetition(12, 3).decode_times(arrivals)
    assert np.array_equal(got, slowest_group_fastest_arrival(arrivals, 4))
