"""Engine behaviour: determinism, parallel = serial, stale work, crashes and fallbacks, tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gcbench.results.schema import ITERATION_COLUMNS, WORKER_COLUMNS
from gcbench.scenario.build import scheme_for
from gcbench.scenario.draws import draw_run
from gcbench.scenario.loading import SweepPoint
from gcbench.sim.runner import simulate_points
from gcbench.sim.synchronous import SimulationStuck, simulate_synchronous

from simhelpers import point, scenario

VARIANTS = [
    {"scheme": "uncoded", "policy": "wait_all"},
    {"scheme": "fr", "s": 1},
    {"scheme": "cr", "s": 2},
    {"scheme": "uncoded", "policy": {"name": "k_async", "k": 3}},
]
STRAGGLING = {"model": "markov", "enter": 0.1, "leave": 0.3, "slowdown": 3.0}


def test_same_seed_gives_bit_identical_tables():
    p = point(variants=VARIANTS, straggling=STRAGGLING, seeds=[3, 4])
    first, second = simulate_points([p]), simulate_points([p])
    pd.testing.assert_frame_equal(first[0], second[0], check_exact=True)
    pd.testing.assert_frame_equal(first[1], second[1], check_exact=True)


def test_parallel_processes_give_the_serial_results():
    p = point(variants=VARIANTS, straggling=STRAGGLING, seeds=[0, 1])
    serial, parallel = simulate_points([p], jobs=1), simulate_points([p], jobs=2)
    pd.testing.assert_frame_equal(serial[0], parallel[0], check_exact=True)


def test_different_seeds_differ():
    p = point(variants=VARIANTS[:1], seeds=[0, 1])
    iterations, _ = simulate_points([p])
    by_seed = iterations.groupby("seed")["duration"].apply(np.array)
    assert not np.array_equal(by_seed[0], by_seed[1])


def test_tables_carry_the_shared_schema():
    iterations, workers = simulate_points([point(variants=VARIANTS, iterations=10)])
    assert set(ITERATION_COLUMNS) <= set(iterations.columns)
    assert set(WORKER_COLUMNS) <= set(workers.columns)
    assert len(iterations) == 4 * 10 and len(workers) == 4 * 10 * 6
    assert (iterations["duration"] > 0).all()


def delayed_once(stale_work: str):
    """Worker 0 is 2 s slow in iteration 0 only; fr tolerates it."""
    sc = scenario(
        workers=4,
        iterations=3,
        compute={"per_partition": {"distribution": "deterministic", "value": 0.1}},
        straggling={"model": "fixed", "workers": [0], "delay": 2.0},
        variants=[{"scheme": "fr", "s": 1}],
        stale_work=stale_work,
    )
    sc = sc.model_copy(update={"straggling": sc.straggling.model_copy(update={"workers": [0]})})
    v = sc.variants[0]
    return sc, v, scheme_for(sc, v)


def test_abandoned_stale_work_does_not_slow_the_next_iteration():
    sc, v, scheme = delayed_once("abandon")
    rec = simulate_synchronous(sc, v, scheme, 0)
    assert np.allclose(rec.end - rec.start, 0.2)  # worker 1 covers the group every time


def test_finishing_stale_work_delays_the_straggler():
    sc, v, scheme = delayed_once("finish")
    rec = simulate_synchronous(sc, v, scheme, 0)
    assert rec.compute_start[1, 0] == pytest.approx(2.2)  # it finished its stale work first
    assert rec.compute_start[1, 1] == pytest.approx(0.2)


CRASH_FOREVER = {"model": "crash", "probability": 1.0, "downtime": None}


def test_permanent_crashes_beyond_tolerance_stop_with_a_clear_error():
    p = point(variants=[{"scheme": "cr", "s": 1}], failures=CRASH_FOREVER, iterations=3)
    with pytest.raises(SimulationStuck, match="iteration 0 can never finish .* policy.fallback: approximate"):
        simulate_points([p])


@pytest.mark.parametrize("engine", ["vectorised", "event"])
def test_can_never_finish_names_the_workers_crashed_for_good_and_counts_those_that_answered(engine):
    """CR with s = 1 on 6 workers, crashes for good: the run stops at the first iteration by which two workers
    have crashed, and the error names them, from the run's own draws (every live worker starts each iteration's
    job at its start, so each drawn crash happens)."""
    failures = {"model": "crash", "probability": 0.1, "downtime": None}
    sc = scenario(variants=[{"scheme": "cr", "s": 1}], failures=failures, iterations=60, engine=engine)
    crash = draw_run(sc, scheme_for(sc, sc.variants[0]), 0).crash
    ever = np.logical_or.accumulate(crash, axis=0)
    t = int(np.flatnonzero(ever.sum(axis=1) >= 2)[0])
    dead = np.flatnonzero(ever[t]).tolist()
    names = f"worker {dead[0]}" if len(dead) == 1 else f"workers {', '.join(map(str, dead[:-1]))} and {dead[-1]}"
    expected = (
        f"variant 'cr(s=1)/decodable': iteration {t} can never finish ({len(dead)} of 6 workers crashed for good "
        f"({names}), {6 - len(dead)} answered; too many for cr with s=1 under decodable); give failures.downtime "
        "or policy.fallback: approximate."
    )
    with pytest.raises(SimulationStuck) as raised:
        simulate_points([SweepPoint({}, sc)])
    assert str(raised.value) == expected


def test_recoverable_crashes_finish_every_iteration_and_are_recorded():
    failures = {"model": "crash", "probability": 0.2, "downtime": 0.5}
    iterations, workers = simulate_points([point(variants=VARIANTS[:3], failures=failures, iterations=50)])
    assert len(iterations) == 150 and np.isfinite(iterations["duration"]).all()
    assert workers["failed"].any()
    assert iterations["exact"].all()


def test_deadline_with_approximate_fallback_reports_the_residual():
    policy = {"name": "deadline", "deadline": 0.5, "fallback": "approximate"}
    iterations, _ = simulate_points([point(variants=[{"scheme": "ignore_stragglers", "s": 1, "policy": policy}])])
    partial = iterations[iterations["messages_used"] < 6]
    assert len(partial) > 50 and (partial["residual"] > 0).all()
    # at the deadline, or at the first message when none came in time
    assert ((iterations["duration"] <= 0.5) | (iterations["messages_used"] == 1)).all()


def test_fastest_k_below_tolerance_is_exact_and_beyond_is_approximate():
    v = [{"scheme": "cr", "s": 2, "policy": {"name": "fastest_k", "k": 3}}]
    iterations, _ = simulate_points([point(variants=v)])
    assert not iterations["exact"].any() and (iterations["residual"] > 0).all()
    v = [{"scheme": "cr", "s": 2, "policy": {"name": "fastest_k", "k": 4}}]  # n - s = 4
    iterations, _ = simulate_points([point(variants=v)])
    assert iterations["exact"].all()


def test_async_records_staleness():
    iterations, _ = simulate_points([point(variants=[{"scheme": "uncoded", "policy": "async"}], iterations=200)])
    assert iterations["staleness"].mean() > 1 and (iterations["stop"] == "k_results").all()


def test_sweep_points_are_labelled():
    points = [SweepPoint({"straggling.slowdown": x}, scenario(variants=VARIANTS[:1])) for x in (2.0, 4.0)]
    iterations, _ = simulate_points(points)
    assert sorted(iterations["straggling.slowdown"].unique()) == [2.0, 4.0]
    assert sorted(iterations["point"].unique()) == [0, 1]


def test_async_workers_that_crash_on_every_job_still_make_progress():
    """Crash probability 1 with recovery: each recovered job completes, so the run ends."""
    failures = {"model": "crash", "probability": 1.0, "downtime": 0.1}
    v = [{"scheme": "uncoded", "policy": {"name": "k_async", "k": 2}}]
    iterations, workers = simulate_points([point(variants=v, failures=failures, iterations=20)])
    assert len(iterations) == 20 and workers["failed"].any()


def test_async_with_every_worker_crashed_for_good_is_a_clear_error():
    failures = {"model": "crash", "probability": 1.0, "downtime": None}
    v = [{"scheme": "uncoded", "policy": "async"}]
    with pytest.raises(SimulationStuck, match="can never finish .every worker crashed for good"):
        simulate_points([point(variants=v, failures=failures, iterations=5)])
    v = [{"scheme": "uncoded", "policy": {"name": "k_async", "k": 2}}]
    with pytest.raises(SimulationStuck, match="k_async waits for 2 distinct workers' results"):
        simulate_points([point(variants=v, failures=failures, iterations=5)])


def test_a_deadline_iteration_where_everything_arrived_in_time_says_all_arrived_and_is_exact():
    # crash_failures.yaml's approximate deadline variant: every message in by 0.1 s, far before the 0.5 s deadline
    policy = {"name": "deadline", "deadline": 0.5, "fallback": "approximate"}
    compute = {"per_partition": {"distribution": "deterministic", "value": 0.1}}
    sc = scenario(variants=[{"scheme": "ignore_stragglers", "s": 2, "policy": policy}], compute=compute, iterations=5)
    rec = simulate_synchronous(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    assert list(rec.reason) == ["all_arrived"] * 5
    assert rec.exact.all() and (rec.residual == 0).all()
    assert (rec.duration == 0.1).all()


def test_an_approximate_scheme_that_misses_the_deadline_is_approximate():
    policy = {"name": "deadline", "deadline": 0.5, "fallback": "approximate"}
    compute = {"per_partition": {"distribution": "deterministic", "value": 0.1}}
    straggling = {"model": "fixed", "workers": [0], "slowdown": 10.0}
    sc = scenario(variants=[{"scheme": "ignore_stragglers", "s": 2, "policy": policy}], compute=compute,
                  straggling=straggling, iterations=3)  # fmt: skip
    rec = simulate_synchronous(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    assert list(rec.reason) == ["deadline"] * 3 and (rec.duration == 0.5).all()
    assert not rec.exact.any() and (rec.residual > 0).all()
