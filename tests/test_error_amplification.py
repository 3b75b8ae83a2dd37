"""A decoder's error amplification (gcbench/coding/_amplification.py): the Frobenius norm of its weights, the
factor by which independent errors in the messages (compression's) reach the decoded gradient."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gcbench.coding import available_schemes, make_scheme
from gcbench.testing import valid_parameter_sets


def test_closed_forms_uncoded_and_fractional_repetition():
    uncoded = make_scheme("uncoded", n=12, s=0).error_amplification()
    assert uncoded.worst == pytest.approx(math.sqrt(12)) == uncoded.uncoded
    # FR, 4 groups of 3 copies: the minimum-norm decode averages the copies it has (weights 1/3), so independent
    # errors shrink; the worst set leaves one group a single copy: 1 + 3 x (3 x 1/9) = 2
    fr = make_scheme("fr", n=12, s=2).error_amplification()
    assert fr.worst == pytest.approx(math.sqrt(2)) and fr.exhaustive and fr.sets_checked == math.comb(12, 2)
    assert fr.mean < fr.worst < fr.uncoded


def test_the_factor_is_what_independent_message_errors_become():
    """cyclic-MDS at n = 12, s = 2: the decoded error of messages perturbed by iid noise has the norm the report's
    weights predict, ||W||_F sigma sqrt(d), to sampling error."""
    scheme = make_scheme("cyclic_mds", n=12, s=2)
    rng = np.random.default_rng(0)
    d, sigma = 20_000, 1e-3
    stragglers = scheme.error_amplification().worst_stragglers
    responders = [w for w in range(12) if w not in stragglers]
    weights = scheme.decoding([mid for w in responders for mid in scheme.messages(w)]).weights
    noise = {w: [rng.normal(0, sigma, d)] for w in responders}
    error = scheme.decode(noise, d=d)  # decoding the errors alone: the decode is linear
    assert np.linalg.norm(error) == pytest.approx(np.linalg.norm(weights) * sigma * math.sqrt(d), rel=0.05)
    assert scheme.error_amplification().worst == pytest.approx(np.linalg.norm(weights))
    assert scheme.error_amplification().worst > 10 * scheme.error_amplification().uncoded


@pytest.mark.parametrize("name", available_schemes())
def test_every_scheme_reports_its_amplification(name):
    s, params = valid_parameter_sets(name, 6)[-1]
    scheme = make_scheme(name, n=6, s=s, **params)
    report = scheme.error_amplification(limit=50)
    assert 0 < report.mean <= report.worst * (1 + 1e-12) and math.isfinite(
        report.worst
    )  # (a mean of equal values: ulps)
    assert len(report.worst_stragglers) == scheme.tolerance  # (s, but none for M-SGC: its guarantee spans rounds)


def test_uncoded_s_reference_is_on_the_same_workers_even_where_a_job_has_more_partitions():
    """M-SGC at n = 6 splits a job into k = 42 partitions; the uncoded design it is compared with is uncoded on
    the same 6 workers, whose decode sums 6 messages: sqrt(6), not sqrt(42)."""
    scheme = make_scheme("m_sgc", n=6, s=2, burst=1, window=3, lam=2)
    assert scheme.k == 42
    assert scheme.error_amplification().uncoded == pytest.approx(math.sqrt(6))
