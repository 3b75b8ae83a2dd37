"""The event engine collects young garbage less often during a run (gcbench.sim.gc_thresholds.py), and restores the
collector's thresholds after it, whether it finished or failed."""

from __future__ import annotations

import gc

import pytest

from gcbench.master import SimulationStuck
from gcbench.scenario.build import scheme_for
from gcbench.sim.cluster import SimPyCluster
from gcbench.sim.event import simulate_event
from gcbench.sim.gc_thresholds import YOUNG_THRESHOLD, young_jobs_collected_young

from simhelpers import scenario


class ThresholdWatchingCluster(SimPyCluster):
    """Notes, at each job, the collector's thresholds."""

    seen: list[tuple[int, int, int]] = []

    def submit(self, worker, job, row, crash, batch=None):
        self.seen.append(gc.get_threshold())
        return super().submit(worker, job, row, crash, batch)


@pytest.mark.parametrize("policy", ["async", "wait_all"])
def test_a_run_collects_its_young_objects_less_often_then_restores_the_thresholds(policy):
    sc = scenario(variants=[{"scheme": "uncoded", "policy": policy}])
    before, ThresholdWatchingCluster.seen = gc.get_threshold(), []
    simulate_event(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0, ThresholdWatchingCluster)
    assert set(ThresholdWatchingCluster.seen) == {(YOUNG_THRESHOLD, *before[1:])}
    assert gc.get_threshold() == before


def test_a_run_that_fails_restores_the_thresholds():
    before = gc.get_threshold()
    crashes = {"model": "crash", "probability": 1.0}  # every worker dead for good: the run is stuck
    sc = scenario(variants=[{"scheme": "uncoded", "policy": "async"}], failures=crashes)
    with pytest.raises(SimulationStuck):
        simulate_event(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    assert gc.get_threshold() == before


def test_a_higher_threshold_set_by_the_caller_is_kept():
    before = gc.get_threshold()
    gc.set_threshold(2 * YOUNG_THRESHOLD, *before[1:])
    try:
        with young_jobs_collected_young():
            assert gc.get_threshold()[0] == 2 * YOUNG_THRESHOLD
        assert gc.get_threshold()[0] == 2 * YOUNG_THRESHOLD
    finally:
        gc.set_threshold(*before)
