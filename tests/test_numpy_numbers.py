"""The public API takes numpy numbers wherever it takes Python's (as scikit-learn does), and stores Python's.

A user iterating ``for w in np.arange(n)`` or sweeping parameters with numpy passes numpy integers and floats;
each is an int or a float to the library (``numbers.Integral`` / ``numbers.Real``, never a bool), and what the
library keeps (parameters, ids, run.json) holds the Python numbers, so outputs and messages stay clean.
"""

from __future__ import annotations

import json
import typing

import numpy as np
import pytest

from gcbench.coding import SchemeParameterError, available_schemes, make_scheme, scheme_class
from gcbench.policies import POLICIES
from gcbench.scenario.loading import validate
from gcbench.testing import partition_gradients, valid_parameter_sets

N = 4


def numpy_like(value):
    """The same value as numpy would hand it over: int64 for an int, float32/64 for a float, arrays for lists."""
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return np.int64(value)
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, list):
        return np.array(value)
    return value


def python_types(values) -> bool:
    return all(type(v) in (int, float, bool, str) for v in values)


def test_the_reported_call_works():
    assert make_scheme("frc", n=30, s=10, d=3).messages(np.int64(0)) == (0,)


@pytest.mark.parametrize("name", available_schemes())
def test_every_scheme_builds_from_numpy_parameters_and_takes_numpy_workers_and_ids(name):
    """Each test parameter set the scheme declares builds with numpy n, s and parameters into the scheme the Python
    numbers build (parameters stored as Python's), and every public method takes numpy workers, steps and ids."""
    built = 0
    for s, params in valid_parameter_sets(name, N):
        try:
            reference = make_scheme(name, n=N, s=s, **params)
        except SchemeParameterError:
            continue  # refused as numerically unusable: test_scheme_api checks the refusal
        scheme = make_scheme(name, n=np.int64(N), s=np.int32(s), **{k: numpy_like(v) for k, v in params.items()})
        built += 1
        assert (type(scheme.n), type(scheme.s), type(scheme.m)) == (int, int, int)
        assert scheme.params == reference.params and python_types(_flat(scheme.params.values()))
        assert repr(scheme) == repr(reference) and "np." not in repr(scheme)
        np.testing.assert_array_equal(scheme.coefficients, reference.coefficients)

        grads = partition_gradients(scheme.k, 5, np.random.default_rng(built))
        received = {}
        for w in np.arange(N):
            assert scheme.partitions(w) == reference.partitions(int(w))
            assert scheme.messages(w) == reference.messages(int(w))
            assert scheme.step_load(w) == reference.step_load(int(w))
            assert scheme.computes(w, np.int64(3)) == reference.computes(int(w), 3)
            if hasattr(scheme, "scheduled_ages"):
                ages = scheme.scheduled_ages(w, np.int64(3))
                assert ages == reference.scheduled_ages(int(w), 3) and python_types(ages.values())
            for mid in scheme.messages(w):
                assert scheme.ready_after(np.int64(mid)) == reference.ready_after(mid)
            received[w] = scheme.encode(w, grads)
            for mine, theirs in zip(received[w], reference.encode(int(w), grads), strict=True):
                np.testing.assert_array_equal(mine, theirs)

        ids = np.arange(len(scheme.message_owner))
        assert scheme.can_decode(ids) == reference.can_decode(ids.tolist())
        assert scheme.decode_quality(ids) == reference.decode_quality(ids.tolist())
        decoding = scheme.approximate_decoding(ids)
        assert decoding.message_ids == tuple(ids.tolist()) and python_types(decoding.message_ids)
        np.testing.assert_array_equal(
            scheme.decode(received, approximate=True),
            reference.decode({int(w): m for w, m in received.items()}, approximate=True),
        )
    assert built, f"{name} declares no parameter set it builds at n = {N}"


def _flat(values):
    for value in values:
        yield from (value if isinstance(value, list) else [value])


def test_numpy_floats_and_arrays_where_a_scheme_takes_real_numbers():
    speeds = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    scheme = make_scheme("heterogeneous", n=4, s=1, speeds=speeds)
    assert scheme.params["speeds"] == [1.0, 2.0, 3.0, 4.0] and python_types(scheme.params["speeds"])
    assert make_scheme("heterogeneous", n=4, s=1, speeds=list(speeds)).params == scheme.params


@pytest.mark.parametrize("bad", [True, np.bool_(True), 2.0, np.float64(2.0), "2"])
def test_bools_and_non_integers_stay_refused_and_the_message_shows_python_numbers(bad):
    with pytest.raises(SchemeParameterError, match=r"The 'worker' parameter of frc must be an int in \[0, 29\]"):
        make_scheme("frc", n=30, s=10, d=3).messages(bad)
    with pytest.raises(SchemeParameterError, match=r"'d' parameter of frc must be an int") as raised:
        make_scheme("frc", n=30, s=10, d=bad)
    assert "np." not in str(raised.value)


def test_a_numpy_error_value_is_shown_as_the_python_number():
    with pytest.raises(SchemeParameterError) as raised:
        make_scheme("cr", n=np.float64(6.5), s=0)
    assert str(raised.value).endswith("Got 6.5 instead.")
    with pytest.raises(SchemeParameterError) as raised:
        make_scheme("cr", n=6, s=np.int64(-1))
    assert str(raised.value).endswith("Got -1 instead.")


def _number_fields(cls) -> dict[str, tuple[type, int]]:
    """A registered class's fields that take one int or one float, with a valid whole value (its default's, or 2)."""
    found = {}
    for name, field in cls.model_fields.items():
        annotation = field.annotation
        while typing.get_origin(annotation) is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        if annotation in (int, float):
            default = field.default
            found[name] = (annotation, int(default) if isinstance(default, int | float) else 2)
    return found


def test_the_policy_registry_has_numeric_parameters_to_check():
    assert any(_number_fields(cls) for cls in POLICIES.classes())


@pytest.mark.parametrize("name", POLICIES.names())
@pytest.mark.parametrize("kind", [np.int64, np.int32, np.float64, np.float32])
def test_every_policy_takes_numpy_numbers_for_its_numeric_parameters_and_stores_python_ones(name, kind):
    cls = POLICIES.get(name)
    fields = _number_fields(cls)
    policy = cls(name=name, **{field: kind(value) for field, (_, value) in fields.items()})
    for field, (annotation, value) in fields.items():
        assert type(getattr(policy, field)) is annotation and getattr(policy, field) == value
    plain = cls(name=name, **{field: value for field, (_, value) in fields.items()})
    assert json.loads(policy.model_dump_json()) == json.loads(plain.model_dump_json())


def test_a_scenario_built_in_python_from_numpy_numbers_validates_and_writes_plain_json():
    data = {
        "name": "numpy",
        "workers": np.int64(6),
        "iterations": np.int64(3),
        "seeds": list(np.arange(2)),
        "compute": {"per_partition": {"distribution": "exponential", "rate": np.float32(10)}},
        "straggling": {"model": "independent", "probability": np.float64(0.1), "slowdown": np.int64(3)},
        "failures": {"model": "crash", "probability": np.float32(0.01), "downtime": np.int64(2)},
        "variants": [
            {"scheme": "frc", "s": np.int64(1), "d": np.int64(2), "policy": {"name": "fastest_k", "k": np.int32(5)}},
            {"scheme": "heterogeneous", "s": np.int64(1), "speeds": np.arange(1.0, 7.0)},
        ],
        "sweep": {"straggling.slowdown": [np.int64(2), np.float64(4.5)]},
    }
    scenario = validate(data, "numpy.yaml")
    assert scenario.variants[0].scheme_params() == {"d": 2} and type(scenario.variants[0].scheme_params()["d"]) is int
    assert scenario.variants[1].scheme_params() == {"speeds": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}
    assert scenario.variants[0].display_label() == "frc(s=1,d=2)/fastest_k"
    assert scenario.sweep == {"straggling.slowdown": [2, 4.5]}
    assert python_types(scenario.sweep["straggling.slowdown"])
    written = json.loads(scenario.model_dump_json())
    assert written["variants"][0]["d"] == 2 and written["seeds"] == [0, 1]
    assert scheme_class("frc")  # the scheme the variant names builds from the stored parameters
    make_scheme("frc", n=scenario.workers, s=scenario.variants[0].s, **scenario.variants[0].scheme_params())
