"""Every registered scheme decodes exactly under every straggler set it claims.

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
    check_structural_matches_rank,
    check_unrecoverable_is_refused,
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
    size = draw(st.integers(0, min(scheme.n, scheme.s + extra)))
    return draw(st.lists(st.integers(0, scheme.n - 1), min_size=size, max_size=size, unique=True))


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


# seconds each (the approximate codes: every (d, s) of theirs): their every-set check runs in CI's full lane
EXHAUSTIVE_SLOW = {"cce_cr", "cce_fr", "is_gc", "frc", "bgc", "expander", "sgc"}


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if name in EXHAUSTIVE_SLOW else name for name in SCHEMES]
)
def test_every_straggler_set_for_small_n(name):
    """Exhaustive: every accepted (n <= 10, s, m) and every straggler set of size <= s."""
    rng = np.random.default_rng(7)
    checked = 0
    for n in range(1, 11):
        for s, params in valid_parameter_sets(name, n):
            scheme = build(name, n, s, params)
            if scheme is None:
                continue
            grads = partition_gradients(scheme.k, 3, rng)
            for stragglers in all_subsets(n, s):
                check_decode_exact(scheme, stragglers, grads)
                checked += 1
    assert checked >= 10  # uncoded: one set per n; the others thousands


@pytest.mark.parametrize("name", SCHEMES)
def test_every_responder_set_for_tiny_n(name):
    """Exhaustive over all 2^n responder sets (n <= 7): decodability agrees with rank, never a wrong answer."""
    rng = np.random.default_rng(8)
    for n in range(1, 8):
        for s, params in valid_parameter_sets(name, n):
            scheme = build(name, n, s, params)
            if scheme is None:
                continue
            grads = partition_gradients(scheme.k, 2, rng)
            for responders in all_subsets(n, n):
                check_structural_matches_rank(scheme, responders)
                check_unrecoverable_is_refused(scheme, responders, grads)
