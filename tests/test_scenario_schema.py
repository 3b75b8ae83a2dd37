"""Scenario validation: random valid scenarios run; random invalid ones get a message, never a traceback."""

from __future__ import annotations

import ast
import copy
import importlib.util
import typing
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gcbench.coding import available_schemes, scheme_class
from gcbench.policies import POLICIES
from gcbench.scenario.loading import ScenarioError, SweepPoint, load_scenario, validate
from gcbench.scenario.schema import Training
from gcbench.sim.runner import simulate_points
from gcbench.testing import valid_parameter_sets

FILE = Path("scenario.yaml")

distributions = st.one_of(
    st.builds(lambda v: {"distribution": "deterministic", "value": v}, st.floats(0.01, 2)),
    st.builds(lambda r: {"distribution": "exponential", "rate": r}, st.floats(0.5, 50)),
    st.builds(
        lambda a, r: {"distribution": "shifted_exponential", "shift": a, "rate": r},
        st.floats(0, 1),
        st.floats(0.5, 50),
    ),
    st.builds(lambda x, a: {"distribution": "pareto", "scale": x, "shape": a}, st.floats(0.01, 1), st.floats(1.1, 5)),
    st.builds(lambda m, s: {"distribution": "lognormal", "mu": m, "sigma": s}, st.floats(-3, 0), st.floats(0.1, 1)),
    st.builds(lambda k, s: {"distribution": "weibull", "shape": k, "scale": s}, st.floats(0.5, 3), st.floats(0.01, 1)),
    st.builds(
        lambda xs: {"distribution": "empirical", "samples": xs}, st.lists(st.floats(0.01, 1), min_size=1, max_size=5)
    ),
)


@st.composite
def policies(draw, n):
    k = draw(st.integers(1, n))
    return draw(
        st.sampled_from(
            [
                "wait_all",
                "decodable",
                {"name": "fastest_k", "k": k},
                {"name": "deadline", "deadline": 0.5, "fallback": draw(st.sampled_from(["wait", "approximate"]))},
                {"name": "k_async", "k": k},
                {"name": "k_batch_async", "k": k},
                "async",
            ]
        )
    )


@st.composite
def variants(draw, n):
    scheme = draw(st.sampled_from(available_schemes()))
    admitted = valid_parameter_sets(scheme, n)
    assume(admitted)  # a scheme may admit no parameters for some n (expander: no 1-vertex graph)
    s, params = draw(st.sampled_from(admitted))
    policy = policies(n)
    if scheme_class(scheme).sequential:  # a round ends once its stragglers fit the model and the job due decodes
        sequential = [
            "wait_all",
            "decodable",
            {"name": "deadline", "deadline": 0.5},
            {"name": "relative_deadline", "mu": 1},
        ]
        policy = st.sampled_from(sequential)
    elif scheme_class(scheme).pipelined:  # its cached partitions are refreshed once per synchronous step
        policy = policy.filter(lambda p: POLICIES.get(p if isinstance(p, str) else p["name"]).synchronous)
    return {"scheme": scheme, "s": s, **params, "policy": draw(policy)}


@st.composite
def scenarios(draw):
    n = draw(st.integers(1, 10))
    straggling = draw(
        st.sampled_from(
            [
                {"model": "none"},
                {"model": "independent", "probability": 0.2, "slowdown": 3, "delay_scaling": "load", "delay": 0.1},
                {"model": "markov", "enter": 0.1, "leave": 0.5, "delay": 0.2},
                {"model": "fixed", "workers": [0], "slowdown": 2},
            ]
        )
    )
    failures = draw(
        st.sampled_from(
            [
                {"model": "none"},
                {"model": "crash", "probability": 0.1, "downtime": 0.3},
                {"model": "crash", "rate": 0.5, "downtime": 1.0},
            ]
        )
    )
    return {
        "name": "random",
        "workers": n,
        "iterations": draw(st.integers(1, 15)),
        "seeds": draw(st.lists(st.integers(0, 100), min_size=1, max_size=2, unique=True)),
        "gradient": {"length": draw(st.integers(1, 10**7)), "dtype": draw(st.sampled_from(["float16", "float32"]))},
        "compute": {"per_partition": draw(distributions), "load": draw(st.sampled_from(["scale", "sum"]))},
        "straggling": straggling,
        "failures": failures,
        "network": {
            "latency": draw(st.floats(0, 0.01)),
            "bandwidth": draw(st.sampled_from([None, 1e8, 1e10])),
            "shared_link": draw(st.booleans()),
        },
        "stale_work": draw(st.sampled_from(["abandon", "finish"])),
        "variants": draw(st.lists(variants(n), min_size=1, max_size=3)),
    }


def validated_or_skip(data):
    try:
        return validate(data, FILE)
    except ScenarioError as error:
        # the only refusals a valid draw can meet: ill-conditioned codes, or two variants alike
        assume("numerically unusable" not in str(error) and "names more than one variant" not in str(error))
        raise


@given(data=scenarios())
def test_random_valid_scenarios_run(data):
    scenario = validated_or_skip(data)
    iterations, workers = simulate_points([SweepPoint({}, scenario)])
    runs = len(scenario.variants) * len(scenario.seeds)
    assert len(iterations) == runs * scenario.iterations
    assert len(workers) == runs * scenario.iterations * scenario.workers
    assert np.isfinite(iterations["duration"]).all() and (iterations["duration"] >= 0).all()


MUTATIONS = [
    lambda d: d.update(worker=3),
    lambda d: d.update(workers=0),
    lambda d: d.update(workers="twelve"),
    lambda d: d.update(iterations=-1),
    lambda d: d.update(seeds=[]),
    lambda d: d["compute"].update(per_partition={"distribution": "gamma", "k": 1}),
    lambda d: d["compute"].update(per_partition={"distribution": "exponential", "rate": -1}),
    lambda d: d["compute"].update(trace={"path": "x.csv"}),
    lambda d: d["compute"].update(speeds=[1.0] * (d["workers"] + 1)),
    lambda d: d.update(straggling={"model": "independent", "probability": 1.5}),
    lambda d: d.update(straggling={"model": "fixed", "workers": [99]}),
    lambda d: d.update(failures={"model": "crash"}),
    lambda d: d["network"].update(bandwidth=0),
    lambda d: d["network"].update(colour="blue"),
    lambda d: d["variants"][0].update(s=d["workers"]),
    lambda d: d["variants"][0].update(scheme="mds"),
    lambda d: d["variants"][0].update(policy="sometimes"),
    lambda d: d["variants"][0].update(policy={"name": "fastest_k", "k": 10**6}),
    lambda d: d["variants"][0].update(extra=1),
    lambda d: d.update(variants=[]),
    lambda d: d.update(stale_work="maybe"),
]


@given(data=scenarios(), mutation=st.sampled_from(MUTATIONS))
def test_random_invalid_scenarios_get_a_message_not_a_traceback(data, mutation):
    broken = copy.deepcopy(data)
    mutation(broken)
    with pytest.raises(ScenarioError) as caught:
        validate(broken, FILE)
    message = str(caught.value)
    assert message.startswith("scenario.yaml: ") and "Traceback" not in message


def test_problems_name_their_fields(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: t\nworkers: 12\niterations: 5\ncompute: {per_partition: {distribution: exponential, rate: 1}}\n"
        "variants:\n  - {scheme: fr, s: 2}\n  - {scheme: cr, s: 1}\n  - {scheme: cr, s: 12}\n  - {scheme: fr, s: 4}\n"
    )
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    message = str(caught.value)
    assert "variants[2].s: must be < workers (12)" in message
    assert "variants[3]: fr needs (s+1) to divide n: s+1=5 does not divide n=12" in message


def test_unknown_keys_are_errors(tmp_path):
    path = tmp_path / "s.yaml"
    compute = "compute: {per_partition: {distribution: exponential, rate: 1}}\n"
    path.write_text(
        "name: t\nworkers: 4\niterations: 5\nitterations: 6\n" + compute + "variants: [{scheme: uncoded}]\n"
    )
    with pytest.raises(ScenarioError, match="itterations: unknown field"):
        load_scenario(path)


def test_sweep_expands_a_grid_and_reports_bad_points(tmp_path):
    path = tmp_path / "s.yaml"
    base = "name: t\nworkers: 4\niterations: 5\ncompute: {per_partition: {distribution: exponential, rate: 1}}\n"
    path.write_text(
        base + "variants: [{scheme: fr, s: 1}]\nsweep: {compute.per_partition.rate: [1, 2], 'variants[0].s': [0, 1]}\n"
    )
    points = load_scenario(path)
    assert [p.values for p in points][:2] == [
        {"compute.per_partition.rate": 1, "variants[0].s": 0},
        {"compute.per_partition.rate": 1, "variants[0].s": 1},
    ]
    assert points[3].scenario.compute.per_partition.rate == 2 and points[3].scenario.variants[0].s == 1
    path.write_text(base + "variants: [{scheme: fr, s: 1}]\nsweep: {'variants[0].s': [1, 2]}\n")
    with pytest.raises(ScenarioError, match=r"sweep point variants\[0\].s=2\): variants\[0\]: fr needs"):
        load_scenario(path)


def test_bad_yaml_and_missing_files(tmp_path):
    with pytest.raises(ScenarioError, match="no such scenario file"):
        load_scenario(tmp_path / "absent.yaml")
    (tmp_path / "bad.yaml").write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(tmp_path / "bad.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ScenarioError, match="must be a YAML mapping"):
        load_scenario(tmp_path / "list.yaml")


def test_exponent_numbers_are_numbers(tmp_path):
    """YAML 1.1 would read 1.25e9 as a string; sweeps over bandwidths must stay numeric."""
    path = tmp_path / "s.yaml"
    base = "name: t\nworkers: 4\niterations: 5\ncompute: {per_partition: {distribution: exponential, rate: 1e1}}\n"
    path.write_text(
        base + "variants: [{scheme: uncoded}]\nnetwork: {bandwidth: 1.25e9}\nsweep: {network.latency: [1e-3, 2E-2]}\n"
    )
    points = load_scenario(path)
    assert points[0].scenario.network.bandwidth == 1.25e9 and points[0].scenario.compute.per_partition.rate == 10.0
    assert [p.values["network.latency"] for p in points] == [0.001, 0.02]


def test_a_missing_trace_file_is_caught_when_loading(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: t\nworkers: 4\niterations: 5\ncompute: {trace: {path: nope.csv}}\nvariants: [{scheme: uncoded}]\n"
    )
    with pytest.raises(ScenarioError, match=f"compute.trace.path: no such file: {tmp_path}/nope.csv"):
        load_scenario(path)


def test_messages_end_with_one_full_stop(tmp_path):
    path = tmp_path / "s.yaml"
    base = "name: t\nworkers: 12\niterations: 5\ncompute: {per_partition: {distribution: exponential, rate: 1}}\n"
    path.write_text(base + "variants: [{scheme: fr, s: 4}]\n")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value).endswith("does not divide n=12.") and ".." not in str(caught.value)


def registered_model_names(source: str) -> list[str]:
    """The keys of the ``MODELS = {...}`` literal in gcbench/training/models.py's source (importing it needs torch)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["MODELS"]:
            assert isinstance(node.value, ast.Dict), "MODELS must stay a dict literal, so its names read without torch"
            return [ast.literal_eval(key) for key in node.value.keys]
    raise AssertionError("gcbench/training/models.py no longer assigns MODELS")


def test_the_schemas_training_models_are_exactly_the_registrys_without_torch():
    """The schema may not import the training layer (torch); tests/test_training.py holds the two equal but
    skips without the [real] extra, so this reads the registry from its source and runs everywhere."""
    origin = importlib.util.find_spec("gcbench.training.models").origin  # the package root imports nothing
    names = registered_model_names(Path(origin).read_text())
    assert names == list(typing.get_args(Training.model_fields["model"].annotation))


def test_the_model_registry_reader_reads_the_names_and_refuses_a_registry_it_cannot_read():
    assert registered_model_names('X = 1\nMODELS = {"small_cnn": small_cnn, "vit": vit}\n') == ["small_cnn", "vit"]
    with pytest.raises(AssertionError, match="dict literal"):
        registered_model_names("MODELS = dict(small_cnn=small_cnn)\n")
