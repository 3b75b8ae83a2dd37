"""Contention (gcbench/models/contention.py): jobs that share a machine's cores, as a processor-sharing queue.

``processor_sharing`` against a stepped simulation, ``cpu_work`` its inverse; a scenario that asks for it where
it cannot hold is refused in one sentence; and calibration, told the cores a run's workers shared, gives back
the compute a job needs alone (ground truth from the simulator)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.models.contention import cpu_work, processor_sharing


def stepped(work: list[float], cores: int, starts: list[float], dt: float = 1e-4) -> list[float]:
    """A time-stepped processor-sharing queue: at each step every started, unfinished job advances
    min(1, cores / a) dt; each job's time from its start."""
    left, done, now = list(work), [None] * len(work), 0.0
    while any(d is None for d in done):
        active = [i for i, d in enumerate(done) if d is None and starts[i] <= now]
        rate = min(1.0, cores / max(len(active), 1))
        now += dt
        for i in active:
            left[i] -= rate * dt
            if left[i] <= 1e-12:
                done[i] = now - starts[i]
    return done


@pytest.mark.parametrize("starts", [[0.0] * 5, [0.0, 0.03, 0.01, 0.2, 0.05]])
def test_processor_sharing_matches_a_stepped_queue(starts):
    work, cores = [0.05, 0.2, 0.11, 0.3, 0.02], 2
    got = processor_sharing(np.array([work]), cores, np.array([starts]))[0]
    assert got == pytest.approx(stepped(work, cores, starts), abs=5e-4)


@given(
    jobs=st.lists(st.tuples(st.floats(1e-3, 10.0), st.floats(0.0, 5.0)), min_size=1, max_size=12),
    cores=st.integers(1, 8),
    together=st.booleans(),
)
def test_cpu_work_gives_back_the_work_of_jobs_sharing_the_cores(jobs, cores, together):
    work, starts = np.array([[w for w, _ in jobs]]), np.array([[0.0 if together else s for _, s in jobs]])
    took = processor_sharing(work, cores, starts)
    assert (took >= work - 1e-9).all()
    np.testing.assert_allclose(cpu_work(starts[0], starts[0] + took[0], cores), work[0], rtol=1e-7, atol=1e-9)


def test_cpu_work_counts_only_the_jobs_computing_meanwhile():
    """Two jobs on one core overlapping for 1 s of their 2 s each: each computed 1.5 core-seconds; a job whose
    times are unknown takes no part and gets NaN."""
    start, end = np.array([0.0, 1.0, np.nan]), np.array([2.0, 3.0, 1.0])
    np.testing.assert_allclose(cpu_work(start, end, 1)[:2], [1.5, 1.5])
    assert np.isnan(cpu_work(start, end, 1)[2])


def test_a_real_runs_work_counts_an_earlier_iterations_job_still_computing():
    """One core. Iteration 0: worker 0 computes over [0, 2], worker 1 over [0, 1]; iteration 1 begins at 1, worker
    1 computing over [1, 3] while worker 0's abandoned job finishes its partition. In a real run worker 0 shared the
    core for all of its 2 s (1.0 core-second) and worker 1's second job for its first second (1.5); the simulator's
    tables, whose abandoned jobs compute beside nothing, count its iteration's jobs only (1.5 and 2.0)."""
    import pandas as pd

    from gcbench.twin.decompose import _core_seconds

    rows = pd.DataFrame({"variant": "FR", "point": 0, "seed": 0, "iteration": [0, 0, 1], "worker": [0, 1, 1],
                         "compute_start": [0.0, 0.0, 1.0], "compute_end": [2.0, 1.0, 3.0], "injected_delay": 0.0,
                         "failed": False})  # fmt: skip
    np.testing.assert_allclose(_core_seconds(rows, 1, real=True), [1.0, 0.5, 1.5])
    np.testing.assert_allclose(_core_seconds(rows, 1, real=False), [1.5, 0.5, 2.0])
    other_seed = rows.assign(seed=[0, 0, 1])  # (another seed's clock: not computing beside it)
    np.testing.assert_allclose(_core_seconds(other_seed, 1, real=True), [1.5, 0.5, 2.0])


BODY = "name: c\nworkers: 4\niterations: 5\nvariants:\n  - {scheme: uncoded, policy: POLICY}\n"


@pytest.mark.parametrize(
    ("compute", "policy", "message"),
    [
        ("{per_partition: {distribution: deterministic, value: 0.1}, cores: 2}", "async",
         "starts each job as its worker is free"),
        ("{trace: {path: t.csv}, cores: 2}", "wait_all", "a trace's times were measured with their own contention"),
        ("{per_partition: {distribution: deterministic, value: 0.1}, cores: 0}", "wait_all", "compute.cores"),
    ],
)  # fmt: skip
def test_cores_where_they_cannot_hold_are_refused_in_one_sentence(tmp_path, compute, policy, message):
    (tmp_path / "t.csv").write_text("0.1,0.1,0.1,0.1\n0.2,0.1,0.1,0.1\n")
    path = tmp_path / "c.yaml"
    path.write_text(f"compute: {compute}\n" + BODY.replace("POLICY", policy))
    result = CliRunner().invoke(app, ["simulate", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and message in result.output, result.output


def test_calibration_told_the_cores_gives_back_the_compute_alone():
    """6 workers on 2 cores (compute.cores: 2) with a known per-partition time: calibrated with cores = 2 the
    per-partition shift comes back, the scenario shares 2 cores again and follows the run within 3%; without,
    the fit absorbs the contention (a per-partition mean half as large again, or more)."""
    from test_calibrate import FIXED, PER_PARTITION, known, simulated_run

    from gcbench.twin.calibrate import calibrate
    from gcbench.twin.evaluate import compare

    sc = known(iterations=800)
    sc = sc.model_copy(update={"compute": sc.compute.model_copy(update={"cores": 2})})
    run = simulated_run(sc)
    shared = calibrate([run], cores=2)
    assert shared.scenario.compute.cores == 2 and shared.fixed == pytest.approx(FIXED, abs=0.006)
    assert shared.fits["per_partition"].distribution["shift"] == pytest.approx(PER_PARTITION["shift"], abs=0.006)
    table = compare(shared.scenario, run)
    assert table["error_mean"].abs().max() < 0.03
    alone = calibrate([run])  # (the simulator's tables record no cores)
    assert alone.scenario.compute.cores is None
    true_mean = PER_PARTITION["shift"] + 1 / PER_PARTITION["rate"]
    assert alone.fits["per_partition"].mean > 1.5 * true_mean > shared.fits["per_partition"].mean / 1.1
