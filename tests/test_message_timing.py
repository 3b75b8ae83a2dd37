"""Per-message timing: a worker sends each message once the partitions it uses are computed (issue 12).

The scheme here is gcbench/testing/multi_message.py's (unregistered; ``chunked_cr`` with m = 1 sends the same
messages): worker w computes partitions w, ..., w + s (mod n) and sends each partition's gradient as it is done.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gcbench.cluster import Job, Result
from gcbench.errors import GcbenchError
from gcbench.master.messages import whole_jobs
from gcbench.results.schema import MESSAGE_COLUMNS
from gcbench.scenario.build import scheme_for
from gcbench.scenario.draws import draw_run, message_bytes
from gcbench.scenario.loading import SweepPoint
from gcbench.scenario.schema import Scenario
from gcbench.sim.cluster import SimPyCluster
from gcbench.sim.engines import engine_for
from gcbench.sim.event import simulate_event
from gcbench.sim.runner import stream_points
from gcbench.testing.multi_message import PerPartitionMessages, registered

NAME = PerPartitionMessages.name
LATENCY = 0.25


@pytest.fixture(autouse=True)
def per_partition_messages():
    with registered():
        yield


def scenario(**fields) -> Scenario:
    data = {
        "name": "messages",
        "workers": 4,
        "iterations": 3,
        "compute": {"per_partition": {"distribution": "deterministic", "value": 1.0}},
        "network": {"latency": LATENCY},
        "gradient": {"length": 1_000_000},
        "variants": [{"scheme": NAME, "s": 1, "policy": "decodable"}],
    }
    return Scenario.model_validate({**data, **fields})


def simulate(sc: Scenario, cluster_class=SimPyCluster, variant: int = 0):
    v = sc.variants[variant]
    return simulate_event(sc, v, scheme_for(sc, v), 0, cluster_class=cluster_class)


def test_first_messages_decode_before_any_job_ends():
    """Each worker's first message carries a partition no other first message does: all n of them decode, at
    one partition's time, half way through every job (whole jobs would decode at two)."""
    rec = simulate(scenario())
    assert rec.duration.tolist() == [1.0 + LATENCY] * 3
    assert rec.used.all() and rec.exact.all()
    assert rec.iteration_columns()["messages_used"].tolist() == [4, 4, 4]  # messages, not workers


class Uneven(SimPyCluster):
    """Worker 0 is very slow, worker 1 slow: their jobs take 20 and 6 units, the others' 2."""

    def seconds(self, worker: int, row: int) -> float:
        return (20.0, 6.0, 2.0, 2.0)[worker]


def test_a_slow_worker_s_first_message_is_used_before_its_job_ends():
    """Partition 1 first reaches the master as slow worker 1's first message (at 3 of its 6 units); whole jobs
    would wait for three whole workers (worker 1's end, at 6)."""
    rec = simulate(scenario(iterations=1), cluster_class=Uneven)
    assert rec.duration[0] == 3.0 + LATENCY
    assert rec.used[0].tolist() == [False, True, True, True]
    log = pd.DataFrame(rec.messages.columns())
    slow = log[(log.worker == 1)].sort_values("message")
    assert slow.used.tolist() == [True, False]  # its second message came after the stop
    assert slow.ready.tolist() == [3.0, 6.0] and slow.arrival.tolist() == [3.0 + LATENCY, 6.0 + LATENCY]
    assert rec.compute_end[0, 1] == 6.0  # the workers table: when its job (its last message) ended


@pytest.mark.parametrize(
    "policy",
    ["decodable", "wait_all", {"name": "fastest_k", "k": 5}, {"name": "deadline", "deadline": 0.8}],
    ids=["decodable", "wait_all", "fastest_k", "deadline"],
)
@pytest.mark.parametrize(
    "network",
    [{"latency": 0.05}, {"latency": 0.02, "bandwidth": 1e8, "shared_link": True}],
    ids=["latency", "shared-link"],
)
def test_the_event_engine_stops_where_the_policy_s_offline_rule_does_on_per_message_arrivals(policy, network):
    """What the vectorised engine would compute: each message ready ``ready_after / load`` through its job, its
    arrival from the network model (one FIFO link per iteration), the policy's ``stop_times`` over messages."""
    sc = scenario(
        workers=6,
        iterations=40,
        compute={"per_partition": {"distribution": "exponential", "rate": 2.0}},
        network=network,
        variants=[{"scheme": NAME, "s": 2, "policy": policy}],
    )
    variant = sc.variants[0]
    scheme = scheme_for(sc, variant)
    rec = simulate(sc)
    busy = draw_run(sc, scheme, 0).busy
    fractions = np.array([scheme.ready_after(m) / (scheme.s + 1) for m in range(len(scheme.message_owner))])
    ready = busy[:, scheme.message_owner] * fractions
    arrivals = sc.network.arrivals(ready, message_bytes(sc, scheme))
    expected = variant.policy.stop_times(arrivals, scheme)
    np.testing.assert_allclose(rec.duration, expected.stop, rtol=1e-9)
    assert rec.reason.tolist() == expected.reason.tolist()
    used = rec.iteration_columns()["messages_used"]
    assert used.tolist() == (arrivals <= expected.stop[:, None] * (1 + 1e-12)).sum(axis=1).tolist()


def test_the_shared_link_as_a_simpy_resource_gives_the_same_tables_for_several_messages():
    sc = scenario(
        iterations=20,
        compute={"per_partition": {"distribution": "exponential", "rate": 2.0}},
        network={"latency": 0.01, "bandwidth": 4e8, "shared_link": True},
        stale_work="finish",
        variants=[{"scheme": NAME, "s": 2, "policy": "wait_all"}],
    )
    resource = sc.model_copy(update={"network": sc.network.model_copy(update={"link_model": "resource"})})
    link, resource = simulate(sc), simulate(resource)
    assert (link.duration > 0).all()
    np.testing.assert_array_equal(link.duration, resource.duration)
    assert link.messages.rows == resource.messages.rows


def test_an_asynchronous_update_counts_a_job_once_its_last_message_is_in():
    sc = scenario(iterations=4, variants=[{"scheme": NAME, "s": 1, "policy": {"name": "k_async", "k": 4}}])
    rec = simulate(sc)
    # each job two units, then its latency; the workers restart on the new model (a message alone: at 1.25)
    assert rec.end.tolist() == [(2.0 + LATENCY) * (i + 1) for i in range(4)]
    assert rec.used.all()


def test_auto_runs_the_event_engine_and_the_vectorised_engine_refuses_in_one_sentence():
    sc = scenario()
    assert engine_for(sc, sc.variants[0]) == "event"
    vectorised = sc.model_copy(update={"engine": "vectorised"})
    with pytest.raises(GcbenchError, match=r"engine: vectorised sends each worker's messages together.*auto or event"):
        engine_for(vectorised, sc.variants[0])
    uncoded = scenario(variants=[{"scheme": "uncoded"}])
    assert engine_for(uncoded, uncoded.variants[0]) == "vectorised"


def test_a_run_writes_the_messages_table_only_when_a_scheme_sends_several(tmp_path: Path):
    sc = scenario(variants=[{"scheme": NAME, "s": 1}, {"scheme": "uncoded", "policy": "wait_all"}])
    stream_points([SweepPoint({}, sc)], tmp_path / "several")
    messages = pd.read_parquet(tmp_path / "several" / "messages.parquet")
    iterations = pd.read_parquet(tmp_path / "several" / "iterations.parquet")
    assert list(messages.columns) == list(MESSAGE_COLUMNS)
    assert set(messages.variant) == {sc.variants[0].display_label()}  # the single-message variant has no rows
    assert len(messages) == 3 * 8 and messages.message.tolist()[:2] == [0, 1]
    first = iterations[iterations.variant == sc.variants[0].display_label()]
    assert messages.groupby("iteration").used.sum().tolist() == first.messages_used.tolist()
    single = scenario(variants=[{"scheme": "uncoded", "policy": "wait_all"}])
    stream_points([SweepPoint({}, single)], tmp_path / "single")
    assert not (tmp_path / "single" / "messages.parquet").exists()
    stream_points([SweepPoint({}, sc)], tmp_path / "single", with_workers=False)
    assert sorted(p.name for p in (tmp_path / "single").glob("*.parquet")) == ["iterations.parquet"]


def test_a_job_s_messages_reach_the_learner_gathered_in_their_places():
    scheme = PerPartitionMessages(n=4, s=1)
    job, other = Job(2, 0, 0, 0.0, False), Job(3, 0, 0, 0.0, False)
    late = Result(job, 2.0, 0.0, 2.0, [np.ones(3)], losses={3: 0.5}, message=1, final=True)
    whole = Result(other, 1.5, 0.0, 1.0, [np.zeros(3), np.zeros(3)])
    early = Result(job, 1.0, 0.0, 1.0, [np.full(3, 2.0)], losses={2: 0.25}, message=0, final=False)
    (gathered, kept) = whole_jobs([early, whole, late])
    assert kept is whole and gathered.at == 2.0 and gathered.message is None and gathered.final
    assert [v.tolist() for v in gathered.messages] == [[2.0] * 3, [1.0] * 3] and gathered.losses == {2: 0.25, 3: 0.5}
    (alone,) = whole_jobs([early])
    pytest.importorskip("torch", reason="the learner is part of the [real] extra")
    from gcbench.training.learner import received_ids

    assert alone.messages[0].tolist() == [2.0] * 3 and received_ids(scheme, {2: alone.messages}) == [4]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 5), st.sampled_from(["abandon", "finish"]))
def test_per_message_runs_keep_the_protocol_s_order_under_crashes(seed, stale_work):
    """With crashes and stale work, every job's messages come in order, the last one final, none after it."""
    sc = scenario(
        workers=6,
        iterations=15,
        compute={"per_partition": {"distribution": "exponential", "rate": 2.0}},
        failures={"model": "crash", "probability": 0.15, "downtime": 0.7},
        stale_work=stale_work,
        variants=[{"scheme": NAME, "s": 2, "policy": "decodable"}],
    )
    variant = sc.variants[0]
    scheme = scheme_for(sc, variant)
    rec = simulate_event(sc, variant, scheme, seed)
    assert rec.exact.all() and np.isfinite(rec.duration).all()
    log = pd.DataFrame(rec.messages.columns())
    for _, job in log.groupby(["iteration", "worker"]):
        assert (np.diff(job.ready.to_numpy()) >= 0).all() and (np.diff(job.arrival.to_numpy()) >= 0).all()


@pytest.mark.slow  # (seconds: trains; the everyday lane keeps the timing tests)
def test_training_on_partial_jobs_steps_as_uncoded_sgd():
    """The learner decodes a job's first messages alone (partition copies from slow workers' partial work) and
    steps exactly as uncoded SGD on the same mini-batches."""
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    from gcbench.sim.training import simulate_training

    training = {"in_simulator": True, "dataset": "synthetic", "model": "softmax", "batch_size": 60,
                "learning_rate": 3e-5, "eval_every": 4}  # fmt: skip
    fields = {
        "workers": 6,
        "iterations": 8,
        "compute": {"per_partition": {"distribution": "shifted_exponential", "shift": 0.01, "rate": 100}},
        "straggling": {"model": "independent", "probability": 0.3, "slowdown": 6},
        "gradient": {"length": 30730},
        "training": training,
    }
    coded = scenario(**fields, variants=[{"scheme": NAME, "s": 2}])
    uncoded = scenario(**fields, variants=[{"scheme": "uncoded", "policy": "wait_all"}])
    runs = [simulate_training(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0) for sc in (coded, uncoded)]
    rec, reference = runs
    used = pd.DataFrame(rec.messages.columns()).groupby(["iteration", "worker"]).used
    assert rec.exact.all() and (used.any() & ~used.all()).any()  # some jobs were used in part
    # float32 rounding of the loss only (tests/test_sim_training.py says why): 1e-5 on any kernel
    np.testing.assert_allclose(rec.loss, reference.loss, rtol=1e-5, atol=1e-7)


def test_a_real_worker_sends_each_message_once_its_partitions_are_computed():
    """In process (no Ray, no torch.distributed; both run this generator): one reply per message, each the
    message ``compute`` would send, its losses those of the partitions computed by then, the overhead slept in
    even shares per partition."""
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    from gcbench.real.wallclock.gradient_worker import GradientWorker
    from gcbench.training.batches import PartitionSampler

    from realhelpers import DATA

    sc = scenario()
    setup = {"device": "cpu", "model": "softmax", "classes": DATA.classes, "seed": 0,
             "samples": len(DATA.train_labels), "batch_size": 32, "straggling": sc.straggling}  # fmt: skip
    worker = GradientWorker(1, {"name": NAME, "n": 4, "s": 2, "params": {}}, setup)
    shards = PartitionSampler(len(DATA.train_labels), 4, 32, 0).shard_data(DATA.train_images, DATA.train_labels)
    worker.shards, worker.loaded = {j: shards[j] for j in worker.scheme.partitions(1)}, True
    weights = worker.flat.numpy().copy()
    whole = worker.compute(0, weights, straggling=False, overhead=0.0)
    replies = list(worker.compute_messages(1, weights, False, False, 0, 0.3))
    assert [r["message"] for r in replies] == [0, 1, 2] and [r["final"] for r in replies] == [False, False, True]
    parts = worker.scheme.partitions(1)
    for i, reply in enumerate(replies):
        np.testing.assert_allclose(reply["messages"][0], whole["messages"][i], rtol=1e-6)
        assert sorted(reply["losses"]) == sorted(parts[: i + 1]) and not reply["abandoned"]
        assert reply["injected"] == pytest.approx(0.1 * (i + 1))
    ends = [r["compute_end"] for r in replies]
    assert ends == sorted(ends) and ends[0] - replies[0]["compute_start"] >= 0.1


MULTI_TINY = f"""\
name: multi
workers: 4
iterations: 5
compute: {{per_partition: {{distribution: exponential, rate: 2.0}}}}
variants:
  - {{scheme: {NAME}, s: 1}}
  - {{label: uncoded, scheme: uncoded, policy: wait_all}}
"""


def test_gcbench_simulate_runs_several_messages_on_the_event_engine_and_refuses_vectorised(tmp_path: Path):
    """In process (the scheme is registered here only): auto takes the event engine for the multi-message variant
    and writes messages.parquet; --engine vectorised exits 2 with one sentence and writes nothing."""
    import json

    from typer.testing import CliRunner

    from gcbench.cli import app

    scenario_file = tmp_path / "multi.yaml"
    scenario_file.write_text(MULTI_TINY)
    runner = CliRunner()
    done = runner.invoke(app, ["simulate", str(scenario_file), "--out", str(tmp_path / "auto")])
    assert done.exit_code == 0, done.output
    engines = json.loads((tmp_path / "auto" / "run.json").read_text())["engines"]
    assert engines == {f"{NAME}(s=1)/decodable": "event", "uncoded": "vectorised"}
    assert len(pd.read_parquet(tmp_path / "auto" / "messages.parquet")) == 5 * 8
    refused = runner.invoke(app, ["simulate", str(scenario_file), "--out", str(tmp_path / "fast"), "--engine",
                                  "vectorised"])  # fmt: skip
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "error: engine: vectorised sends each worker's messages together" in refused.output
    assert refused.output.count("error:") == 1 and not (tmp_path / "fast" / "iterations.parquet").exists()
