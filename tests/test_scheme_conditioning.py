"""The bounded conditioning check: the downdate's estimates are the SVD's, and building a scheme costs few SVDs."""

import numpy as np
import pytest

import gcbench.coding._conditioning as conditioning
from gcbench.coding import Scheme, make_scheme
from gcbench.coding._conditioning import exact_condition, straggler_sets
from gcbench.coding._downdate import EPS, STEPS, Spectrum

# LAPACK's condition numbers against the downdate's: .ci/run runs these again under other BLAS kernels
pytestmark = pytest.mark.blas

CASES = [
    ("cr", 10, 2, {"seed": 0}),
    ("cr", 10, 3, {"seed": 7}),
    ("cyclic_mds", 11, 2, {}),
    ("cyclic_mds", 12, 3, {}),
    ("cce_cr", 10, 2, {"m": 2}),
    ("cce_fr", 12, 2, {"m": 2}),
    ("fr", 12, 2, {}),
]


def agreement(scheme: Scheme, condition: float) -> float:
    """How close (relative) the downdate's estimate and the SVD's condition number must be, on any BLAS kernel.

    The downdate works on A A^T: its smallest eigenvalue carries an absolute error of about sqrt(M) eps times the
    largest (gcbench/coding/_downdate.py), so a relative one of sqrt(M) eps condition^2, and the condition number
    half that. Its bisection resolves 2^-STEPS of a log bracket under 40 wide (1e-16 to 1). The SVD's own error,
    eps condition, is below both. (rel=1e-6 failed on OpenBLAS's Haswell kernel at condition 2.5e5, an error of
    2.3e-6 where this allows 4.5e-5.)"""
    return np.sqrt(len(scheme.rows)) * EPS * condition**2 + 40 / 2**STEPS


@pytest.mark.parametrize("name, n, s, params", CASES)
def test_downdate_estimates_are_the_svds_condition_numbers(name, n, s, params):
    scheme = make_scheme(name, n=n, s=s, **params)
    sets, exhaustive = straggler_sets(n, s, 10_000)
    assert exhaustive
    estimates = conditioning._estimates(scheme, sets)
    exact = [exact_condition(scheme, stragglers) for stragglers in sets]
    assert any(e is not None for e in estimates)
    for estimate, truth in zip(estimates, exact, strict=True):
        if estimate is None:
            continue  # left to the SVD
        assert np.isfinite(truth) and estimate == pytest.approx(truth, rel=agreement(scheme, truth))
    assert scheme.worst_condition().worst == pytest.approx(max(exact), rel=agreement(scheme, max(exact)))


def test_a_set_that_loses_rank_is_left_to_the_svd():
    scheme = make_scheme("fr", n=4, s=1)  # groups {0, 1} and {2, 3}: losing both of one uncovers its partitions
    estimates = conditioning._estimates(scheme, [(0, 1), (0, 2)])
    assert estimates[0] is None and exact_condition(scheme, (0, 1)) == float("inf")
    truth = exact_condition(scheme, (0, 2))
    assert estimates[1] == pytest.approx(truth, rel=agreement(scheme, truth))


def test_building_cr_at_n_100_checks_every_set_with_a_few_svds(monkeypatch):
    conditioning._REPORTS.clear()
    calls = []
    solve = Scheme._solve
    monkeypatch.setattr(Scheme, "_solve", lambda self, key: calls.append(key) or solve(self, key))
    scheme = make_scheme("cr", n=100, s=2, seed=0)
    report = scheme.worst_condition(limit=None, stop_above=1e7)
    assert report.exhaustive and report.sets_checked == 4950  # every set; the sampled check saw 2,000
    assert len(calls) <= 20  # only sets whose estimate is too large to trust (one SVD each set before)


def test_the_check_is_cached_per_scheme_parameters(monkeypatch):
    conditioning._REPORTS.clear()
    spectra = []
    of = Spectrum.of
    monkeypatch.setattr(Spectrum, "of", staticmethod(lambda rows: spectra.append(1) or of(rows)))
    make_scheme("cr", n=20, s=2, seed=3)
    make_scheme("cr", n=20, s=2, seed=3)
    assert len(spectra) == 1
    make_scheme("cr", n=20, s=2, seed=4)
    assert len(spectra) == 2


@pytest.mark.parametrize("name, s", [("uncoded", 0), ("ignore_stragglers", 3)])
def test_uncoded_quality_comes_from_the_structure(name, s):
    small = make_scheme(name, n=7, s=s)
    for size in range(1, 8):
        exact, residual = small.decode_quality(range(size))
        found = small.approximate_decoding(range(size))
        assert exact == found.exact and residual == pytest.approx(0.0 if exact else found.residual, abs=1e-12)


def test_uncoded_quality_at_n_4096_needs_no_svd(monkeypatch):
    scheme = make_scheme("uncoded", n=4096, s=0)

    def no_svd(*args, **kwargs):
        raise AssertionError("an SVD was computed")

    monkeypatch.setattr(np.linalg, "svd", no_svd)
    assert scheme.decode_quality(range(4000)) == (False, pytest.approx(np.sqrt(96)))
    assert scheme.decode_quality(range(4096)) == (True, 0.0)
