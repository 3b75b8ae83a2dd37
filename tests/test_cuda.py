"""The GPU path, on a CUDA device: the decode on the device against the CPU's, the master's learner on a GPU,
a torch-backend run whose workers share one GPU against the same run on the CPU, the DDP baseline's ranks
sharing a GPU on NCCL and on gloo, and the simulator training on the GPU.

Every test here needs a CUDA device and skips without one; all are marked ``cuda`` (``pytest -m cuda``), which
benchmarks/gpu_check.sh runs on a GPU machine. What the GPU path shares with the CPU is tested on the CPU in
tests/test_device.py.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")

from gcbench.coding import available_schemes, make_scheme  # noqa: E402
from gcbench.testing import check_device_decode_matches_cpu, partition_gradients, valid_parameter_sets  # noqa: E402

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here: the GPU path needs one"),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", available_schemes())
def test_the_gpu_decode_equals_the_cpu_decode_to_rounding(name, dtype):
    """Every registered scheme, every parameter set at n = 6, with no straggler and with the first s: float64
    and float32 within the dot product's rounding bound (gcbench.testing's check)."""
    rng = np.random.default_rng(0)
    for s, params in valid_parameter_sets(name, 6):
        scheme = make_scheme(name, n=6, s=s, **params)
        grads = partition_gradients(scheme.k, 5003, rng, dtype)
        for stragglers in ([], list(range(scheme.tolerance))):
            check_device_decode_matches_cpu(scheme, stragglers, grads, "cuda")


def test_a_learner_on_the_gpu_steps_as_the_cpu_learner_does():
    """The master's learner on CUDA (messages copied there, decoded there, stepped there) against the CPU's,
    over five updates of CR s=2 with one straggler."""
    from gcbench.cluster import Job, Result
    from gcbench.scenario.schema import Training
    from gcbench.training.learner import Learner

    scheme = make_scheme("cr", n=6, s=2)
    training = Training(model="small_cnn", dataset="synthetic")
    cpu, gpu = (Learner(scheme, training, 10, 0, device=device) for device in ("cpu", "cuda"))
    assert next(gpu.model.parameters()).device.type == "cuda"
    rng = np.random.default_rng(1)
    for step in range(5):
        grads = partition_gradients(scheme.k, cpu.d, rng, np.float32) * 1e-3
        results = [Result(Job(w, step * 6 + w, step, 0.0, False), 1.0, 0.0, 1.0, list(scheme.encode(w, grads)),
                          False, {w: 1.0}) for w in range(1, 6)]  # fmt: skip
        cpu.update(results, rescale=False)
        gpu.update(results, rescale=False)
        np.testing.assert_allclose(gpu.weights(), cpu.weights(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("scheme", "s"), [("uncoded", 0), ("fr", 1)])
def test_a_torch_backend_run_on_one_shared_gpu_trains_as_the_same_run_on_the_cpu(scheme, s):
    """Four workers on the one GPU (and the master's learner there): the losses of the CPU run, within float32
    tolerance (cuDNN's convolutions sum in another order)."""
    from gcbench.real.run.standalone import run_variant

    from realhelpers import DATA, scenario

    losses = {}
    for device in ("cpu", "cuda"):
        sc = scenario({"scheme": scheme, "s": s}, iterations=4, training={"device": device})
        iterations, workers = run_variant(sc, sc.variants[0], DATA, 0, backend="torch")
        losses[device] = iterations.sort_values("iteration")["loss"].to_numpy()
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=2e-4)


def test_ddp_ranks_spread_over_the_gpus_and_take_nccl_when_each_has_its_own():
    from gcbench.real.ddp.ddp_run import SHARED_GPU_BACKEND, rank_devices

    from realhelpers import scenario

    count = torch.cuda.device_count()
    sc = scenario({"scheme": "uncoded", "policy": "allreduce"}, workers=4, training={"device": "cuda"})
    devices, backend, shared = rank_devices(sc, 4)
    assert devices == [f"cuda:{r % count}" for r in range(4)]
    assert (backend, shared) == (("nccl", False) if count >= 4 else (SHARED_GPU_BACKEND, True))


def test_the_simulator_trains_on_the_gpu_as_on_the_cpu():
    """training.in_simulator with device cuda: the workers' model and the learner on the GPU, the losses the
    CPU's within float32 tolerance."""
    from gcbench.scenario.schema import Scenario
    from gcbench.sim.training import simulate_training

    from realhelpers import DATA

    losses = {}
    for device in ("cpu", "cuda"):
        sc = Scenario.model_validate({
            "name": "gpu-sim", "workers": 4, "iterations": 4,
            "compute": {"per_partition": {"distribution": "deterministic", "value": 0.01}},
            "variants": [{"scheme": "fr", "s": 1}],
            "training": {"dataset": "synthetic", "batch_size": 32, "device": device, "in_simulator": True},
        })  # fmt: skip
        rec = simulate_training(sc, sc.variants[0], make_scheme("fr", n=4, s=1), 0, DATA)
        losses[device] = rec.loss.copy()
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=2e-4)


@pytest.mark.parametrize("backend", ["nccl", "gloo"])
def test_ddp_ranks_sharing_one_gpu_train_as_one_process_does(backend):
    """Four ranks on one GPU: NCCL (each rank a host of its own to NCCL) and gloo on CUDA tensors, each against
    the local backend on the whole mini-batch. (Last in the file: a process group that cannot form waits for
    the timeout.)"""
    from gcbench.real.ddp.ddp_run import DDPRun, rank_devices
    from gcbench.real.local.train import train_local

    from realhelpers import DATA, scenario

    sc = scenario({"scheme": "uncoded", "policy": "allreduce"}, iterations=3,
                  training={"device": "cuda:0", "ddp_backend": backend, "timeout": 30})  # fmt: skip
    devices, chosen, shared = rank_devices(sc, 4)
    assert devices == ["cuda:0"] * 4 and chosen == backend and shared
    run = DDPRun(sc, 0, 0, DATA, None)
    try:
        run.run_block(3)
    finally:
        run.close()
    iterations, _ = run.frames()
    expected = train_local(DATA, sc.training, 4, 3, 0, torch.device("cuda"))["loss"].to_numpy()
    np.testing.assert_allclose(iterations["loss"].to_numpy(), expected, rtol=1e-3)
