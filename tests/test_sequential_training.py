"""sr_sgc and m_sgc trained in the simulator: job t's gradient, computed on the weights of round t (a repeated task
included, B rounds later), decoded exactly at the end of round t + B and applied then (delayed SGD). So the
updates do not depend on which workers straggled: a run with bursty stragglers, lost results and repeated tasks
trains exactly as one where every worker answers every round (wait_all, no straggling). M-SGC's mini-tasks each
compute their own job's message on that job's weights and mini-batch, a D1 chunk redone in a D2 slot included."""

from __future__ import annotations

import numpy as np
import pytest

from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")

from gcbench.sim.training import simulate_training  # noqa: E402

N, ROUNDS = 6, 24
TRAINING = {
    "in_simulator": True, "dataset": "synthetic", "model": "softmax", "batch_size": 60,
    "learning_rate": 3e-5, "eval_every": 8,
}  # fmt: skip
SR = {"scheme": "sr_sgc", "s": 1, "burst": 1, "window": 2, "lam": 2}


def run(variant: dict, straggling: dict, batch_size: int = 60, **fields) -> tuple:
    scenario = Scenario.model_validate({
        "name": "sequential", "workers": N, "iterations": ROUNDS, "stale_work": "abandon",
        "compute": {"per_partition": {"distribution": "shifted_exponential", "shift": 0.01, "rate": 100}},
        "straggling": straggling, "gradient": {"length": 30730}, "variants": [variant],
        "training": {**TRAINING, "batch_size": batch_size}, **fields,
    })  # fmt: skip
    variant = scenario.variants[0]
    scheme = scheme_for(scenario, variant)
    return simulate_training(scenario, variant, scheme, 0), scheme


BURSTS = {"model": "markov", "enter": 0.15, "leave": 0.4, "slowdown": 8}
NONE = {"model": "none"}


@pytest.mark.blas  # torch's losses of two computations, to 1e-5
@pytest.mark.parametrize("policy", ["decodable", {"name": "relative_deadline", "mu": 1.0}])
def test_sr_sgc_trains_the_same_delayed_updates_whoever_straggles(policy):
    straggled, _ = run({**SR, "policy": policy}, BURSTS)
    calm, _ = run({**SR, "policy": "wait_all"}, NONE)  # every worker answers every round
    uncoded, _ = run({"scheme": "uncoded", "policy": "wait_all"}, NONE)
    # the stragglers cost results: rounds that ended without every worker (lost, then repeated or not needed)
    assert (straggled.used.sum(axis=1) < N).sum() >= 3 and calm.used.all()
    assert np.isnan(straggled.loss[:1]).all() and np.isfinite(straggled.loss[1:]).all()
    # the first update is job 0's gradient on the initial weights: uncoded's first
    np.testing.assert_allclose(straggled.loss[1], uncoded.loss[0], rtol=1e-5)
    # exact decodes from different workers: the same updates, to float32 rounding of the loss (as
    # tests/test_sim_training.py holds the exact schemes to uncoded training)
    np.testing.assert_allclose(straggled.loss[1:], calm.loss[1:], rtol=1e-5, atol=1e-7)
    assert not np.allclose(straggled.loss[1:], uncoded.loss[: ROUNDS - 1], rtol=1e-5)  # delayed: not uncoded's
    assert straggled.loss[-1] < straggled.loss[1]  # it learns


@pytest.mark.blas
def test_a_repeated_task_computes_its_jobs_weights_and_mini_batch():
    """Rounds that lose more than s' results make the next round repeat those tasks: the run must still equal
    the calm one, which it cannot if a repeat computed the current weights or the current mini-batch."""
    heavy = {"model": "markov", "enter": 0.3, "leave": 0.7, "slowdown": 8}
    variant = {**SR, "burst": 2, "window": 3, "lam": 2}  # s' = ceil(2 * 2 / 4) = 1
    straggled, scheme = run(variant, heavy)
    calm, _ = run({**variant, "policy": "wait_all"}, NONE)
    assert (straggled.used.sum(axis=1) < N - 1).any()  # more than s' lost: repeats follow
    assert scheme.delay == 2 and np.isnan(straggled.loss[:2]).all()
    np.testing.assert_allclose(straggled.loss[2:], calm.loss[2:], rtol=1e-5, atol=1e-7)


def test_a_real_sr_sgc_run_does_not_continue_from_a_checkpoint(monkeypatch, tmp_path):
    """Its last B jobs' results, waiting for their decode, are not in a checkpoint: it says so rather than
    decode those jobs from nothing."""
    from gcbench.errors import GcbenchError
    from gcbench.real.run import variant_run
    from gcbench.training.data import synthetic

    monkeypatch.setattr(variant_run, "load_checkpoint", lambda *args: {"next_iteration": 3})
    scenario = Scenario.model_validate({
        "name": "resume", "workers": 4, "iterations": 6, "variants": [SR],
        "compute": {"per_partition": {"distribution": "deterministic", "value": 0.01}},
        "training": {"dataset": "synthetic", "batch_size": 32},
    })  # fmt: skip
    with pytest.raises(GcbenchError, match=r"cannot continue from its checkpoint: the results its last 1 job"):
        variant_run.VariantRun(scenario, 0, 0, synthetic(train=64, test=16), tmp_path / "checkpoint")


@pytest.mark.blas
@pytest.mark.parametrize("stale_work", ["abandon", "finish"])
def test_crashes_and_late_work_leave_the_updates_as_they_were(stale_work):
    """A crashed worker redoes its round's task on that task's job's weights once back; with ``finish`` a worker
    works through a round that ended without it (on the latest weights: its result is never used)."""
    failures = {"model": "crash", "probability": 0.15, "downtime": 0.05}
    straggled, _ = run(SR, BURSTS, failures=failures, stale_work=stale_work)
    calm, _ = run({**SR, "policy": "wait_all"}, NONE)
    assert straggled.failed.any()
    np.testing.assert_allclose(straggled.loss[1:], calm.loss[1:], rtol=1e-5, atol=1e-7)


@pytest.mark.blas
@pytest.mark.parametrize("policy", ["decodable", {"name": "relative_deadline", "mu": 1.0}])
def test_m_sgc_trains_the_same_delayed_updates_whoever_straggles(monkeypatch, policy):
    from gcbench.coding.multiplexed import MultiplexedRounds

    redos = []
    begin = MultiplexedRounds.begin

    def spy(state, r):
        begin(state, r)
        redos.append(int((state.redo[:, :, r] >= 0).sum()))

    monkeypatch.setattr(MultiplexedRounds, "begin", spy)
    heavy = {"model": "markov", "enter": 0.3, "leave": 0.7, "slowdown": 8}
    variant = {"scheme": "m_sgc", "burst": 1, "window": 3, "lam": 2, "policy": policy}  # k = 6 x 7 = 42
    straggled, scheme = run(variant, heavy, batch_size=84)
    assert sum(redos) > 0  # lost D1 chunks were redone in D2 slots
    calm, _ = run({**variant, "policy": "wait_all"}, NONE, batch_size=84)
    assert scheme.delay == 2 and np.isnan(straggled.loss[:2]).all() and np.isfinite(straggled.loss[2:]).all()
    assert (straggled.used.sum(axis=1) < N).sum() >= 3 and calm.used.all()
    np.testing.assert_allclose(straggled.loss[2:], calm.loss[2:], rtol=1e-5, atol=1e-7)
    assert (straggled.staleness[2:] == 2).all()
    assert straggled.loss[-1] < straggled.loss[2]  # it learns
