"""Invalid parameters raise the library's own error, naming the parameter."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcbench.coding import SchemeParameterError, available_schemes, make_scheme
from gcbench.errors import GcbenchError


@pytest.mark.parametrize("name", available_schemes())
@given(n=st.integers(1, 20), extra=st.integers(0, 5))
def test_s_at_least_n_is_refused(name, n, extra):
    with pytest.raises(SchemeParameterError, match="'s' parameter"):
        make_scheme(name, n=n, s=n + extra)


@pytest.mark.parametrize("name", available_schemes())
def test_negative_s_and_non_integer_n_are_refused(name):
    with pytest.raises(SchemeParameterError, match="'s' parameter .* Got -1 instead"):
        make_scheme(name, n=6, s=-1)
    with pytest.raises(SchemeParameterError, match="'n' parameter .* Got 6.5 instead"):
        make_scheme(name, n=6.5, s=0)
    with pytest.raises(SchemeParameterError, match="'n' parameter"):
        make_scheme(name, n=0, s=0)


def test_fr_divisibility_is_explained():
    with pytest.raises(SchemeParameterError, match=r"fr needs \(s\+1\) to divide n: s\+1=3 does not divide n=10"):
        make_scheme("fr", n=10, s=2)


def test_cce_fr_divisibility_is_explained():
    with pytest.raises(SchemeParameterError, match=r"cce_fr needs \(s\+m\) to divide n"):
        make_scheme("cce_fr", n=10, s=1, m=2)


@pytest.mark.parametrize("name", ["cce_cr", "cce_fr"])
def test_m_below_one_or_too_large_is_refused(name):
    with pytest.raises(SchemeParameterError, match="'m' parameter"):
        make_scheme(name, n=8, s=1, m=0)
    with pytest.raises(SchemeParameterError, match="'m' parameter"):
        make_scheme(name, n=8, s=4, m=5)


def test_uncoded_refuses_stragglers():
    with pytest.raises(SchemeParameterError, match="'s' parameter of uncoded must be an int in \\[0, 0\\]"):
        make_scheme("uncoded", n=4, s=1)


def test_unknown_name_lists_the_available_ones():
    with pytest.raises(SchemeParameterError, match="Unknown scheme 'mds'; available: uncoded, ignore_stragglers"):
        make_scheme("mds", n=4, s=1)


def test_unknown_parameter_is_refused():
    with pytest.raises(SchemeParameterError, match="cr does not take the parameter 'm'; it takes seed"):
        make_scheme("cr", n=4, s=1, m=2)


def test_negative_seed_is_refused():
    with pytest.raises(SchemeParameterError, match="'seed' parameter of cr"):
        make_scheme("cr", n=4, s=1, seed=-3)


@pytest.mark.slow  # (seconds: the everyday lane keeps its cheaper siblings)
def test_ill_conditioned_construction_is_refused_with_its_condition_number():
    with pytest.raises(SchemeParameterError, match="numerically unusable for n=18, s=8.*condition number 1.4e"):
        make_scheme("cyclic_mds", n=18, s=8)
    with pytest.raises(SchemeParameterError, match="n=24, s=6: a straggler set has decoding condition number"):
        make_scheme("cyclic_mds", n=24, s=6)  # the scan stops at the first set over the limit
    with pytest.raises(SchemeParameterError, match="n=64, s=2: the straggler set .* cannot be decoded in floating"):
        make_scheme("cyclic_mds", n=64, s=2)  # in well under a second (the whole scan took over a minute)
    with pytest.raises(SchemeParameterError, match="try another seed, cyclic_mds, or fr / cce_fr"):
        make_scheme("cr", n=19, s=7)


def test_parameter_errors_are_user_errors():
    assert issubclass(SchemeParameterError, GcbenchError)
    assert issubclass(SchemeParameterError, ValueError)
