"""The round replay of Sequential-Gradient-Coding-2's rules (gcbench/testing/sgc_replay.py): hand-computed rounds, and
the designs' guarantee (every job decodes at its deadline, whatever the delays) checked on generated delays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gcbench.coding import make_scheme
from gcbench.coding.sequential import LOST
from gcbench.policies import RelativeDeadline
from gcbench.testing.sgc_replay import (
    GradientCodeReplay,
    MultiplexedReplay,
    SelectiveRepeatReplay,
    UncodedReplay,
    at_design_load,
    parameters,
    round_end,
    search,
)

# 4 workers, 3 rounds: worker 3 slow in round 0, workers 2 and 3 in round 1, nobody in round 2
DELAYS = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 5.0, 1.0], [4.0, 6.0, 1.5]])


def test_a_round_ends_at_one_plus_mu_times_its_fastest_worker():
    wait, late = round_end(DELAYS[:, 1], mu=1.0)
    assert wait == 2.0 and late.tolist() == [False, False, True, True]


def test_uncoded_waits_for_every_worker():
    replay = UncodedReplay().replay(DELAYS, jobs=3, mu=1.0)
    assert replay.durations.tolist() == [4.0, 6.0, 1.5] and replay.waits == 3


def test_gradient_coding_the_repositorys_rule_and_tandons():
    # s = 1: the repository ends a round early only with fewer than s stragglers (none), Tandon's with at most s
    assert GradientCodeReplay(1).replay(DELAYS, 3, 1.0).durations.tolist() == [4.0, 6.0, 1.5]
    assert GradientCodeReplay(1, tandon=True).replay(DELAYS, 3, 1.0).durations.tolist() == [2.0, 6.0, 1.5]
    assert GradientCodeReplay(2, tandon=True).replay(DELAYS, 3, 1.0).durations.tolist() == [2.0, 2.0, 1.5]


def test_selective_repeat_repeats_the_missing_tasks_and_decodes_b_rounds_later():
    design = SelectiveRepeatReplay(B=1, W=2, lam=1)  # s' = ceil(1 * 1 / 2) = 1
    assert (design.s, design.delay, design.load(4)) == (1, 1, 0.5)
    delays = np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [3.0, 1.0, 1.0]])
    replay = design.replay(delays, jobs=2, mu=0.5)
    served = replay.state
    # round 0: worker 3 straggles (one worker over the last 2 rounds: fits), its result for job 0 is lost
    assert served[:, 0].tolist() == [0, 0, 0, LOST] and replay.durations[0] == 1.5
    # round 1: one result of job 0 missing, which s' = 1 tolerates: nobody repeats
    assert served[:, 1].tolist() == [1, 1, 1, 1] and design.decodable(served, 0)
    # round 2 (the last B): job 1 decodes from round 1 alone, so the round is skipped
    assert replay.durations[2] == 0 and design.decodable(served, 1)
    assert replay.runtime == 1.5 + 1.0


def test_selective_repeat_repeats_where_more_than_s_results_are_missing():
    design = SelectiveRepeatReplay(B=1, W=2, lam=2)  # s' = 1
    delays = np.array([[1.0, 1.0], [1.0, 1.0], [3.0, 1.0], [3.0, 1.0]])
    served = design.replay(delays, jobs=1, mu=0.5).state
    # two results of job 0 lost in round 0, one more than s': the lower-numbered worker repeats job 0 in round 1
    assert served[:, 0].tolist() == [0, 0, LOST, LOST] and served[:, 1].tolist() == [1, 1, 0, 1]
    assert design.decodable(served, 0)


def test_multiplexed_loads_and_delay():
    design = MultiplexedReplay(B=1, W=2, lam=1)
    assert (design.slots, design.delay) == (2, 1) and design.load(4) == pytest.approx(2 * 2 / (4 * (1 + 2)))
    assert MultiplexedReplay(B=2, W=3, lam=4).load(4) == pytest.approx((3 - 1 + 2) / (4 * 2))


SR_PAIRS = {(1, 2), (1, 3), (1, 4), (1, 5), (1, 6), (2, 3), (2, 5), (3, 4)}  # W = B + 1 + a multiple of B, <= 6


@pytest.mark.parametrize(
    ("design", "pairs", "count"),
    [("uncoded", None, 1), ("gc", None, 6), ("sr_sgc", SR_PAIRS, 6 * 8), ("m_sgc", {(1, 2), (1, 3)}, 6 * 2)],
)
def test_the_search_tries_every_admissible_parameter(design, pairs, count):
    # n = 6 workers, 6 jobs, delays up to 3 rounds: M-SGC needs W - 1 + B <= 3; lam runs over 1..6
    found = list(parameters(design, 6, 6, 3))
    assert len(found) == len(set(found)) == count
    if pairs is not None:
        assert {(B, W) for B, W, _ in found} == pairs and {lam for *_, lam in found} == set(range(1, 7))


def test_the_search_applies_the_load_model():
    base = np.full((4, 8), 1.0)
    found = {params: runtime for params, _, runtime, _ in search("gc", base, 6, 1.0, 0.0, 2.0)}
    # s = 1: load 2/4, every delay 1 + 0.5 * 2 = 2, six rounds
    assert found[(1,)] == pytest.approx(12.0)
    assert at_design_load(base, 0.75, 0.25, 2.0)[0, 0] == 2.0


delays_strategy = st.integers(4, 7).flatmap(
    lambda n: st.lists(
        st.lists(st.sampled_from([1.0, 1.2, 2.5, 4.0, 9.0]), min_size=14, max_size=14), min_size=n, max_size=n
    )
)


@settings(max_examples=60, deadline=None)
@given(delays=delays_strategy, B=st.integers(1, 3), extra=st.integers(0, 2), lam=st.integers(1, 4),
       mu=st.sampled_from([0.2, 1.0]))  # fmt: skip
def test_every_job_decodes_by_its_deadline_whatever_the_delays(delays, B, extra, lam, mu):
    """The designs' guarantee: a pattern outside the model is waited out, so every job decodes on time."""
    delays = np.array(delays)
    n = delays.shape[0]
    jobs = 14 - 6
    selective = SelectiveRepeatReplay(B, B + 1 + extra * B, min(lam, n))
    if selective.delay + jobs <= 14:
        served = selective.replay(delays, jobs, mu).state
        assert all(selective.decodable(served, job) for job in range(jobs))
    W = B + 1 + extra
    multiplexed = MultiplexedReplay(B, W, min(lam, n))
    if multiplexed.delay + jobs <= 14:
        work = multiplexed.replay(delays, jobs, mu).state
        assert all(multiplexed.decodable(work, job) for job in range(jobs))


@pytest.mark.parametrize("tandon", [False, True])
@pytest.mark.parametrize("mu", [0.0, 0.2, 1.0])
def test_the_relative_deadline_policy_ends_rounds_as_the_repositorys_gradient_coding(tandon, mu):
    """relative_deadline on a gradient code gives the repository's round durations: with ``fewer_than_s`` its
    rule, without it Tandon's (cyclic repetition decodes from any n - s results); uncoded waits for all."""
    delays = np.random.default_rng(3).gamma(2.0, 1.0, (8, 40))
    for s in (1, 2, 3):
        policy = RelativeDeadline(mu=mu, fewer_than_s=not tandon)
        outcome = policy.stop_times(delays.T, make_scheme("cr", n=8, s=s))
        expected = GradientCodeReplay(s, tandon=tandon).replay(delays, 40, mu).durations
        np.testing.assert_array_equal(outcome.stop, expected)
    uncoded = RelativeDeadline(mu=mu, fewer_than_s=not tandon).stop_times(delays.T, make_scheme("uncoded", n=8))
    np.testing.assert_array_equal(uncoded.stop, UncodedReplay().replay(delays, 40, mu).durations)


def test_relative_deadline_variants_that_differ_in_their_rule_differ_in_label():
    names = {RelativeDeadline(mu=1).display_name, RelativeDeadline(mu=0.2).display_name,
             RelativeDeadline(mu=1, fewer_than_s=True).display_name,
             RelativeDeadline(mu=1, wait_for="decodable").display_name}  # fmt: skip
    assert len(names) == 4 and "relative_deadline(mu=1, fewer_than_s)" in names
