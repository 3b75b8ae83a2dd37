"""Real mode sleeps compute.overhead (Tandon et al.'s model B) from the run's own draws, after the real compute."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")

from realhelpers import DATA, make_run, scenario  # noqa: E402

OVERHEAD = {"distribution": "exponential", "rate": 5.0}


def test_a_worker_sleeps_its_overhead_after_computing_and_reports_it_as_injected():
    """In process (no Ray): the delay a job sleeps is straggling's penalty plus the overhead the master sent."""
    from gcbench.real.wallclock.gradient_worker import GradientWorker
    from gcbench.training.batches import PartitionSampler

    sc = scenario({"scheme": "fr", "s": 1})
    setup = {
        "device": "cpu",
        "model": "small_cnn",
        "classes": DATA.classes,
        "seed": 0,
        "samples": len(DATA.train_labels),
    }
    setup |= {"batch_size": 32, "straggling": sc.straggling}
    worker = GradientWorker(0, {"name": "fr", "n": 4, "s": 1, "params": {}}, setup)
    sampler = PartitionSampler(len(DATA.train_labels), 4, 32, 0)
    shards = sampler.shard_data(DATA.train_images, DATA.train_labels)
    worker.shards = {j: shards[j] for j in worker.scheme.partitions(0)}
    worker.loaded = True  # (as receive() leaves it)
    weights = worker.flat.numpy().copy()
    result = worker.compute(0, weights, straggling=False, overhead=0.3)
    assert not result["abandoned"] and result["injected"] == 0.3
    assert result["compute_end"] - result["compute_start"] >= 0.3  # (compute_end: when its message was ready)


@pytest.mark.usefixtures("local_ray")
def test_the_synchronous_master_sends_each_worker_its_drawn_overhead():
    master = make_run(scenario({"scheme": "fr", "s": 1}, overhead=OVERHEAD))
    try:
        steps = [master.step(t) for t in range(2)]
    finally:
        master.shutdown()
    overhead = master.run.draws.overhead
    for t, step in enumerate(steps):
        assert step.timings
        for w, timing in step.timings.items():
            assert timing["injected"] == float(overhead[t, w]) > 0  # no straggling: the draw, exactly
            assert timing["compute_end"] - timing["compute_start"] >= timing["injected"]  # slept after computing


@pytest.mark.usefixtures("local_ray")
def test_the_asynchronous_master_sends_the_overhead_of_the_jobs_draw_row():
    sc = scenario({"scheme": "uncoded", "policy": {"name": "k_async", "k": 2}}, iterations=4, overhead=OVERHEAD)
    master = make_run(sc)
    try:
        steps = master.updates(0, 4)
    finally:
        master.shutdown()
    used = [(w, timing) for step in steps for w, timing in step.timings.items()]
    assert len(used) == 8
    overhead = master.run.draws.overhead
    for w, timing in used:
        assert timing["injected"] in set(overhead[:, w].tolist())
    assert np.all([timing["compute_end"] - timing["compute_start"] >= timing["injected"] for _, timing in used])
