"""Real mode on a local Ray instance: decoding is exact in the real system, stragglers are abandoned.

One Ray instance serves the whole module (it takes seconds to start).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from gcbench.real.data import synthetic
from gcbench.real.gradients import load_flat_parameters, partition_gradient
from gcbench.real.master import RayMaster
from gcbench.real.models import build_model
from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario

ray = pytest.importorskip("ray", reason="ray is part of the [real] extra")

DATA = synthetic(train=512, test=64)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    yield
    ray.shutdown()


def scenario(variant: dict, straggling: dict | None = None, workers: int = 4) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "real-test",
            "workers": workers,
            "iterations": 3,
            "compute": {"per_partition": {"distribution": "deterministic", "value": 0.01}},
            "straggling": straggling or {"model": "none"},
            "variants": [variant],
            "training": {"dataset": "synthetic", "batch_size": 32, "device": "cpu", "timeout": 60},
        }
    )


def reference_gradient(master: RayMaster, weights: torch.Tensor, t: int) -> torch.Tensor:
    """The single-process gradient of iteration t's whole mini-batch, at the same weights."""
    model = build_model("small_cnn", DATA.classes, 0)
    load_flat_parameters(model, weights)
    batch = master.sampler.batch(t)
    grad, _ = partition_gradient(
        model, DATA.train_images[batch], DATA.train_labels[batch], master.sampler.batch_size, torch.device("cpu")
    )
    return grad


EXACT = [
    {"scheme": "uncoded", "policy": "wait_all"},
    {"scheme": "fr", "s": 1},
    {"scheme": "cr", "s": 1},
    {"scheme": "cyclic_mds", "s": 2},
    {"scheme": "cce_cr", "s": 1, "m": 2},
    {"scheme": "cce_fr", "s": 1, "m": 1},
]


@pytest.mark.parametrize("variant", EXACT, ids=lambda v: v["scheme"])
def test_decoded_gradient_equals_the_single_process_gradient(variant):
    """Up to s workers are delayed by 0.5 s in every iteration; the decode must still be exact."""
    sc = scenario(variant)
    s = variant.get("s", 0)
    slow = {"model": "fixed", "workers": list(range(s)), "delay": 0.5} if s else None
    sc = scenario(variant, slow)
    master = RayMaster(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), DATA, seed=0, device="cpu")
    try:
        for t in range(2):
            weights = torch.cat([p.detach().reshape(-1) for p in master.model.parameters()]).clone()
            step = master.step(t)
            expected = reference_gradient(master, weights, t)
            assert step.exact and step.reason in ("decodable", "all_arrived")
            assert not set(step.arrivals) & set(range(s)), "a delayed worker was waited for"
            error = (step.gradient - expected).norm() / expected.norm()
            assert error < 1e-4, f"relative error {error:.2e}"
    finally:
        master.shutdown()


def test_an_abandoned_straggler_does_not_slow_the_next_iteration():
    """Worker 0 is delayed 2 s in iteration 0 only; FR moves on, and worker 0 is free again at once."""
    sc = scenario({"scheme": "fr", "s": 1}, {"model": "fixed", "workers": [0], "delay": 2.0})
    master = RayMaster(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), DATA, seed=0, device="cpu")
    master.straggling = np.zeros_like(master.straggling)
    master.straggling[0, 0] = True  # only iteration 0
    try:
        first = master.step(0)
        assert first.end - first.start < 1.5 and 0 not in first.arrivals
        weights = torch.cat([p.detach().reshape(-1) for p in master.model.parameters()])
        begin = time.time()
        result = ray.get(master.actors[0].compute.remote(1, weights, False))  # queued behind the stale work
        assert not result["abandoned"] and time.time() - begin < 1.5, "the straggler finished its stale work first"
        second = master.step(1)
        assert second.end - second.start < 1.5
    finally:
        master.shutdown()


def test_gcbench_run_real_writes_the_shared_schema_with_loss_and_accuracy(tmp_path):
    from typer.testing import CliRunner

    from gcbench.cli import app
    from gcbench.results import ITERATION_COLUMNS, WORKER_COLUMNS, read_results

    path = tmp_path / "tiny.yaml"
    path.write_text(
        "name: tiny\nworkers: 4\niterations: 4\ncompute: {per_partition: {distribution: exponential, rate: 10}}\n"
        "straggling: {model: independent, probability: 0.3, delay: 0.3}\n"
        "variants: [{label: uncoded, scheme: uncoded, policy: wait_all}, {scheme: fr, s: 1}]\n"
        "training: {dataset: synthetic, batch_size: 32, eval_every: 2, device: cpu}\n"
    )
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "real")])
    assert result.exit_code == 0, result.output
    iterations, workers, meta = read_results(tmp_path / "real")
    assert meta["mode"] == "real" and meta["backend"] == "ray"
    assert set(ITERATION_COLUMNS) | {"loss", "accuracy"} <= set(iterations.columns)
    assert set(WORKER_COLUMNS) <= set(workers.columns) and len(workers) == 2 * 4 * 4
    assert len(iterations) == 8 and iterations["loss"].notna().all() and iterations["accuracy"].notna().sum() == 4
    used = workers[workers["used"]]
    assert (used["arrival"] >= used["compute_start"]).all() and (used["injected_delay"] >= 0).all()

    local = CliRunner().invoke(app, ["run", str(path), "--backend", "local", "--out", str(tmp_path / "local")])
    assert local.exit_code == 0, local.output
    assert read_results(tmp_path / "local")[0]["variant"].unique().tolist() == ["local"]


def test_gcbench_run_refuses_what_it_cannot_do(tmp_path):
    from typer.testing import CliRunner

    from gcbench.cli import app

    path = tmp_path / "async.yaml"
    path.write_text(
        "name: a\nworkers: 4\niterations: 4\ncompute: {per_partition: {distribution: exponential, rate: 10}}\n"
        "variants: [{scheme: uncoded, policy: async}]\ntraining: {dataset: synthetic}\n"
    )
    result = CliRunner().invoke(app, ["run", str(path)])
    assert result.exit_code == 2 and "asynchronous policies do not run for real yet" in result.output
    result = CliRunner().invoke(app, ["run", str(path), "--backend", "mpi"])
    assert result.exit_code == 2 and "--backend must be ray or local" in result.output
    missing = CliRunner().invoke(app, ["run", "scenarios/cifar10.yaml", "--data-dir", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
