"""The DistributedDataParallel baseline (``policy: allreduce``, issue 11): its scenario errors, and real runs of
n ranks that train as one process does, wait for the slowest rank, use PyTorch's communication hooks, write
the shared tables, resume from a checkpoint and leave no process behind.

Two checks share runs with the torch backend's, in tests/test_torch_cluster.py (each run starts a zygote and
its processes): the baseline's rows in the shared tables and its losses against the local backend's and the
parameter server's (one `gcbench run --backend torch` of every exact scheme and the baseline), and a killed
driver leaving no rank behind, then resuming (one driver running the baseline beside two parameter-server
variants)."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("torch", reason="torch is part of the [real] extra")

from gcbench.cli import app  # noqa: E402
from gcbench.real.ddp.ddp_run import DDPRun, rank_devices, stretches  # noqa: E402
from gcbench.real.local.train import train_local  # noqa: E402
from gcbench.real.run.training_run import VariantStopped  # noqa: E402
from gcbench.training.data import synthetic  # noqa: E402

from realhelpers import DATA, child_processes, children_of, driver, grandchildren_of, scenario, wait_for  # noqa: E402

runner = CliRunner()
TINY = """\
name: tiny
workers: 4
iterations: {iterations}
compute: {{per_partition: {{distribution: exponential, rate: 10}}}}
straggling: {{model: independent, probability: 0.3, delay: 0.2}}
failures: {{model: {failures}}}
variants: [{variants}]
training: {{dataset: synthetic, batch_size: 32, eval_every: 2, device: cpu}}
"""
ALLREDUCE = "{scheme: uncoded, policy: allreduce}"


def tiny(tmp_path, variants: str = ALLREDUCE, iterations: int = 4, failures: str = "none"):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.format(variants=variants, iterations=iterations, failures=failures))
    return path


def refused(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return " ".join(result.output.split())


# -- the scenario -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ("{scheme: cr, s: 1, policy: allreduce}",
         "variants[0].policy: allreduce (DistributedDataParallel) all-reduces every worker's whole gradient, so it "
         "takes scheme: uncoded only, not cr"),
        ("{scheme: uncoded, policy: {name: allreduce, hook: zip}}",
         "variants[0].policy.hook: Input should be 'none', 'fp16', 'bf16' or 'powersgd'"),
        ("{scheme: uncoded, policy: {name: allreduce, hook: powersgd, rank: 0}}",
         "variants[0].policy.rank: Input should be greater than or equal to 1"),
        ("{scheme: uncoded, policy: {name: allreduce, hook: fp16, rank: 4}}",
         "rank is PowerSGD's matrix approximation rank, so it needs hook: powersgd, not fp16"),
    ],
)  # fmt: skip
def test_a_bad_allreduce_variant_is_one_sentence_and_exit_2(tmp_path, variant, message):
    assert message in refused(["run", str(tiny(tmp_path, variant)), "--backend", "torch", "--out", str(tmp_path)])


def test_the_simulator_refuses_allreduce_naming_what_to_simulate_instead(tmp_path):
    output = refused(["simulate", str(tiny(tmp_path)), "--out", str(tmp_path / "sim")])
    assert (
        "variants[0].policy: allreduce is DistributedDataParallel's all-reduce, which only gcbench run trains" in output
    )
    assert "simulate scheme: uncoded with policy: wait_all" in output
    assert not (tmp_path / "sim").exists()


def test_a_real_run_of_allreduce_with_a_failure_model_is_refused(tmp_path):
    path = tiny(tmp_path, failures="crash, probability: 0.1, downtime: 1")
    output = refused(["run", str(path), "--backend", "torch", "--out", str(tmp_path / "run")])
    assert "failures.model is crash, but variant 'uncoded/allreduce' is DistributedDataParallel, which has no fault " \
           "tolerance" in output  # fmt: skip


def test_each_hook_has_its_own_label_so_they_sit_side_by_side():
    from gcbench.scenario.schema import Variant

    policies = [{"name": "allreduce"}, {"name": "allreduce", "hook": "fp16"},
                {"name": "allreduce", "hook": "powersgd", "rank": 2}]  # fmt: skip
    labels = [Variant.model_validate({"scheme": "uncoded", "policy": p}).display_label() for p in policies]
    assert labels == ["uncoded/allreduce", "uncoded/allreduce(fp16)", "uncoded/allreduce(powersgd,rank=2)"]


def test_the_driver_evaluates_between_stretches_that_end_at_every_evaluation():
    sc = scenario({"scheme": "uncoded", "policy": "allreduce"}, iterations=10, training={"eval_every": 4})
    assert stretches(0, 10, sc) == [(0, 4), (4, 8), (8, 10)]
    assert stretches(5, 6, sc) == [(5, 6)]
    assert rank_devices(sc, 4) == (["cpu"] * 4, "gloo", False)


# -- real runs (rank processes) -----------------------------------------------------------------------------
def local_losses(sc, data=DATA) -> np.ndarray:
    import torch

    frame = train_local(data, sc.training, sc.workers, sc.iterations, 0, torch.device("cpu"))
    return frame["loss"].to_numpy()


def ddp(sc, data=DATA, checkpoint=None, straggling=None) -> DDPRun:
    run = DDPRun(sc, 0, 0, data, checkpoint)
    if straggling is not None:
        run.draws.straggling[:] = straggling
        run.rec.straggling[:] = straggling
    return run


def trained(run: DDPRun, blocks: list[int]):
    try:
        for last in blocks:
            run.run_block(last)
    finally:
        run.close()
    return run.frames()


@pytest.mark.slow
def test_on_the_ray_backend_allreduce_runs_its_ranks_without_starting_ray(tmp_path):
    from gcbench.real.ray import start as ray_start

    def no_ray(*args, **kwargs):  # (a shared Ray instance may be up already: ask whether this run starts one)
        raise AssertionError("an allreduce-only run started Ray")

    before = child_processes()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ray_start, "start_ray", no_ray)
        result = runner.invoke(app, ["run", str(tiny(tmp_path, iterations=2)), "--backend", "ray", "--out",
                                     str(tmp_path / "run")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert child_processes() == before
    from gcbench.results import read_results

    iterations, _, meta = read_results(tmp_path / "run")
    assert meta["backend"] == "ray" and list(iterations["policy"]) == ["allreduce"] * 2


@pytest.mark.slow
def test_the_all_reduce_waits_for_the_slowest_rank():
    """Rank 2 sleeps 0.6 s before its backward pass in every iteration: every rank's all-reduce ends after it.
    (Through ``run_variant``, the library's entry point, which trains an allreduce variant as ``gcbench run``.)"""
    from gcbench.real.run.standalone import run_variant

    sc = scenario({"scheme": "uncoded", "policy": "allreduce"}, iterations=3,
                  straggling={"model": "fixed", "workers": [2], "delay": 0.6})  # fmt: skip
    iterations, workers = run_variant(sc, sc.variants[0], DATA, 0, backend="torch")
    assert (iterations["duration"] >= 0.6).all(), iterations["duration"]
    slow = workers[workers["worker"] == 2].set_index("iteration")
    assert (slow["injected_delay"] == 0.6).all() and slow["straggling"].all()
    for t, rows in workers.groupby("iteration"):
        others = rows[rows["worker"] != 2]
        assert (others["compute_end"] < slow.loc[t, "compute_start"] + 0.6).all()  # they were ready long before
        assert (rows["arrival"] >= slow.loc[t, "compute_start"] + 0.6).all()  # but the all-reduce waited
    np.testing.assert_allclose(iterations["loss"], local_losses(sc), rtol=1e-4)


# one mini-batch is the whole (tiny) training set, so gradient descent lowers its loss every iteration
WHOLE = synthetic(train=32, test=16)


@pytest.mark.slow
@pytest.mark.parametrize("hook", ["fp16", "bf16", "powersgd"])
def test_each_communication_hook_trains(hook):
    """fp16 and bf16 named as the policy's hook; PowerSGD as the variant's compression, which maps onto it."""
    variant = {"scheme": "uncoded", "policy": {"name": "allreduce", "hook": hook}}
    if hook == "powersgd":
        variant = {"scheme": "uncoded", "policy": "allreduce", "compression": {"name": "powersgd", "rank": 2}}
    sc = scenario(variant, iterations=6, training={"learning_rate": 0.02})
    assert sc.variants[0].display_label() == "uncoded/allreduce(" + (
        "powersgd,rank=2)" if hook == "powersgd" else f"{hook})"
    )
    iterations, _ = trained(ddp(sc, WHOLE), [6])
    losses, plain = iterations["loss"].to_numpy(), local_losses(sc, WHOLE)
    assert np.isfinite(losses).all() and (np.diff(losses) < 0).all(), losses
    if hook == "powersgd":  # compressed from the third iteration on: no longer the exact trajectory
        np.testing.assert_allclose(losses[:3], plain[:3], rtol=1e-4)
        assert not np.allclose(losses[3:], plain[3:], rtol=1e-6, atol=0)
    else:  # half precision on the wire: close to the exact trajectory
        np.testing.assert_allclose(losses, plain, rtol=2e-2)


@pytest.mark.slow
def test_a_resumed_allreduce_run_continues_from_its_checkpoint_with_the_same_losses(tmp_path):
    sc = scenario({"scheme": "uncoded", "policy": "allreduce"}, iterations=4, training={"checkpoint_every": 2})
    checkpoint = tmp_path / "variant0-seed0.pt"
    trained(ddp(sc, checkpoint=checkpoint), [2])  # then the driver is gone: only the checkpoint is left
    resumed = ddp(sc, checkpoint=checkpoint)
    assert resumed.resumed_at == 2
    iterations, workers = trained(resumed, [4])
    assert list(iterations["iteration"]) == [0, 1, 2, 3] and len(workers) == 16
    assert (iterations["start"].diff().dropna() > 0).all()  # its clock went on from the checkpoint
    np.testing.assert_allclose(iterations["loss"], local_losses(sc), rtol=1e-4)


@pytest.mark.slow
def test_a_rank_killed_from_outside_stops_the_variant_in_one_sentence_and_leaves_no_process():
    sc = scenario({"scheme": "uncoded", "policy": "allreduce"}, iterations=4)
    before = child_processes()
    run = ddp(sc)
    try:
        run.run_block(1)
        os.kill(run.sessions[1].pid, signal.SIGKILL)
        with pytest.raises(VariantStopped) as stopped:
            run.run_block(4)
    finally:
        run.close()
    assert "of 'uncoded/allreduce' exited" in str(stopped.value)
    assert "DistributedDataParallel has no fault tolerance, so the variant stops." in str(stopped.value)
    assert len(stopped.value.iterations) >= 1 and run.stopped
    assert child_processes() == before


@pytest.mark.slow  # (seconds: the everyday lane keeps its cheaper siblings)
def test_loading_a_checkpoint_leaves_its_momentum_untouched(tmp_path):
    """load_checkpoint tries a step on the loaded state; it must not step the checkpoint's own momentum buffer
    (it did: the resumed run of every backend went on with a momentum 0.9 times too small, plus weight decay)."""
    import torch

    from gcbench.real.run.checkpoint import load_checkpoint, save_checkpoint
    from gcbench.training.gradients import FlatModel
    from gcbench.training.models import build_model

    sc = scenario({"scheme": "uncoded", "policy": "allreduce"}, iterations=4)
    model = build_model(sc.training.model, DATA.classes, 0)
    flat = FlatModel(model, sc.training)
    flat.step(torch.ones_like(flat.flat))
    path = tmp_path / "variant0-seed0.pt"
    save_checkpoint(path, model, flat.optimizer, 0, [], [], torch.get_rng_state())
    saved = torch.load(path, weights_only=True)["optimizer"]["state"][0]["momentum_buffer"]
    state = load_checkpoint(path, sc, sc.variants[0], DATA)
    assert torch.equal(state["optimizer"]["state"][0]["momentum_buffer"], saved)


def checkpointed(iterations: int) -> str:
    """The tiny allreduce scenario, with a checkpoint every 2 iterations."""
    text = TINY.format(variants=ALLREDUCE, iterations=iterations, failures="none")
    return text.replace("device: cpu}", "device: cpu, checkpoint_every: 2}")


@pytest.mark.slow
def test_ctrl_c_stops_an_allreduce_run_with_status_130_and_no_rank_left(tmp_path):
    import subprocess
    import time

    from gcbench.real.processes import alive

    (tmp_path / "run.yaml").write_text(checkpointed(5000))  # still running when interrupted
    run = driver("run", str(tmp_path / "run.yaml"), "--backend", "torch", "--out", str(tmp_path / "run"),
                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    assert wait_for(lambda: (tmp_path / "run" / "checkpoints").is_dir() or run.poll() is not None, 240)
    ranks = grandchildren_of(run.pid)  # forked by the zygote, the driver's child
    assert len(ranks) == 4, f"the driver's ranks: {ranks}"
    ranks |= children_of(run.pid)
    time.sleep(0.5)
    os.kill(run.pid, signal.SIGINT)
    output, _ = run.communicate(timeout=120)
    assert run.returncode == 130, output
    assert "interrupted (SIGINT)" in output and not any(alive(pid) for pid in ranks), output


@pytest.mark.slow
@pytest.mark.cuda
@pytest.mark.skipif(
    not __import__("torch").cuda.is_available(), reason="no CUDA device here: the NCCL and CUDA path needs one"
)
@pytest.mark.parametrize("workers", [1, 4])
def test_on_a_gpu_the_ranks_train_on_cuda_as_one_process_does(workers):
    """One GPU per rank: NCCL (1 worker on any GPU machine); more ranks than GPUs: the shared-GPU backend."""
    import torch

    from gcbench.real.ddp.ddp_run import SHARED_GPU_BACKEND

    sc = scenario({"scheme": "uncoded", "policy": "allreduce"}, workers=workers, iterations=3,
                  training={"device": "cuda"})  # fmt: skip
    devices, backend, _ = rank_devices(sc, workers)
    assert backend == ("nccl" if torch.cuda.device_count() >= workers else SHARED_GPU_BACKEND)
    iterations, _ = trained(ddp(sc), [3])
    np.testing.assert_allclose(iterations["loss"], local_losses(sc), rtol=1e-3)


def test_a_rank_that_stops_says_its_errors_first_sentence_whole():
    """gloo's message after the source location it starts with, to its first full stop, never cut mid-word."""
    from gcbench.real.ddp.rank import MOST, first_sentence

    gloo = ("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:561] Connection closed by peer "
            "[10.9.0.2]:16598. This is typically caused by a remote worker crashing. Check the logs")  # fmt: skip
    assert first_sentence(gloo) == "Connection closed by peer [10.9.0.2]:16598."
    assert first_sentence("Timed out after 2.5 s\nmore") == "Timed out after 2.5 s."
    long = first_sentence("word " * 100)
    assert long.endswith("word...") and len(long) <= MOST + 3
    assert first_sentence("") == "(no message)"
