"""Asynchronous policies on Ray: updates from k results, workers restarting on the newest model, staleness.

`gcbench run` training them end to end is checked in tests/test_real_turns.py (one run serves its checks)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")
ray = pytest.importorskip("ray", reason="ray is part of the [real] extra")

from gcbench.training.gradients import load_flat_parameters, partition_gradient  # noqa: E402
from gcbench.training.models import build_model  # noqa: E402

from realhelpers import DATA, current_weights, make_run, relative_error, scenario  # noqa: E402

pytestmark = pytest.mark.usefixtures("local_ray")


def partition_reference(master, weights: torch.Tensor, batch: int, partition: int) -> torch.Tensor:
    """The mean-loss gradient of one partition's samples of mini-batch ``batch``."""
    model = build_model("small_cnn", DATA.classes, 0)
    load_flat_parameters(model, weights)
    rows = master.sampler.indices(batch, partition)
    grad, _ = partition_gradient(
        model, DATA.train_images[rows], DATA.train_labels[rows], len(rows), torch.device("cpu")
    )
    return grad


def test_async_applies_each_result_as_a_mean_gradient_and_records_staleness():
    """async (k = 1), uncoded: update 0 is the first result alone, scaled to a mean over its samples."""
    sc = scenario({"scheme": "uncoded", "policy": "async"}, iterations=12)
    master = make_run(sc)
    weights = current_weights(master)
    try:
        steps = master.updates(0, 12)
    finally:
        master.shutdown()
    first = steps[0]
    (worker,) = first.timings
    expected = partition_reference(master, weights, 0, worker)
    assert first.reason == "k_results" and first.staleness == 0 and not first.exact
    assert relative_error(first.gradient, expected) < 1e-4
    assert all(len(step.timings) == 1 for step in steps)
    assert np.mean([step.staleness for step in steps]) > 0, "workers restarted on the newest model only"
    assert all(step.end >= step.start for step in steps) and all(np.isfinite(step.loss) for step in steps)


def test_k_async_waits_for_k_distinct_workers():
    sc = scenario({"scheme": "fr", "s": 1, "policy": {"name": "k_async", "k": 2}}, iterations=6)
    master = make_run(sc)
    try:
        steps = master.updates(0, 6)
    finally:
        master.shutdown()
    assert len(steps) == 6 and all(len(step.timings) == 2 for step in steps)
    # two FR workers of one group carry the same partitions: then the update decodes exactly
    assert any(step.exact for step in steps) or all(step.residual > 0 for step in steps)


def test_an_async_worker_that_crashes_comes_back_and_every_update_happens():
    sc = scenario(
        {"scheme": "uncoded", "policy": {"name": "k_batch_async", "k": 2}},
        failures={"model": "crash", "probability": 0.5, "downtime": 0.0},
        iterations=8,
    )
    # worker 2's first job: always submitted (a later one may not be, when the others' results make all 8
    # updates first on a loaded machine)
    master = make_run(sc, crash=[(0, 2)])
    try:
        steps = master.updates(0, 8)
        master.cluster.drain(15)  # the run can end before the exit is noticed and worker 2 is back
        back = not master.cluster.down(2)
    finally:
        master.shutdown()
    assert len(steps) == 8 and 2 in steps[0].failed
    assert master.cluster.exits == 1 and back


def test_async_with_every_worker_dead_for_good_is_a_clear_error():
    sc = scenario(
        {"scheme": "uncoded", "policy": "async"},
        workers=2,
        failures={"model": "crash", "probability": 0.5, "downtime": None},
        iterations=4,
    )
    master = make_run(sc, crash=[(t, w) for t in range(4) for w in range(2)])
    try:
        with pytest.raises(Exception, match="every worker crashed for good"):
            master.updates(0, 4)
    finally:
        master.shutdown()
