"""Pipelined CR and FR (gcbench/coding/pipelined.py): one partition a step, CR's and FR's code on cached
partition gradients, staleness recorded per update, in the simulator's timing and training."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.coding import make_scheme
from gcbench.scenario import load_scenario
from gcbench.scenario.build import scheme_for
from gcbench.scenario.draws import draw_run
from gcbench.sim.event import simulate_event
from gcbench.sim.synchronous import simulate_synchronous

from simhelpers import scenario

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
DETERMINISTIC = {"per_partition": {"distribution": "deterministic", "value": 0.1}}


def test_gcbench_schemes_shows_load_one_per_step_and_what_a_worker_holds():
    result = runner.invoke(app, ["schemes", "pipelined_cr", "--n", "6", "--s", "2"])
    assert result.exit_code == 0, result.output
    assert "load 1 partitions/worker per step, holding 3" in result.output
    table = runner.invoke(app, ["schemes"])
    assert "pipelined_cr" in table.output and "pipelined_fr" in table.output and "1 (holds s + 1)" in table.output


def test_pipelined_fr_refuses_s_plus_one_not_dividing_n_in_one_sentence():
    result = runner.invoke(app, ["schemes", "pipelined_fr", "--n", "10", "--s", "2"])
    assert result.exit_code == 2 and "pipelined_fr needs (s+1) to divide n" in result.output


def test_fr_keeps_its_code_cr_its_placement_with_sums_and_the_schedule_cycles_through_the_held_partitions():
    fr, pipelined_fr = make_scheme("fr", n=6, s=2), make_scheme("pipelined_fr", n=6, s=2)
    assert np.array_equal(fr.coefficients, pipelined_fr.coefficients) and fr.load == 3 and pipelined_fr.load == 1
    cr, pipelined_cr = make_scheme("cr", n=6, s=2), make_scheme("pipelined_cr", n=6, s=2)
    assert np.array_equal(pipelined_cr.assignment_matrix(), cr.assignment_matrix())
    assert set(np.unique(pipelined_cr.coefficients)) == {0.0, 1.0}
    # the authors' decoder: n / (r (s + 1)) on each received message; unbiased, exact when all answer
    decoding = pipelined_cr.decoding(range(4))
    np.testing.assert_allclose(decoding.weights, 6 / (4 * 3))
    assert pipelined_cr.decode_quality(range(6)) == (True, 0.0)
    scheme = make_scheme("pipelined_cr", n=6, s=2)
    # each step every partition is computed fresh by exactly one worker
    for step in range(6):
        assert sorted(scheme.computes(w, step)[0] for w in range(6)) == list(range(6))
    assert [scheme.computes(4, t) for t in range(4)] == [(4,), (5,), (0,), (4,)]


def test_the_simulated_iteration_takes_one_partition_after_the_warm_up_step():
    """Deterministic 0.1 s per partition, no network: CR's step takes 3 partitions, pipelined CR's 1 (its step
    0 computes all 3, filling the caches)."""
    fields = dict(workers=6, iterations=5, compute=DETERMINISTIC, network={"latency": 0.0, "bandwidth": 1e30},
                  variants=[{"scheme": "cr", "s": 2}, {"scheme": "pipelined_cr", "s": 2}])  # fmt: skip
    sc = scenario(**fields)
    cr, pipelined = (simulate_synchronous(sc, v, scheme_for(sc, v), 0) for v in sc.variants)
    np.testing.assert_allclose(cr.duration, 0.3)
    np.testing.assert_allclose(pipelined.duration, [0.3, 0.1, 0.1, 0.1, 0.1])
    event = simulate_event(sc, sc.variants[1], scheme_for(sc, sc.variants[1]), 0)
    np.testing.assert_allclose(event.duration, pipelined.duration)
    draws = draw_run(sc, scheme_for(sc, sc.variants[1]), 0)
    assert (draws.loads == 1).all()


def test_the_warm_up_draws_leave_the_other_streams_alone():
    sc = scenario(workers=6, iterations=8, straggling={"model": "independent", "probability": 0.3, "slowdown": 3})
    cr = draw_run(sc, make_scheme("uncoded", n=6), 3)
    pipelined = draw_run(sc, make_scheme("pipelined_cr", n=6, s=2), 3)
    assert np.array_equal(cr.straggling, pipelined.straggling) and np.array_equal(cr.busy[1:], pipelined.busy[1:])
    assert (pipelined.busy[0] > cr.busy[0]).all()


def test_an_asynchronous_policy_is_refused_in_one_sentence(tmp_path):
    path = tmp_path / "async.yaml"
    variant = "{scheme: pipelined_cr, s: 1, policy: {name: k_async, k: 3}}"
    path.write_text(f"name: a\nworkers: 6\niterations: 5\nvariants: [{variant}]\n"
                    "compute: {per_partition: {distribution: exponential, rate: 1.0}}\n")  # fmt: skip
    result = runner.invoke(app, ["simulate", str(path), "--check"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "pipelined_cr refreshes each worker's cached partition gradients once per synchronous step" in (
        " ".join(result.output.split())
    )


torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")

from test_sim_training import run  # noqa: E402


@pytest.mark.parametrize("name", ["pipelined_cr", "pipelined_fr"])
def test_with_every_job_finishing_staleness_follows_the_round_robin_schedule(name):
    rec = run({"scheme": name, "s": 2}, stale_work="finish")
    assert np.isfinite(rec.loss).all() and rec.exact.all() == (name == "pipelined_fr")
    np.testing.assert_array_equal(rec.staleness, np.minimum(np.arange(rec.iterations), 2))


def test_an_abandoned_job_refreshes_nothing_and_the_recorded_staleness_says_so():
    """With ``abandon`` a straggler's step is lost, so a partition can be older than s: recorded as it is."""
    rec = run({"scheme": "pipelined_cr", "s": 2})
    assert rec.staleness.max() > 2 and (rec.staleness <= np.arange(rec.iterations)).all()


def test_a_crash_loses_the_cache_and_the_next_job_refills_it():
    from gcbench.sim.training import TrainingCluster, simulate_training

    failures = {"model": "crash", "probability": 0.15, "downtime": 0.05}
    seen = []
    original = TrainingCluster.shutdown

    def keep(self, interrupted=False):
        seen.append(list(self.refills))
        original(self, interrupted)

    sc = _trained(failures=failures, stale_work="finish")
    TrainingCluster.shutdown = keep
    try:
        rec = simulate_training(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    finally:
        TrainingCluster.shutdown = original
    crashed = {(w, t) for t, w in zip(*np.nonzero(rec.failed), strict=True) if t > 0}
    assert seen[0] and {(w, t) for w, t in seen[0]} <= crashed | {(w, t + 1) for w, t in crashed}
    assert np.isfinite(rec.loss).all()


CRASHES = {"model": "crash", "probability": 0.15, "downtime": 0.05}


@pytest.mark.parametrize(
    ("name", "policy", "fields"),
    [
        ("pipelined_cr", "decodable", {}),  # abandoned straggler steps: ages beyond s
        ("pipelined_fr", "decodable", {"stale_work": "finish"}),
        ("pipelined_cr", {"name": "fastest_k", "k": 4}, {"failures": CRASHES, "stale_work": "finish"}),
        ("pipelined_fr", {"name": "deadline", "deadline": 0.03, "fallback": "approximate"}, {"failures": CRASHES}),
    ],
    ids=["cr-abandon", "fr-finish", "cr-fastest_k-crashes-finish", "fr-deadline-crashes-abandon"],
)
def test_a_timing_only_run_records_the_staleness_the_trained_run_records(name, policy, fields):
    """The ages of the cached partition gradients a decode uses follow from the timing alone: the run that
    computes no gradients (on the engine `gcbench simulate` chooses) records the trained run's column."""
    from test_sim_training import trained

    from gcbench.scenario.loading import SweepPoint
    from gcbench.sim.runner import simulate_points

    sc = trained(iterations=30, variants=[{"scheme": name, "s": 2, "policy": policy}], **fields)
    timing = sc.model_copy(update={"training": sc.training.model_copy(update={"in_simulator": False})})
    (with_training, _), (alone, _) = (simulate_points([SweepPoint({}, s)], jobs=1) for s in (sc, timing))
    np.testing.assert_array_equal(alone["duration"], with_training["duration"])
    np.testing.assert_array_equal(alone["staleness"], with_training["staleness"])
    assert alone["staleness"].max() > 0 and (alone["staleness"] <= alone["iteration"]).all()
    if fields == {}:
        assert alone["staleness"].max() > 2  # a lost step leaves a partition older than s


def _trained(**fields):
    from test_sim_training import trained

    return trained(variants=[{"scheme": "pipelined_cr", "s": 2}], **fields)


@pytest.mark.slow
def test_pipelined_cr_reaches_the_target_on_the_shipped_training_scenario():
    (point,) = load_scenario(ROOT / "scenarios" / "trained_sweep.yaml")
    sc = point.scenario.model_copy(update={"variants": [v for v in point.scenario.variants if v.scheme == "cr"]})
    from gcbench.sim.training import simulate_training

    variant = sc.variants[0].model_copy(update={"scheme": "pipelined_cr", "label": "pipelined CR s=2"})
    rec = simulate_training(sc, variant, scheme_for(sc, variant), 0)
    assert rec.loss[-10:].mean() < 0.5 * rec.loss[:10].mean()
    assert np.nanmax(rec.accuracy) >= sc.training.target_accuracy


def test_gcbench_run_refuses_a_pipelined_variant_off_ray_in_one_sentence(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(
        "name: p\nworkers: 4\niterations: 2\nvariants: [{scheme: pipelined_fr, s: 1}]\n"
        "compute: {per_partition: {distribution: deterministic, value: 0.01}}\n"
        "training: {dataset: synthetic, batch_size: 32, device: cpu}\n"
    )
    result = runner.invoke(app, ["run", str(path), "--backend", "torch", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "which only --backend ray has; --backend torch cannot run it" in " ".join(result.output.split())
