"""sr_sgc and m_sgc on Ray: job t's gradient, decoded at the end of round t + B from results of rounds t and t + B
(M-SGC: from its mini-tasks of rounds t to t + W - 2 + B), is the gradient of mini-batch t on the weights of round
t, a repeated task's (a redone chunk's) included: each job or mini-task is sent the weights it computes on. The
torch backend, whose workers compute on the latest weights only, refuses both in one sentence."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")
ray = pytest.importorskip("ray", reason="ray is part of the [real] extra")

from realhelpers import current_weights, make_run, reference_gradient, relative_error, scenario  # noqa: E402

pytestmark = [pytest.mark.usefixtures("local_ray"), pytest.mark.slow]

SR = {"scheme": "sr_sgc", "s": 1, "burst": 1, "window": 2, "lam": 2}
# the stragglers' delay: past the deadline, 21 times the fastest arrival (mu 20), while that arrival is under
# 0.24 s (at 3 s, 0.14 s: twice, under CI's load, round 1's stragglers came in by the deadline)
STRAGGLING = {"model": "independent", "probability": 0.5, "delay": 5.0}
# the authors' round rule, at a deadline far past every worker but the stragglers: round 0 waits for all


def rounds_on_their_weights(run, rounds: int) -> list:
    """Run the rounds one at a time; the weights each was dispatched on."""
    weights = []
    for t in range(rounds):
        weights.append(current_weights(run))
        for _ in run.master.steps(t, t + 1):
            pass
    return weights


def test_each_update_is_its_jobs_gradient_on_its_jobs_weights_repeats_included():
    """Workers 0 and 1 straggle in round 1: their results for job 1 are lost (the pattern fits lambda = 2), so in
    round 2 worker 0 repeats its job-1 task, on round 1's weights, and job 1 decodes at round 2's end."""
    sc = scenario({**SR, "policy": {"name": "relative_deadline", "mu": 20.0}}, straggling=STRAGGLING, iterations=5)
    run = make_run(sc, straggling=[(1, 0), (1, 1)])
    try:
        weights = rounds_on_their_weights(run, 5)
        rec = run.rec
        assert rec.used[1].tolist() == [False, False, True, True]  # round 1 ended without its stragglers
        assert run.master.rounds.serves(0, 2) == 1 and run.master.rounds.serves(1, 2) == 2  # worker 0 repeats
        assert np.isnan(rec.loss[0]) and np.isnan(rec.staleness[0]) and (rec.staleness[1:] == 1).all()
        assert len(run.gradients) == 4
        for t, gradient in zip(range(1, 5), run.gradients, strict=True):
            expected = reference_gradient(run, weights[t - 1], t - 1)  # job t - 1, on round t - 1's weights
            assert relative_error(gradient, expected) < 1e-5, t
    finally:
        run.shutdown()


def test_each_m_sgc_update_is_its_jobs_gradient_on_its_jobs_weights_redone_chunks_included():
    """B = 1, W = 3, lambda = 1 (k = 20, T = 2): worker 0 straggles in round 1 and loses job 0's chunk 1 (and job
    1's chunk 0); in round 2 its D2 slot redoes job 0's chunk 1 on round 0's weights, and job 0 decodes at round
    2's end from every chunk and 3 of group 0's 4 results."""
    variant = {
        "scheme": "m_sgc",
        "burst": 1,
        "window": 3,
        "lam": 1,
        "policy": {"name": "relative_deadline", "mu": 20.0},
    }
    sc = scenario(variant, straggling=STRAGGLING, iterations=5, training={"batch_size": 40})
    run = make_run(sc, straggling=[(1, 0)])
    try:
        weights = rounds_on_their_weights(run, 5)
        rec = run.rec
        assert rec.used[1].tolist() == [False, True, True, True]  # round 1 ended without its straggler
        assert run.master.rounds.tasks(0, 2) == ((2, 0), (1, 1), (0, 1))  # the redo of job 0's chunk 1
        assert run.master.rounds.tasks(1, 2) == ((2, 0), (1, 1), (0, 2))  # group 0's task
        assert np.isnan(rec.loss[:2]).all() and (rec.staleness[2:] == 2).all()
        assert len(run.gradients) == 3
        for t, gradient in zip(range(2, 5), run.gradients, strict=True):
            expected = reference_gradient(run, weights[t - 2], t - 2)  # job t - 2, on round t - 2's weights
            assert relative_error(gradient, expected) < 1e-5, t
    finally:
        run.shutdown()


def test_the_torch_backend_refuses_sr_sgc_in_one_sentence(tmp_path):
    from typer.testing import CliRunner

    from gcbench.cli import app

    path = tmp_path / "sr.yaml"
    path.write_text(
        "name: sr\nworkers: 4\niterations: 3\ntraining: {dataset: synthetic, batch_size: 32}\n"
        "compute: {per_partition: {distribution: deterministic, value: 0.01}}\n"
        "variants:\n  - {scheme: sr_sgc, s: 1, burst: 1, window: 2, lam: 2}\n"
    )
    result = CliRunner().invoke(app, ["run", str(path), "--backend", "torch", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "only --backend ray sends its workers" in result.output, result.output
    path.write_text(path.read_text().replace("{scheme: sr_sgc, s: 1,", "{scheme: m_sgc,"))
    result = CliRunner().invoke(app, ["run", str(path), "--backend", "torch", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "computes tasks of earlier jobs" in result.output, result.output
