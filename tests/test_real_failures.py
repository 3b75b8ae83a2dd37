"""Real failures: the failure model kills worker processes, Ray restarts them, and training goes on.

Within the scheme's tolerance the iteration decodes exactly without the dead
worker; a worker that comes back redoes the iteration with its data and the
current weights; beyond the tolerance the run ends with a clear error (or the
approximate fallback) within seconds, not at the timeout.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")
ray = pytest.importorskip("ray", reason="ray is part of the [real] extra")

from realhelpers import current_weights, make_run, reference_gradient, relative_error, scenario  # noqa: E402

pytestmark = pytest.mark.usefixtures("local_ray")


def pid(master, w: int) -> int:
    return ray.get(master.actors[w].ping.options(max_task_retries=-1).remote(), timeout=60)


def test_a_crash_within_tolerance_loses_no_iteration_and_the_worker_comes_back(caplog):
    """CR with s = 1: worker 0's process exits in iteration 1; that iteration decodes exactly without it."""
    sc = scenario({"scheme": "cr", "s": 1}, failures={"model": "crash", "probability": 0.5, "downtime": 0.0})
    master = make_run(sc, crash=[(1, 0)])
    try:
        before = pid(master, 0)
        for t in range(3):
            weights = current_weights(master)
            step = master.step(t)
            assert step.exact and relative_error(step.gradient, reference_gradient(master, weights, t)) < 1e-4
            if t == 0:
                assert not step.failed
            if t == 1:  # (in iteration 2 it may still be restarting)
                assert step.failed == {0} and 0 not in step.arrivals
        master.finish()  # the crash may be reported after the last iteration ended
        # (Ray may also fail a call that reaches the actor while it restarts: that counts as a failure too)
        assert master.cluster.exits >= 1
        assert pid(master, 0) != before, "the crashed worker's process did not exit"
        assert "worker 0's process exited (a crash the failure model drew)" in caplog.text
    finally:
        master.shutdown()


def test_a_worker_back_from_its_downtime_redoes_the_iteration_with_its_data_and_the_current_weights():
    """Uncoded, wait for all: worker 2 crashes in iteration 1 and is down 0.5 s; the master waits for its redo."""
    sc = scenario(
        {"scheme": "uncoded", "policy": "wait_all"}, failures={"model": "crash", "probability": 0.5, "downtime": 0.5}
    )
    master = make_run(sc, crash=[(1, 2)])
    try:
        master.step(0)
        weights = current_weights(master)
        step = master.step(1)
        assert step.reason == "all_arrived" and step.failed == {2} and 2 in step.arrivals
        assert step.end - step.start >= 0.5, "the worker was used before its downtime ended"
        assert relative_error(step.gradient, reference_gradient(master, weights, 1)) < 1e-4
    finally:
        master.shutdown()


def test_a_process_killed_from_outside_is_restarted_given_its_data_and_redoes_the_iteration():
    """A failure the scenario did not draw (ray.kill of worker 3's actor); wait_all needs worker 3 back."""
    sc = scenario({"scheme": "uncoded", "policy": "wait_all"})
    master = make_run(sc)
    try:
        master.step(0)
        before = pid(master, 3)
        ray.kill(master.actors[3], no_restart=False)
        for t in (1, 2):
            weights = current_weights(master)
            step = master.step(t)
            assert step.reason == "all_arrived" and 3 in step.arrivals
            assert relative_error(step.gradient, reference_gradient(master, weights, t)) < 1e-4
        assert master.cluster.exits >= 1 and pid(master, 3) != before
    finally:
        master.shutdown()


def actor_state(master, w: int) -> str:
    from ray._private.state import actors

    return actors(actor_id=master.actors[w]._actor_id.hex()).get("State", "")


def test_a_worker_killed_while_idle_is_failed_while_ray_restarts_it():
    """CR with s = 1: worker 3 is killed between iterations; iteration 1 decodes without it and records it failed
    (its job waits for the restart, so no job of it has failed yet)."""
    master = make_run(scenario({"scheme": "cr", "s": 1}))
    try:
        master.step(0)
        time.sleep(1.0)  # every worker is idle
        ray.kill(master.actors[3], no_restart=False)
        until = time.time() + 20
        while actor_state(master, 3) != "RESTARTING" and time.time() < until:
            time.sleep(0.05)
        assert actor_state(master, 3) == "RESTARTING"
        step = master.step(1)
        assert 3 not in step.arrivals and step.exact
        assert step.failed == {3}
    finally:
        master.shutdown()


def test_more_crashes_for_good_than_the_scheme_tolerates_is_a_clear_error_within_seconds():
    """FR with s = 1 on 4 workers: both workers of one group die for good; the data of that group is gone."""
    sc = scenario({"scheme": "fr", "s": 1}, failures={"model": "crash", "probability": 0.5, "downtime": None})
    master = make_run(sc, crash=[(1, 0), (1, 1)])
    try:
        master.step(0)
        begin = time.time()
        who = r"\(2 of 4 workers crashed for good \(workers 0 and 1\), 2 answered; too many for fr with s=1"
        with pytest.raises(Exception, match=r"iteration 1 can never finish " + who):
            master.step(1)
        assert time.time() - begin < 20, "the master waited for the timeout instead of seeing the crashes"
    finally:
        master.shutdown()


def test_beyond_tolerance_the_approximate_fallback_keeps_training():
    sc = scenario(
        {"scheme": "fr", "s": 1, "policy": {"name": "decodable", "fallback": "approximate"}},
        failures={"model": "crash", "probability": 0.5, "downtime": None},
    )
    master = make_run(sc, crash=[(1, 0), (1, 1)])
    try:
        master.step(0)
        for t in (1, 2):
            step = master.step(t)
            assert step.reason == "fallback_approximate" and not step.exact and step.residual > 0
            assert step.failed == {0, 1} and set(step.arrivals) == {2, 3}
            assert np.isfinite(step.loss)
    finally:
        master.shutdown()


def test_gcbench_run_records_real_crashes_in_the_failed_column(tmp_path):
    from typer.testing import CliRunner

    from gcbench.cli import app
    from gcbench.results import read_results

    path = tmp_path / "crashes.yaml"
    path.write_text(
        "name: crashes\nworkers: 4\niterations: 6\nseeds: [3]\n"
        "compute: {per_partition: {distribution: deterministic, value: 0.02}}\n"
        "failures: {model: crash, probability: 0.08, downtime: 0.1}\n"
        "variants: [{scheme: cr, s: 1}]\n"
        "training: {dataset: synthetic, batch_size: 32, device: cpu, timeout: 60}\n"
    )
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    iterations, workers, _ = read_results(tmp_path / "out")
    assert iterations["iteration"].tolist() == list(range(6))
    assert workers["failed"].any(), "seed 3 draws crashes; none was recorded"


def test_a_variant_that_cannot_go_on_keeps_its_iterations_and_the_others_still_run(tmp_path):
    """Seed 2 kills worker 3 in iteration 1 and worker 2 in iteration 2, for good: uncoded cannot finish
    iteration 1; FR with the approximate fallback trains on. Exit code 2, and both variants' rows are written."""
    from typer.testing import CliRunner

    from gcbench.cli import app
    from gcbench.results import read_results

    path = tmp_path / "dead.yaml"
    path.write_text(
        "name: dead\nworkers: 4\niterations: 3\nseeds: [2]\n"
        "compute: {per_partition: {distribution: deterministic, value: 0.01}}\n"
        "failures: {model: crash, probability: 0.3, downtime: null}\n"
        "variants: [{scheme: uncoded, policy: wait_all}, {scheme: fr, s: 1, policy: {name: decodable, "
        "fallback: approximate}}]\ntraining: {dataset: synthetic, batch_size: 32, device: cpu}\n"
    )
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "variant 'uncoded/wait_all': iteration 1 can never finish" in result.output
    assert "1 variant(s) stopped early (uncoded/wait_all)" in result.output
    iterations, workers, _ = read_results(tmp_path / "out")
    done = iterations.groupby("variant")["iteration"].apply(list).to_dict()
    assert done == {"uncoded/wait_all": [0], "fr(s=1)/decodable": [0, 1, 2]}
    fr = workers[workers["variant"] == "fr(s=1)/decodable"].set_index(["iteration", "worker"])["failed"]
    assert fr[(1, 3)] and fr[(2, 2)] and fr[(2, 3)] and not fr[(0, 3)]
