"""Compressed messages in the simulator: a message's size is its payload's (transfer time and the shared link
follow), compressing and decompressing it cost what the scenario says, both engines agree, and a run that trains
really compresses (error feedback per worker, lost with a crash) and records what it cost (compression_error)."""

from __future__ import annotations

import numpy as np
import pytest
from test_event_engine import assert_engines_agree

from gcbench.compression import COMPRESSORS
from gcbench.scenario.build import scheme_for
from gcbench.scenario.draws import message_bytes
from gcbench.scenario.loading import SweepPoint
from gcbench.scenario.schema import Scenario
from gcbench.sim.event import simulate_event
from gcbench.sim.synchronous import simulate_synchronous
from gcbench.sim.tasks import Task, run_task

D = 1_000_000


def scenario(**fields) -> Scenario:
    data = {
        "name": "compressed",
        "workers": 4,
        "iterations": 20,
        "gradient": {"length": D},
        "compute": {"per_partition": {"distribution": "deterministic", "value": 0.1}},
        "network": {"latency": 0.002, "bandwidth": 1e8},
        "variants": [{"scheme": "uncoded", "policy": "wait_all"}],
    }
    return Scenario.model_validate({**data, **fields})


@pytest.mark.parametrize(("name", "params"), [(n, {}) for n in COMPRESSORS.names()] + [("topk", {"ratio": 0.1})])
def test_a_message_is_as_large_as_its_payload(name, params):
    compressor = COMPRESSORS.get(name)(**params)
    sc = scenario(variants=[{"scheme": "fr", "s": 1, "compression": {"name": name, **params}}])
    variant = sc.variants[0]
    assert message_bytes(sc, scheme_for(sc, variant), variant.compressor) == compressor.payload_bytes(D)


def test_an_iteration_takes_compute_latency_coding_and_the_payload_s_transfer():
    """Closed form, deterministic compute (no shared link): 0.1 s + latency + (compress + decompress) x d +
    payload / bandwidth, on both engines."""
    compression = {"name": "topk", "ratio": 0.01, "compress_cost": 2e-9, "decompress_cost": 1e-9}
    sc = scenario(variants=[{"scheme": "uncoded", "policy": "wait_all", "compression": compression}])
    payload = COMPRESSORS.get("topk")(ratio=0.01).payload_bytes(D)
    expected = 0.1 + 0.002 + 3e-9 * D + payload / 1e8
    for simulate in (simulate_synchronous, simulate_event):
        rec = simulate(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
        np.testing.assert_allclose(rec.duration, expected, rtol=1e-12)
    uncompressed = scenario()
    rec = simulate_event(uncompressed, uncompressed.variants[0], scheme_for(uncompressed, uncompressed.variants[0]), 0)
    np.testing.assert_allclose(rec.duration, 0.1 + 0.002 + 4 * D / 1e8, rtol=1e-12)


def test_on_a_shared_link_the_last_of_n_compressed_messages_waits_for_the_others():
    sc = scenario(
        network={"latency": 0.0, "bandwidth": 1e8, "shared_link": True},
        variants=[{"scheme": "uncoded", "policy": "wait_all", "compression": "fp16"}],
    )
    rec = simulate_event(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    np.testing.assert_allclose(rec.duration, 0.1 + 4 * (2 * D) / 1e8, rtol=1e-12)


@pytest.mark.parametrize(
    "variant",
    [
        {"scheme": "cr", "s": 1, "policy": "decodable", "compression": {"name": "qsgd", "compress_cost": 1e-8}},
        {"scheme": "cyclic_mds", "s": 1, "policy": {"name": "fastest_k", "k": 3}, "compression": "powersgd"},
        {"scheme": "cce_cr", "s": 1, "m": 2, "compression": {"name": "randomk", "decompress_cost": 3e-9}},
    ],
    ids=["cr-qsgd", "mds-powersgd", "cce-randomk"],
)
def test_both_engines_agree_with_compressed_messages(variant):
    sc = scenario(
        compute={"per_partition": {"distribution": "exponential", "rate": 10}},
        network={"latency": 0.001, "bandwidth": 5e7, "shared_link": True},
        straggling={"model": "independent", "probability": 0.2, "delay": 0.3},
        variants=[variant],
        iterations=40,
    )
    assert_engines_agree(SweepPoint({}, sc), 0)


def test_each_iteration_records_the_bytes_of_the_messages_it_used():
    """bytes_received = messages used x one message's bytes: 4 d uncompressed, the payload compressed, and a
    CCE-CR message (m = 2) half the entries; on the event engine and the vectorised one alike."""
    straggling = {"model": "independent", "probability": 0.3, "delay": 0.3}
    variants = [
        {"scheme": "uncoded", "policy": "wait_all"},
        {"scheme": "fr", "s": 1, "compression": {"name": "topk", "ratio": 0.01}},
        {"scheme": "cce_cr", "s": 1, "m": 2, "compression": "fp16"},
    ]
    one = [4 * D, COMPRESSORS.get("topk")(ratio=0.01).payload_bytes(D), 2 * (D // 2)]
    for engine in ("vectorised", "event"):
        sc = scenario(straggling=straggling, variants=variants, engine=engine)
        for index, size in enumerate(one):
            iterations, _ = run_task(SweepPoint({}, sc), 0, Task(0, index, 0), False)
            assert iterations["bytes_received"].tolist() == (iterations["messages_used"] * float(size)).tolist()
        assert iterations["messages_used"].max() > iterations["messages_used"].min()  # (it counts what was used)


def test_the_scenario_s_compression_is_each_variant_s_that_gives_none():
    sc = scenario(
        compression={"name": "topk", "ratio": 0.05},
        variants=[{"scheme": "fr", "s": 1}, {"scheme": "uncoded", "policy": "wait_all", "compression": "none"}],
    )
    assert [v.display_label() for v in sc.variants] == ["fr(s=1)/decodable/topk(ratio=0.05)", "uncoded/wait_all"]


TRAINING = {
    "in_simulator": True, "dataset": "synthetic", "model": "softmax", "batch_size": 60,
    "learning_rate": 3e-5, "eval_every": 4,
}  # fmt: skip


def trained_run(variant: dict, **fields):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    from gcbench.sim.training import simulate_training

    sc = scenario(workers=6, iterations=8, gradient={"length": 30730}, training=TRAINING, variants=[variant], **fields)
    return simulate_training(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)


def test_a_run_that_trains_compresses_and_records_the_error_compression_made():
    exact = trained_run({"scheme": "fr", "s": 1})
    fp16 = trained_run({"scheme": "fr", "s": 1, "compression": "fp16"})
    topk = trained_run({"scheme": "fr", "s": 1, "compression": {"name": "topk", "ratio": 0.05}})
    assert np.isnan(exact.compression_error).all()  # nothing compressed
    assert (fp16.compression_error > 0).all() and (fp16.compression_error <= 2.0**-10).all()
    np.testing.assert_allclose(fp16.loss, exact.loss, rtol=1e-3)  # half precision barely changes the training
    # top-k keeps 5% of the entries: most of each decoded gradient is left for the next one (error feedback)
    assert (topk.compression_error > 0.1).all() and (topk.compression_error < 1.5).all()
    assert np.isfinite(topk.loss).all() and not np.allclose(topk.loss[1:], exact.loss[1:], rtol=1e-3)
    assert (topk.duration < fp16.duration).all() and (fp16.duration < exact.duration).all()  # smaller, sooner


def test_a_crashed_worker_loses_its_error_feedback_memory():
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    from gcbench.cluster import Failure
    from gcbench.sim.training import TrainingCluster

    seen = []

    class Watching(TrainingCluster):
        def next_event(self, until):
            before = [sender.remembers for sender in self.senders]
            event = super().next_event(until)
            if type(event) is Failure:
                seen.append((before[event.worker], self.senders[event.worker].remembers))
            return event

    from gcbench.sim import training

    original = training.TrainingCluster
    training.TrainingCluster = Watching
    try:
        rec = trained_run(
            {"scheme": "fr", "s": 1, "compression": {"name": "topk", "ratio": 0.05}},
            failures={"model": "crash", "probability": 0.15, "downtime": 0.05},
        )
    finally:
        training.TrainingCluster = original
    assert (True, False) in seen, seen  # a worker that remembered a residual crashed, and remembers none after
    assert np.isfinite(rec.loss).all()
