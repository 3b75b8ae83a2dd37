"""Real mode on a local Ray instance: decoding is exact in the real system, stragglers are abandoned.

One Ray instance serves every real-mode test (tests/conftest.py; it takes seconds to start). `gcbench run` on
Ray writing the shared schema is checked with the other end-to-end checks of one run, in
tests/test_real_turns.py.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")
ray = pytest.importorskip("ray", reason="ray is part of the [real] extra")

from realhelpers import DATA, current_weights, make_run, reference_gradient, relative_error, scenario  # noqa: E402

pytestmark = pytest.mark.usefixtures("local_ray")


# The decoder is the same on every backend, and tests/test_torch_cluster.py holds every exact scheme's training on
# torch to the single-process run's; here, on Ray, the two ways its transport carries a code: one message of
# real-valued decoding weights per worker (cyclic-MDS, s = 2) and several messages per worker (CCE-CR, m = 2).
EXACT = [
    {"scheme": "cyclic_mds", "s": 2},
    {"scheme": "cce_cr", "s": 1, "m": 2},
]


@pytest.mark.parametrize("variant", EXACT, ids=lambda v: v["scheme"])
def test_decoded_gradient_equals_the_single_process_gradient(variant):
    """Up to s workers are delayed by 0.5 s in every iteration; the decode must still be exact."""
    s = variant.get("s", 0)
    slow = {"model": "fixed", "workers": list(range(s)), "delay": 0.5} if s else None
    sc = scenario(variant, slow)
    master = make_run(sc)
    try:
        for t in range(2):
            weights = current_weights(master)
            step = master.step(t)
            expected = reference_gradient(master, weights, t)
            assert step.exact and step.reason in ("decodable", "all_arrived")
            assert not set(step.arrivals) & set(range(s)), "a delayed worker was waited for"
            assert relative_error(step.gradient, expected) < 1e-4
    finally:
        master.shutdown()


def test_resnet18_decodes_exactly_and_the_master_evaluates_with_calibrated_batch_norm():
    from gcbench.training.evaluation import evaluate_master

    sc = scenario({"scheme": "fr", "s": 1}, workers=2, training={"model": "resnet18", "batch_size": 8})
    master = make_run(sc)
    try:
        for t in range(2):
            weights = current_weights(master)
            step = master.step(t)
            assert step.exact and relative_error(step.gradient, reference_gradient(master, weights, t)) < 1e-4
    finally:
        master.shutdown()
    norm = master.model.bn1
    assert float(norm.running_var.sub(1).abs().max()) == 0.0, "the master ran forward passes"
    accuracy = evaluate_master(master.model, DATA, 8)
    assert 0.0 <= accuracy <= 1.0 and float(norm.running_var.sub(1).abs().max()) > 0, "BatchNorm was not calibrated"


def test_an_abandoned_straggler_does_not_slow_the_next_iteration():
    """Worker 0 is delayed 2 s in iteration 0 only; FR moves on, and worker 0 is free again at once."""
    sc = scenario({"scheme": "fr", "s": 1}, {"model": "fixed", "workers": [0], "delay": 2.0})
    master = make_run(sc, straggling=[(0, 0)])  # only iteration 0
    try:
        first = master.step(0)
        assert first.end - first.start < 1.5 and 0 not in first.arrivals
        weights = current_weights(master).numpy()
        begin = time.time()
        result = ray.get(master.actors[0].compute.remote(1, weights, False))  # queued behind the stale work
        assert not result["abandoned"] and time.time() - begin < 1.5, "the straggler finished its stale work first"
        second = master.step(1)
        assert second.end - second.start < 1.5
    finally:
        master.shutdown()


def test_with_stale_work_finish_a_straggler_completes_its_old_iteration_first():
    """Worker 0 is delayed 1 s in iteration 0; FR moves on, and worker 0 finishes that work before iteration 1's."""
    sc = scenario({"scheme": "fr", "s": 1}, {"model": "fixed", "workers": [0], "delay": 1.0})
    sc = sc.model_copy(update={"stale_work": "finish"})
    master = make_run(sc, straggling=[(0, 0)])
    try:
        first = master.step(0)
        assert first.end - first.start < 0.9 and 0 not in first.arrivals
        master.step(1)
        master.finish()
    finally:
        master.shutdown()
    finished = master.worker(0, 0)
    assert finished["injected"] == pytest.approx(1.0, abs=0.05), "the stale work was cut short"
    assert np.isfinite(finished["arrival"]) and finished["arrival"] >= first.start + 1.0


def test_gcbench_run_refuses_what_it_cannot_do(tmp_path):
    from typer.testing import CliRunner

    from gcbench.cli import app

    path = tmp_path / "tiny.yaml"
    path.write_text(
        "name: a\nworkers: 4\niterations: 4\ncompute: {per_partition: {distribution: exponential, rate: 10}}\n"
        "variants: [{scheme: uncoded}]\ntraining: {dataset: synthetic}\n"
    )
    result = CliRunner().invoke(app, ["run", str(path), "--backend", "mpi"])
    assert result.exit_code == 2 and "--backend must be ray, torch or local" in result.output
    missing = CliRunner().invoke(app, ["run", "scenarios/cifar10.yaml", "--data-dir", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    for options, message in [
        (["--model", "vgg"], "training.model: Input should be 'small_cnn', 'resnet18' or 'softmax'"),
        (["--lr", "-1"], "training.learning_rate: Input should be greater than 0"),
        (["--device", "tpu"], "training.device: must be auto, cpu, cuda or cuda:N, not 'tpu'"),
        (["--batch-size", "6"], "training.batch_size (6) must be a multiple of the 4 data partitions"),
        (["--data-dir", str(tmp_path)], "is for cifar10; the dataset is synthetic"),
    ]:
        result = CliRunner().invoke(app, ["run", str(path), *options])
        assert result.exit_code == 2 and message in result.output, (options, result.output)
