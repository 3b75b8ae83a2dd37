"""Every registered scheme decodes exactly under every straggler set it claims (``tolerance`` whole workers: s, but
for M-SGC, whose guarantee spans rounds: tests/test_multiplexed.py).

Hypothesis draws (n, s, m, d, seed) across each scheme's valid range; for n <= 10
every straggler set is also enumerated. Parameter sets a scheme refuses as
numerically unusable are skipped, after checking that the refusal says so.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gcbench.coding import SchemeParameterError, available_schemes, make_scheme, scheme_class
from gcbench.testing import (
    check_approximate_residual,
    check_declared_structure,
    check_decode_exact,
    check_decode_times,
    check_deterministic,
    check_float32_within_bound,
    check_reported_variance,
    check_structural_matches_rank,
    check_unbiased,
    check_unrecoverable_is_refused,
    encode_all,
    partition_gradients,
    valid_parameter_sets,
)
from gcbench.testing.scheme_checks import all_subsets

SCHEMES = available_schemes()


def build(name, n, s, params):
    """The scheme, or None when it refuses the parameters as ill-conditioned (checked to say so)."""
    try:
        return make_scheme(name, n=n, s=s, **params)
    except SchemeParameterError as error:
        assert "numerically unusable" in str(error), str(error)
        return None


@st.composite
def scheme_instances(draw, name):
    cls = scheme_class(name)
    n = draw(st.integers(1, cls.hypothesis_max_n))
    admitted = valid_parameter_sets(name, n)
    assume(admitted)  # a scheme may admit no parameters for some n (expander: no 1-vertex graph)
    s, params = draw(st.sampled_from(admitted))
    params = {**params, **{key: draw(st.integers(*span)) for key, span in cls.hypothesis_ranges.items()}}
    scheme = build(name, n, s, params)
    assume(scheme is not None)
    return scheme


@st.composite
def straggler_sets(draw, scheme, extra=0):
    size = draw(st.integers(0, min(scheme.n, scheme.tolerance + extra)))
    return draw(st.lists(st.integers(0, scheme.n - 1), min_size=size, max_size=size, unique=True))


@pytest.mark.blas  # decodes against plain sums, in float64 and within the float32 bound
@pytest.mark.parametrize("name", SCHEMES)
@given(data=st.data())
def test_decodes_exactly_from_any_allowed_responders(name, data):
    scheme = data.draw(scheme_instances(name))
    stragglers = data.draw(straggler_sets(scheme))
    d = data.draw(st.integers(1, 40))
    grads = partition_gradients(scheme.k, d, np.random.default_rng(data.draw(st.integers(0, 2**32))))
    check_decode_exact(scheme, stragglers, grads)
    check_float32_within_bound(scheme, stragglers, grads)


@pytest.mark.parametrize("name", SCHEMES)
@given(data=st.data())
def test_beyond_tolerance_never_gives_a_wrong_gradient(name, data):
    scheme = data.draw(scheme_instances(name))
    stragglers = data.draw(straggler_sets(scheme, extra=scheme.n))
    responders = [w for w in range(scheme.n) if w not in stragglers]
    grads = partition_gradients(scheme.k, 7, np.random.default_rng(1))
    check_unrecoverable_is_refused(scheme, responders, grads)
    check_structural_matches_rank(scheme, responders)
    check_approximate_residual(scheme, responders, grads)


@pytest.mark.parametrize("name", SCHEMES)
@given(data=st.data())
def test_decode_time_is_the_first_decodable_prefix(name, data):
    scheme = data.draw(scheme_instances(name))
    times = st.one_of(st.floats(0, 10, allow_nan=False), st.just(float("inf")), st.sampled_from([1.0, 2.0]))
    arrivals = np.array(data.draw(st.lists(times, min_size=scheme.n, max_size=scheme.n)))
    check_decode_times(scheme, arrivals)


@pytest.mark.parametrize("name", SCHEMES)
@given(data=st.data())
def test_declared_structure_and_determinism(name, data):
    scheme = data.draw(scheme_instances(name))
    check_declared_structure(scheme, d=data.draw(st.integers(1, 30)))
    check_deterministic(name, scheme.n, scheme.s, dict(scheme.params))


def exhaustive_cases(attribute: str, top: int, everyday: int) -> list:
    """Per scheme, the sizes n up to ``top`` in two parts: n <= ``everyday`` (the everyday lane; slow only where
    the class says the check costs it seconds or more, ``Scheme.slow_*``), and the larger n, always slow (most
    of the sets: the full lane, CI, checks them)."""
    cases = []
    for name in SCHEMES:
        slow = [pytest.mark.slow] if getattr(scheme_class(name), attribute) else []
        cases.append(pytest.param(name, range(1, everyday + 1), marks=slow, id=name))
        larger = range(everyday + 1, top + 1)
        cases.append(pytest.param(name, larger, marks=pytest.mark.slow, id=f"{name}-larger-n"))
    return cases


def straggler_cases() -> list:
    """Exact schemes up to n = 10; approximate ones accept every (s, d) at each n, so they stop at n = 7."""
    cases = []
    for case in exhaustive_cases("slow_every_straggler_set", 10, everyday=7):
        name, sizes = case.values
        if scheme_class(name).exact or sizes.stop <= 8:
            cases.append(case)
    return cases


@pytest.mark.parametrize(("name", "sizes"), straggler_cases())
def test_every_straggler_set_for_small_n(name, sizes):
    """Exhaustive: every accepted (n <= 10, s, m) and every straggler set of size <= s.

    Approximate schemes stop at n = 7, and their decode is checked against its reported residual (it is not
    exact)."""
    rng = np.random.default_rng(7 + sizes.start)
    checked = 0
    for n in sizes:
        for s, params in valid_parameter_sets(name, n):
            scheme = build(name, n, s, params)
            if scheme is None:
                continue
            grads = partition_gradients(scheme.k, 3, rng)
            encoded = encode_all(scheme, grads)  # (once: a set's check then costs its decode)
            for stragglers in all_subsets(n, scheme.tolerance):
                check_decode_exact(scheme, stragglers, grads, encoded)
                if not scheme.exact:
                    responders = [w for w in range(n) if w not in stragglers]
                    check_approximate_residual(scheme, responders, grads, encoded)
                checked += 1
    assert checked >= len(sizes)  # uncoded: one set per n; the others thousands


# every (s, m) at n <= 7, each set's messages checked by rank: where the class says that takes minutes, the
# everyday lane checks its whole-worker sets among its prefix sets (n <= 5, below)
@pytest.mark.parametrize(("name", "sizes"), exhaustive_cases("slow_every_responder_set", 7, everyday=6))
def test_every_responder_set_for_tiny_n(name, sizes):
    """Exhaustive over all 2^n responder sets (n <= 7): decodability agrees with rank, never a wrong answer."""
    rng = np.random.default_rng(8 + sizes.start)
    for n in sizes:
        for s, params in valid_parameter_sets(name, n):
            scheme = build(name, n, s, params)
            if scheme is None:
                continue
            grads = partition_gradients(scheme.k, 2, rng)
            for responders in all_subsets(n, n):
                check_structural_matches_rank(scheme, responders)
                check_unrecoverable_is_refused(scheme, responders, grads)


UNBIASED = [name for name in SCHEMES if scheme_class(name).unbiased]
REPORTS_VARIANCE = [name for name in SCHEMES if hasattr(scheme_class(name), "error_variance")]


@pytest.mark.parametrize("name", UNBIASED)
def test_unbiased_over_every_straggler_set_where_claimed(name):
    """Exhaustive for n <= 8: every accepted (s, parameters), every set of s stragglers."""
    for n in range(1, 9):
        for s, params in valid_parameter_sets(name, n):
            scheme = build(name, n, s, params)
            if scheme is not None:
                check_unbiased(scheme)


@pytest.mark.parametrize("name", UNBIASED)
def test_unbiased_statistically_at_larger_n_where_claimed(name):
    """n = 30, s = 9: 2,000 seeded draws of the straggler set, within 5 standard errors per coefficient."""
    check_unbiased(make_scheme(name, n=30, s=9), samples=2000, seed=3)


@pytest.mark.parametrize("name", REPORTS_VARIANCE)
@pytest.mark.parametrize(("n", "s", "d"), [(12, 3, 2), (20, 5, 3), (9, 1, 4)])
def test_reported_variance_is_the_error_under_random_stragglers(name, n, s, d):
    check_reported_variance(make_scheme(name, n=n, s=s, d=d), samples=4000, seed=n)


def test_the_unbiasedness_check_catches_a_biased_decoder():
    with pytest.raises(AssertionError, match="over every straggler set"):
        check_unbiased(make_scheme("frc", n=6, s=2, d=2))  # a lost group stays lost: biased low
    with pytest.raises(AssertionError, match="standard errors from zero"):
        check_unbiased(make_scheme("frc", n=30, s=10, d=3), samples=2000, seed=3)


def test_the_variance_check_catches_a_wrong_report(monkeypatch):
    scheme = make_scheme("sgc", n=12, s=3, d=2)
    monkeypatch.setattr(scheme, "error_variance", lambda: 1.1 * type(scheme).error_variance(scheme))
    with pytest.raises(AssertionError, match="mean squared residual"):
        check_reported_variance(scheme, samples=4000, seed=12)


def sends_several(name: str) -> bool:
    """Whether the scheme's workers send more than one message each (judged at n = 4, s = 1)."""
    try:
        return make_scheme(name, n=4, s=1).messages_per_worker > 1
    except SchemeParameterError:
        return False


MULTI_MESSAGE = [name for name in SCHEMES if sends_several(name)]
PREFIX_SETS_PER_INSTANCE = 1024  # (messages + 1)^n sets: every instance of n <= 5 up to this many is enumerated


@pytest.mark.parametrize("name", MULTI_MESSAGE)
def test_every_prefix_set_decodes_as_the_rank_says_for_small_n(name):
    """Issue 12: workers that stop part-way deliver the first p of their messages. For every accepted instance
    with n <= 5 (at most 1,024 such sets), every combination of prefixes: can_decode, structural where claimed,
    is the rank's answer, and a decodable set gives the exact gradient."""
    from gcbench.testing.scheme_checks import check_prefix_set, prefix_sets

    rng, checked = np.random.default_rng(9), 0
    for n in range(1, 6):
        for s, params in valid_parameter_sets(name, n):
            scheme = build(name, n, s, params)
            if scheme is None or (scheme.messages_per_worker + 1) ** n > PREFIX_SETS_PER_INSTANCE:
                continue
            grads = partition_gradients(scheme.k, 3, rng)
            for lengths in prefix_sets(scheme):
                check_prefix_set(scheme, lengths, grads)
                checked += 1
    assert checked >= 100
