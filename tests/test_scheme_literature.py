"""The approximate, stochastic and random schemes against the values their papers give (fixed seeds)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcbench.coding import make_scheme
from gcbench.coding.bcc import random_batches
from gcbench.coding.is_gc import largest_disjoint_sets
from gcbench.coding.sgc import sidon_offsets
from gcbench.testing.scheme_checks import error_without, random_straggler_sets


def test_frc_loses_the_groups_whose_workers_all_straggle():
    """n = 30, d = 3, 10 uniform stragglers: mean ||aB - 1||^2 / n = C(n-d, s-d) / C(n, s) = 0.0296.

    8,000 seeded straggler sets; the tolerance is four standard errors (about 0.0024).
    """
    n, d, s = 30, 3, 10
    scheme = make_scheme("frc", n=n, s=s, d=d)
    sets, _ = random_straggler_sets(n, s, 8_000, seed=1)
    lost = np.array([(error_without(scheme, stragglers) ** 2).sum() / n for stragglers in sets])
    expected = math.comb(n - d, s - d) / math.comb(n, s)
    assert expected == pytest.approx(0.0296, abs=5e-5)
    assert abs(lost.mean() - expected) <= 4 * lost.std(ddof=1) / math.sqrt(len(lost))


@pytest.mark.parametrize(("b", "expected"), [(5, 11.42), (10, 29.29)])
def test_bcc_waits_for_b_harmonic_b_results_on_average(b, expected):
    """b H_b results until every batch is covered (coupon collector).

    600 seeded assignments of 100 workers, five random arrival orders each: in a random order an i.i.d.
    assignment's batches arrive i.i.d., so the mean is b H_b. Four standard errors of the per-assignment
    means (about 0.4 for b = 5, 1.0 for b = 10).
    """
    assert b * sum(1 / i for i in range(1, b + 1)) == pytest.approx(expected, abs=5e-3)
    rng = np.random.default_rng(b)
    per_assignment = []
    for seed in range(600):
        scheme = make_scheme("bcc", n=100, s=0, b=b, seed=seed)
        orders = np.argsort(rng.random((5, 100)), axis=1) + 1.0  # worker i's result is the orders[r, i]-th
        per_assignment.append(scheme.decode_times(orders).mean())
    means = np.array(per_assignment)
    assert abs(means.mean() - expected) <= 4 * means.std(ddof=1) / math.sqrt(len(means))


@pytest.mark.parametrize(("n", "d", "s"), [(20, 4, 5), (30, 3, 10), (16, 6, 3)])
def test_expander_fixed_decoder_within_the_spectral_bound(n, d, s):
    """Raviv et al.: ||W R - T||^2 <= (lambda/d)^2 n s / (n - s) from any n - s workers (fixed decoder)."""
    scheme = make_scheme("expander", n=n, s=s, d=d, decoder="fixed")
    optimal = make_scheme("expander", n=n, s=s, d=d)
    assert scheme.error_bound < n * s / (n - s)  # a connected, non-bipartite graph: lambda < d
    for stragglers in random_straggler_sets(n, s, 300, seed=n)[0]:
        fixed = (error_without(scheme, stragglers) ** 2).sum()
        assert fixed <= scheme.error_bound + 1e-9
        assert (error_without(optimal, stragglers) ** 2).sum() <= fixed + 1e-9  # least squares is optimal


def test_sgc_assignment_is_pairwise_balanced_when_n_allows():
    """Any two partitions share at most one worker (a modular Sidon set of offsets), each held d times."""
    for n, d in [(12, 3), (30, 5), (50, 6)]:
        scheme = make_scheme("sgc", n=n, s=2, d=d)
        shared = scheme.assignment_matrix().T.astype(int) @ scheme.assignment_matrix().astype(int)
        assert scheme.balanced and np.all(np.diag(shared) == d)
        assert shared[~np.eye(n, dtype=bool)].max() == 1
    assert not make_scheme("sgc", n=6, s=1, d=4).balanced  # 4 * 3 differences cannot be distinct mod 6


def test_is_gc_chooses_largest_sets_of_disjoint_responders():
    """Against brute force for n <= 9: every chosen set is disjoint and as large as any disjoint set."""
    for n, width in [(7, 2), (8, 3), (9, 2), (9, 4)]:
        for size in range(1, n + 1):
            for responders in itertools.combinations(range(n), size):
                best = max_disjoint_brute_force(responders, n, width)
                for chosen in largest_disjoint_sets(list(responders), n, width):
                    assert len(chosen) == best and disjoint(chosen, n, width)


def test_is_gc_decodes_exactly_when_everyone_answers_even_if_groups_do_not_tile():
    scheme = make_scheme("is_gc", n=7, s=2, d=3)  # arcs of 3 cannot tile 7 partitions
    assert scheme.decode_quality(range(7)) == (True, 0.0)


def disjoint(workers, n, width):
    covered = [(w + t) % n for w in workers for t in range(width)]
    return len(covered) == len(set(covered))


def max_disjoint_brute_force(responders, n, width):
    for size in range(len(responders), 0, -1):
        if any(disjoint(c, n, width) for c in itertools.combinations(responders, size)):
            return size
    return 0


@given(n=st.integers(1, 80), d=st.integers(1, 9))
def test_sgc_offsets_are_distinct_and_a_sidon_set_when_balanced(n, d):
    d = min(d, n)
    offsets, balanced = sidon_offsets(n, d)
    assert len(set(offsets)) == d and all(0 <= o < n for o in offsets)
    differences = [(a - b) % n for a in offsets for b in offsets if a != b]
    assert balanced == (len(set(differences)) == len(differences))


@given(data=st.data(), n=st.integers(1, 60), seed=st.integers(0, 2**32))
def test_bcc_draws_give_every_batch_s_plus_one_workers(data, n, seed):
    b = data.draw(st.integers(1, n))
    s = data.draw(st.integers(0, n // b - 1))  # b (s + 1) <= n
    drawn = random_batches(n, b, s + 1, seed)
    assert np.bincount(drawn, minlength=b).min() >= s + 1
    assert np.array_equal(drawn, random_batches(n, b, s + 1, seed))
