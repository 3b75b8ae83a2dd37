"""The fast path is the SimPy model: the event engine (the master on the SimPy cluster) gives the
vectorised engine's tables from the same seed, and the asynchronous master gives the calendar engine's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from calendar_reference import simulate_calendar
from hypothesis import assume, example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from gcbench.cluster import Failure, Restart, Result, available_clusters
from gcbench.coding import SchemeParameterError, available_schemes, make_scheme, scheme_class
from gcbench.errors import GcbenchError
from gcbench.results.messages import sends_several
from gcbench.scenario import load_scenario
from gcbench.scenario.build import scheme_for
from gcbench.scenario.draws import draw_run
from gcbench.scenario.loading import SweepPoint
from gcbench.scenario.schema import Scenario
from gcbench.sim.cluster import SimPyCluster
from gcbench.sim.engines import engine_for
from gcbench.sim.event import simulate_event
from gcbench.sim.tasks import Task, run_task
from gcbench.testing import valid_parameter_sets

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
RTOL = 1e-9


def tables(point: SweepPoint, index: int, engine: str, seed: int = 0):
    scenario = point.scenario.model_copy(update={"engine": engine})
    iterations, workers = run_task(SweepPoint(point.values, scenario), 0, Task(0, index, seed), True)
    return pd.DataFrame(iterations), pd.DataFrame(workers)


def assert_frames_match(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Times equal to 1e-9 relative (the engines add the same floats in different orders); the rest exactly."""
    assert list(a.columns) == list(b.columns)
    for column in a.columns:
        left, right = a[column].to_numpy(), b[column].to_numpy()
        if left.dtype.kind == "f":
            np.testing.assert_allclose(left, right, rtol=RTOL, atol=0, equal_nan=True, err_msg=column)
        else:
            assert np.array_equal(left, right), f"column {column} differs"


def outcome(point: SweepPoint, index: int, engine: str, seed: int = 0):
    """Both tables, or the error's sentence when the run can never finish."""
    try:
        return tables(point, index, engine, seed)
    except GcbenchError as error:
        return str(error)


def assert_engines_agree(point: SweepPoint, index: int, seed: int = 0) -> None:
    fast, event = outcome(point, index, "vectorised", seed), outcome(point, index, "event", seed)
    if isinstance(fast, str) or isinstance(event, str):
        assert fast == event
        return
    assert_frames_match(fast[0], event[0])
    assert_frames_match(fast[1], event[1])


POLICIES = st.one_of(
    st.sampled_from(["wait_all", "decodable"]).map(lambda name: {"name": name}),
    st.integers(1, 8).map(lambda k: {"name": "fastest_k", "k": k}),
    st.sampled_from([0.33, 0.95, 1.7, 4.1]).map(lambda d: {"name": "deadline", "deadline": d}),
).flatmap(lambda p: st.sampled_from(["wait", "approximate"]).map(lambda f: {**p, "fallback": f})) | st.builds(
    lambda mu, wait_for, fewer: {"name": "relative_deadline", "mu": mu, "wait_for": wait_for, "fewer_than_s": fewer},
    st.sampled_from([0.0, 0.2, 1.0]),
    st.sampled_from(["all", "decodable"]),
    st.booleans(),
)


@st.composite
def one_message_schemes(draw, n: int) -> dict:
    """Any registered scheme, with an (s, parameters) of its own test parameter sets for n workers, whose workers
    send one message each: the vectorised engine sends a worker's messages together, so it refuses the others; and
    not a pipelined one, whose staleness (the ages of its workers' caches) only the event engine's master keeps."""
    name = draw(st.sampled_from(available_schemes()))
    admitted = valid_parameter_sets(name, n)
    assume(admitted)
    s, params = draw(st.sampled_from(admitted))
    try:
        scheme = make_scheme(name, n=n, s=s, **params)
    except SchemeParameterError:  # refused as numerically unusable
        assume(False)
    assume(not sends_several(scheme) and not scheme.pipelined)
    return {"scheme": name, "s": s, **params}


STRAGGLING = st.sampled_from(
    [
        {"model": "none"},
        {"model": "independent", "probability": 0.2, "slowdown": 4.0},
        {"model": "markov", "enter": 0.1, "leave": 0.3, "delay": 1.5},
        {"model": "fixed", "workers": [0], "delay": 2.0, "delay_scaling": "load"},
    ]
)
FAILURES = st.sampled_from(
    [
        {"model": "none"},
        {"model": "crash", "probability": 0.1, "downtime": 0.8},
        {"model": "crash", "probability": 0.15, "downtime": 3.0},
        {"model": "crash", "rate": 0.05, "downtime": None},
    ]
)
# a node's workers straggling and crashing together (level: node): synchronous policies only
NODE_STRAGGLING = st.sampled_from(
    [
        {"model": "independent", "level": "node", "probability": 0.3, "slowdown": 3.0},
        {"model": "markov", "level": "node", "enter": 0.2, "leave": 0.4, "delay": 1.5},
        {"model": "fixed", "level": "node", "nodes": [0], "delay": 1.0},
        {
            "model": "independent",
            "level": "node",
            "probability": 0.2,
            "delay": 1.0,
            "also": {"model": "markov", "enter": 0.1, "leave": 0.4, "slowdown": 2.0},
        },
    ]
)
NODE_FAILURES = st.sampled_from(
    [
        {"model": "none"},
        {"model": "crash", "level": "node", "probability": 0.1, "downtime": 0.8},
        {"model": "crash", "level": "node", "rate": 0.05, "downtime": None},
    ]
)
NETWORK = st.sampled_from(
    [
        {},
        {"latency": 0.05},
        {"latency": 0.01, "bandwidth": 2e8},
        {"latency": 0.02, "bandwidth": 1e8, "shared_link": True},
    ]
)
# where the workers run, and the links they share fairly (gcbench/models/wire.py): nodes' uplinks, the master's
# ingress, a node of its own rate and latency
TOPOLOGIES = st.sampled_from(
    [
        None,
        ({"nodes": 2}, {"bandwidth": 1e8}),
        ({"nodes": 3, "placement": "pack"}, {"bandwidth": 2e8, "master": {"ingress": 3e8}}),
        ({"nodes": 3}, {"latency": 0.01, "bandwidth": 1e8, "nodes": {2: {"bandwidth": 2e7, "latency": 0.04}}}),
        ({"nodes": 1}, {"latency": 0.02}),
        (None, {"latency": 0.01, "bandwidth": 2e8, "master": {"ingress": 4e8}}),
        # the weights' way out: the master's egress, nodes' downlinks
        ({"nodes": 3}, {"bandwidth": 1e8, "downlink": 5e7, "master": {"egress": 2e8}}),
        ({"nodes": 2, "placement": "pack"}, {"nodes": {1: {"downlink": 4e7, "latency": 0.02}}}),
        (None, {"master": {"egress": 3e8}}),
        # flows weighted by their order of joining a link (network.unfairness)
        ({"nodes": 3, "placement": "pack"}, {"bandwidth": 2e8, "master": {"ingress": 3e8}, "unfairness": 0.4}),
        ({"nodes": 2}, {"bandwidth": 1e8, "downlink": 5e7, "unfairness": 0.7}),
        # token buckets on the nodes' links (network.burst): smaller than a message, and larger
        ({"nodes": 3, "placement": "pack"}, {"bandwidth": 2e8, "burst": 1.5e6, "master": {"ingress": 3e8}}),
        ({"nodes": 2}, {"bandwidth": 1e8, "downlink": 5e7, "burst": 6e6, "unfairness": 0.3}),
        ({"nodes": 3}, {"bandwidth": 1e8, "nodes": {2: {"bandwidth": 2e7, "burst": 3e6}}}),
        # each variant's workers placed by its code
        ({"nodes": 3, "placement": "by_code"}, {"bandwidth": 1e8, "master": {"ingress": 2e8}}),
    ]
)
# the times around the compute a calibrated scenario models: a job's dispatch, the master's time between iterations
TIMINGS = st.sampled_from(
    [
        {},
        {"dispatch": {"distribution": "exponential", "rate": 20.0}},
        {"between_iterations": {"distribution": "shifted_exponential", "shift": 0.01, "rate": 50.0}},
        {
            "dispatch": {"distribution": "deterministic", "value": 0.03},
            "between_iterations": {"distribution": "lognormal", "mu": -3.0, "sigma": 0.5},
        },
    ]
)
COMPUTE = st.sampled_from(
    [
        {"per_partition": {"distribution": "exponential", "rate": 2.0}},
        {"per_partition": {"distribution": "shifted_exponential", "shift": 0.2, "rate": 5.0}, "load": "sum"},
        {"per_partition": {"distribution": "pareto", "scale": 0.1, "shape": 2.5}},
        {"per_partition": {"distribution": "deterministic", "value": 0.25}},  # ties: all arrive at once
        # Tandon et al.'s model B: a per-iteration overhead the load does not scale
        {
            "per_partition": {"distribution": "deterministic", "value": 0.02},
            "overhead": {"distribution": "exponential", "rate": 10.0},
        },
    ]
)


@st.composite
def synchronous_points(draw) -> SweepPoint:
    workers = draw(st.sampled_from([4, 6, 8]))
    scheme = draw(one_message_schemes(workers))
    compute = draw(COMPUTE)
    data = {
        "name": "engines",
        "workers": workers,
        "iterations": draw(st.integers(3, 25)),
        "compute": compute,
        "straggling": draw(STRAGGLING),
        "failures": draw(FAILURES),
        "network": draw(NETWORK),
        "stale_work": draw(st.sampled_from(["abandon", "finish"])),
        "master": {},
        "gradient": {"length": 1_000_000},
        "variants": [{**scheme, "policy": draw(POLICIES)}],
    }
    if compute["per_partition"]["distribution"] == "deterministic" and "overhead" not in compute:
        # Equal times everywhere make events of different iterations coincide in exact arithmetic (a restart
        # and an arrival, stale work and a new job), which the engines' different float sums (start plus
        # cumulative stops, against absolute event times) then split. Within one iteration, ties are kept, save
        # one: a Markov straggler's delay (1.5 s) lands on a relative deadline (first arrival x (1 + mu)) exactly
        # where a load of 6 makes the first arrival 1.5 s (a topology's workers on node 0 cross no link to
        # blur it), and the two engines' sums put the straggler an ulp either side of the deadline.
        data.update(failures={"model": "none"}, stale_work="abandon")
        if data["straggling"]["model"] == "markov":
            data.update(straggling={"model": "independent", "probability": 0.2, "slowdown": 4.0})
    timings = draw(TIMINGS)
    if "dispatch" in timings:
        data["network"] = {**data["network"], "dispatch": timings["dispatch"]}
    if "between_iterations" in timings:
        data["master"] = {"between_iterations": timings["between_iterations"]}
        if data["failures"]["model"] != "none":
            # a recovered worker's late jobs wait for the master's time between iterations: the event engine's
            # alone (auto picks it; test_master_time_defers_a_recovered_worker_s_late_jobs)
            data.update(stale_work="abandon")
    wire = draw(TOPOLOGIES)
    if wire is not None:
        topology, network = wire
        dispatch = {"dispatch": data["network"]["dispatch"]} if "dispatch" in data["network"] else {}
        data["network"] = {**network, **dispatch}
        if topology is not None:
            data["topology"] = topology
        data.update(stale_work="abandon")  # (late work on the links the run shares: the event engine's alone)
        if "egress" in network.get("master", {}) or "downlink" in str(network):
            data.update(failures={"model": "none"})  # (a redone job's weights: the event engine's alone)
    if data["network"].get("shared_link"):
        # late work on the one link of the run (stale_work: finish) is the event engine's alone: auto picks it
        # (tests/test_simpy_cluster.py); the fast path's link per iteration is the model under abandon
        data.update(stale_work="abandon")
    if draw(st.booleans()):  # a node's workers straggle and crash together
        data.update(straggling=draw(NODE_STRAGGLING))
        if data["failures"]["model"] != "none":
            data.update(failures=draw(NODE_FAILURES))
        if "topology" not in data and not data["network"].get("shared_link"):
            data["topology"] = {"nodes": 2, "placement": draw(st.sampled_from(["spread", "pack"]))}
            data.update(stale_work="abandon")  # (a topology's links under finish: the event engine's alone)
        if "topology" not in data:  # (the FIFO shared link takes no topology)
            data.update(straggling=draw(STRAGGLING), failures=draw(FAILURES))
    try:
        return SweepPoint({}, Scenario.model_validate(data))
    except ValidationError:
        return SweepPoint({}, Scenario.model_validate({**data, "variants": [{"scheme": "uncoded"}]}))


def _point(**fields) -> SweepPoint:
    data = {"name": "engines", "workers": 6, "iterations": 30, "gradient": {"length": 1_000_000}}
    data["variants"] = [{"scheme": "uncoded"}]
    data["compute"] = {"per_partition": {"distribution": "exponential", "rate": 2.0}}
    return SweepPoint({}, Scenario.model_validate({**data, **fields}))


@given(synchronous_points(), st.integers(0, 3))
@example(  # a backlogged worker's crash under finish: its redo comes before the jobs queued behind it
    _point(
        stale_work="finish",
        failures={"model": "crash", "probability": 0.1, "downtime": 0.7},
        variants=[{"scheme": "cr", "s": 1, "policy": {"name": "deadline", "deadline": 1.5, "fallback": "approximate"}}],
        iterations=60,
    ),
    0,
)
@example(  # a worker still down at the stop never starts that iteration's job (abandon)
    _point(failures={"model": "crash", "probability": 0.2, "downtime": 3.0}, variants=[{"scheme": "fr", "s": 1}]),
    1,
)
@example(  # the clock stands an ulp short of a restart scheduled for an absolute time: the worker is back then
    _point(
        workers=8,
        iterations=10,
        compute={"per_partition": {"distribution": "pareto", "scale": 0.1, "shape": 2.5}},
        failures={"model": "crash", "probability": 0.15, "downtime": 3.0},
        stale_work="finish",
        variants=[{"scheme": "fr", "s": 1, "policy": {"name": "fastest_k", "k": 1}}],
    ),
    0,
)
@example(  # every result at one instant, the relative deadline's own (mu = 0): the master decides on them together
    _point(
        workers=4,
        iterations=3,
        compute={"per_partition": {"distribution": "deterministic", "value": 0.25}},
        variants=[{"scheme": "ignore_stragglers", "s": 1, "policy": {"name": "relative_deadline", "mu": 0.0}}],
    ),
    0,
)
@example(  # a job still on its way at the stop sends nothing: the late messages on the shared links go faster
    _point(
        workers=8,
        iterations=16,
        compute={
            "per_partition": {"distribution": "deterministic", "value": 0.02},
            "overhead": {"distribution": "exponential", "rate": 10.0},
        },
        network={
            "bandwidth": 2e8,
            "master": {"ingress": 3e8},
            "dispatch": {"distribution": "exponential", "rate": 20.0},
        },
        topology={"nodes": 3, "placement": "pack"},
        variants=[{"scheme": "ignore_stragglers", "s": 2, "policy": "decodable"}],
    ),
    0,
)
@example(  # sr_sgc's first round needs no result: a deadline ends it at the deadline, as the master does
    _point(
        workers=4,
        iterations=3,
        variants=[
            {
                "scheme": "sr_sgc",
                "s": 2,
                "burst": 1,
                "window": 2,
                "lam": 4,
                "policy": {"name": "deadline", "deadline": 0.33},
            },
        ],  # fmt: skip
    ),
    0,
)
@example(  # sr_sgc, whose rounds the fast path steps one at a time
    _point(
        straggling={"model": "markov", "enter": 0.1, "leave": 0.3, "delay": 1.5},
        failures={"model": "crash", "probability": 0.1, "downtime": 0.8},
        variants=[{"scheme": "sr_sgc", "s": 1, "burst": 1, "window": 2, "lam": 2}],
    ),
    2,
)
def test_event_engine_gives_the_vectorised_tables(point, seed):
    assert_engines_agree(point, 0, seed)


def one_message_instance(name: str, n: int) -> dict | None:
    """The scheme's middle test parameter set for n workers that builds and sends one message per worker."""
    admitted = valid_parameter_sets(name, n)
    for s, params in admitted[len(admitted) // 2 :] + admitted[: len(admitted) // 2]:
        try:
            scheme = make_scheme(name, n=n, s=s, **params)
            if not (sends_several(scheme) or scheme.pipelined):  # (the vectorised engine refuses them)
                return {"scheme": name, "s": s, **params}
        except SchemeParameterError:
            continue
    return None


ONE_MESSAGE = {name: one_message_instance(name, 6) for name in available_schemes()}


@pytest.mark.parametrize("name", [name for name, variant in ONE_MESSAGE.items() if variant])
@pytest.mark.parametrize(
    "policy",
    ["decodable", {"name": "deadline", "deadline": 0.95, "fallback": "approximate"}],
    ids=["decodable", "deadline"],
)
def test_every_one_message_scheme_gives_the_vectorised_tables_on_the_event_engine(name, policy):
    """Hypothesis samples some schemes of the registry in its examples; this runs each one of them once."""
    if scheme_class(name).sequential and policy != "decodable":  # (it decodes exactly or waits: never approximate)
        policy = {"name": "relative_deadline", "mu": 1.0}
    point = _point(
        variants=[{**ONE_MESSAGE[name], "policy": policy}],
        straggling={"model": "independent", "probability": 0.2, "slowdown": 4.0},
        failures={"model": "crash", "probability": 0.1, "downtime": 0.8},
        network={"latency": 0.05},
        iterations=20,
    )
    assert_engines_agree(point, 0)


ASYNC_POLICIES = [{"name": "k_async", "k": 3}, {"name": "k_batch_async", "k": 4}, {"name": "async"}]


@given(
    st.sampled_from(ASYNC_POLICIES),
    STRAGGLING,
    FAILURES,
    NETWORK,
    st.integers(0, 3),
)
def test_asynchronous_master_gives_the_calendar_engine_tables(policy, straggling, failures, network, seed):
    point = _point(
        variants=[{"scheme": "uncoded", "policy": policy}],
        straggling=straggling,
        failures=failures,
        network=network,
        iterations=40,
    )
    assert_asynchronous_engines_agree(point, 0, seed)


def assert_asynchronous_engines_agree(point: SweepPoint, index: int, seed: int = 0) -> None:
    scenario, variant = point.scenario, point.scenario.variants[index]
    scheme = scheme_for(scenario, variant)
    try:
        reference = simulate_calendar(scenario, variant, scheme, seed)
    except GcbenchError as error:
        with pytest.raises(GcbenchError) as raised:
            simulate_event(scenario, variant, scheme, seed)
        assert str(raised.value) == str(error)
        return
    event = simulate_event(scenario, variant, scheme, seed)
    loads = np.array([len(scheme.partitions(w)) for w in range(scenario.workers)])
    assert_frames_match(pd.DataFrame(reference.iteration_columns()), pd.DataFrame(event.iteration_columns()))
    assert_frames_match(pd.DataFrame(reference.worker_columns(loads)), pd.DataFrame(event.worker_columns(loads)))


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_shipped_scenario_runs_the_same_on_both_engines(path):
    for point in load_scenario(path):
        # untrained: the vectorised engine computes no gradients; training keeps the times (tests/test_sim_training.py)
        untrained = point.scenario.training.model_copy(update={"in_simulator": False})
        point = SweepPoint(point.values, point.scenario.model_copy(update={"iterations": 40, "training": untrained}))
        for index, variant in enumerate(point.scenario.variants):
            if scheme_for(point.scenario, variant).pipelined:
                assert engine_for(point.scenario, variant) == "event"  # the only engine that keeps cache ages
            elif not scheme_for(point.scenario, variant).streams_messages:
                assert engine_for(point.scenario, variant) == "event"  # the only one that takes M-SGC's mini-tasks
            elif variant.policy.synchronous:
                assert_engines_agree(point, index)
            else:
                assert_asynchronous_engines_agree(point, index)


def test_master_time_defers_a_recovered_worker_s_late_jobs():
    """Under stale_work: finish a worker back from a crash while the master spends its time between iterations
    gets its pending jobs once the master is done: only the event engine's master models that."""
    fields = {
        "master": {"between_iterations": {"distribution": "deterministic", "value": 0.5}},
        "failures": {"model": "crash", "probability": 0.2, "downtime": 0.3},
        "stale_work": "finish",
        "variants": [{"scheme": "fr", "s": 1}],
    }
    late = _point(**fields).scenario
    assert engine_for(late, late.variants[0]) == "event"
    assert engine_for(late.model_copy(update={"stale_work": "abandon"}), late.variants[0]) == "vectorised"
    with pytest.raises(GcbenchError, match="master.between_iterations, stale_work: finish and failures"):
        engine_for(late.model_copy(update={"engine": "vectorised"}), late.variants[0])
    rec = simulate_event(late, late.variants[0], scheme_for(late, late.variants[0]), 0)
    gaps = rec.start[1:] - rec.end[:-1]
    assert gaps == pytest.approx([0.5] * (len(gaps)), rel=1e-9)


def test_auto_takes_the_fast_path_only_for_synchronous_policies():
    point = _point(variants=[{"scheme": "fr", "s": 1}, {"scheme": "uncoded", "policy": {"name": "k_async", "k": 2}}])
    synchronous, asynchronous = point.scenario.variants
    assert engine_for(point.scenario, synchronous) == "vectorised"
    assert engine_for(point.scenario, asynchronous) == "event"
    event = point.scenario.model_copy(update={"engine": "event"})
    assert engine_for(event, synchronous) == "event"
    pipelined = _point(variants=[{"scheme": "pipelined_cr", "s": 1}]).scenario
    assert engine_for(pipelined, pipelined.variants[0]) == "event"  # its staleness: the master's cache ages
    with pytest.raises(GcbenchError, match="engine: vectorised keeps no worker caches, and variant 'pipelined_cr"):
        engine_for(pipelined.model_copy(update={"engine": "vectorised"}), pipelined.variants[0])
    late = _point(variants=[{"scheme": "fr", "s": 1}], network=SHARED, stale_work="finish").scenario
    assert engine_for(late, late.variants[0]) == "event"  # late work shares the link: the fast path cannot say so
    assert engine_for(late.model_copy(update={"stale_work": "abandon"}), late.variants[0]) == "vectorised"


def test_the_vectorised_engine_refuses_an_asynchronous_policy():
    point = _point(engine="vectorised", variants=[{"scheme": "uncoded", "policy": "async"}])
    with pytest.raises(GcbenchError, match="engine: vectorised covers synchronous policies only"):
        engine_for(point.scenario, point.scenario.variants[0])


def simpy_cluster(point: SweepPoint, seed: int = 0) -> SimPyCluster:
    scenario, variant = point.scenario, point.scenario.variants[0]
    scheme = scheme_for(scenario, variant)
    return SimPyCluster(scenario, scheme, draw_run(scenario, scheme, seed), link_per_job=True)


def test_messages_reaching_the_shared_link_at_once_queue_in_worker_order():
    """As the fast path's stable sort has it, whatever order their jobs were submitted in."""
    point = _point(
        compute={"per_partition": {"distribution": "deterministic", "value": 0.5}},
        network={"latency": 0.0, "bandwidth": 4e7, "shared_link": True},  # 0.1 s per message
    )
    cluster = simpy_cluster(point)
    for w in (2, 1, 0):
        cluster.submit(w, 0, 0, False)
    arrivals = [cluster.next_event(float("inf")) for _ in range(3)]
    assert [event.worker for event in arrivals] == [0, 1, 2]
    assert [event.at for event in arrivals] == pytest.approx([0.6, 0.7, 0.8])


def test_a_crash_fails_at_once_and_restarts_after_the_downtime():
    point = _point(failures={"model": "crash", "probability": 0.1, "downtime": 2.0})
    cluster = simpy_cluster(point)
    job = cluster.submit(3, 0, 0, True)
    assert cluster.down(3) and not cluster.in_flight((0,))
    failure, restart = cluster.next_event(float("inf")), cluster.next_event(float("inf"))
    assert isinstance(failure, Failure) and failure.job is job and failure.at == 0.0
    assert isinstance(restart, Restart) and restart.at == 2.0 and not cluster.down(3)


def test_next_event_stops_the_clock_at_until_when_nothing_comes_before():
    cluster = simpy_cluster(_point(compute={"per_partition": {"distribution": "deterministic", "value": 1.0}}))
    cluster.submit(0, 0, 0, False)
    assert cluster.next_event(0.4) is None and cluster.now == 0.4
    result = cluster.next_event(1.0)  # an event exactly at until is taken
    assert isinstance(result, Result) and result.at == 1.0 and cluster.now == 1.0


def test_a_job_abandoned_before_it_began_never_reports():
    point = _point(compute={"per_partition": {"distribution": "deterministic", "value": 1.0}})
    cluster = simpy_cluster(point)
    cluster.submit(0, 0, 0, False)
    queued = cluster.submit(0, 1, 1, False)  # waits behind job 0 until t = 1
    cluster.abandon([queued])
    events = cluster.drain(float("inf"))
    assert [(event.job.id, event.abandoned) for event in events] == [(0, False)]
    assert "simpy" in available_clusters()


def test_the_architecture_docs_example_adds_a_behaviour_as_a_simpy_process():
    text = (ROOT / "docs" / "architecture.md").read_text()
    code = text.split("## Adding a behaviour as a SimPy process", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(code, namespace)  # the documented example, as written
    point = _point(
        compute={"per_partition": {"distribution": "deterministic", "value": 1.0}},
        variants=[{"scheme": "uncoded", "policy": "wait_all"}],
        iterations=10,
    )
    scenario, variant = point.scenario, point.scenario.variants[0]
    rec = simulate_event(scenario, variant, scheme_for(scenario, variant), 0, cluster_class=namespace["WarmingUp"])
    assert rec.duration.tolist() == [1.0] * 5 + [2.0] * 5


SHARED = {"latency": 0.01, "bandwidth": 4e8, "shared_link": True}  # 10 ms per 1 MB message: the link queues
CRASHES = {"model": "crash", "probability": 0.1, "downtime": 0.5}


@pytest.mark.parametrize(
    "fields",
    [
        {"variants": [{"scheme": "fr", "s": 1}]},
        {"variants": [{"scheme": "cr", "s": 2, "policy": "wait_all"}], "stale_work": "finish"},
        {"variants": [{"scheme": "uncoded", "policy": {"name": "k_async", "k": 3}}]},
        {"variants": [{"scheme": "uncoded", "policy": {"name": "k_batch_async", "k": 2}}]},
        {"variants": [{"scheme": "fr", "s": 1}], "failures": {"model": "crash", "probability": 0.1, "downtime": 0.5}},
        {"variants": [{"scheme": "fr", "s": 1}], "failures": CRASHES, "stale_work": "finish"},
        {"variants": [{"scheme": "uncoded", "policy": {"name": "k_async", "k": 3}}], "failures": CRASHES},
    ],
    ids=["fr", "cr-finish", "k_async", "k_batch_async", "crashes", "finish-crashes", "k_async-crashes"],
)
def test_the_shared_link_as_a_simpy_resource_gives_the_same_tables(fields):
    """``Link`` (two calendar events a message) is the textbook capacity-one ``simpy.Resource`` model
    (``network.link_model: resource``), faster."""
    point = _point(network=SHARED, **fields)
    scenario, variant = point.scenario, point.scenario.variants[0]
    scheme = scheme_for(scenario, variant)
    link = simulate_event(scenario, variant, scheme, 0)
    resource = _point(network={**SHARED, "link_model": "resource"}, **fields).scenario
    resource = simulate_event(resource, resource.variants[0], scheme, 0)
    loads = np.array([len(scheme.partitions(w)) for w in range(scheme.n)])
    assert_frames_match(pd.DataFrame(link.iteration_columns()), pd.DataFrame(resource.iteration_columns()))
    assert_frames_match(pd.DataFrame(link.worker_columns(loads)), pd.DataFrame(resource.worker_columns(loads)))
    assert (link.duration > 0).all()
