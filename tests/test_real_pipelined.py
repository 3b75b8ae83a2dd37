"""Pipelined schemes on Ray: each worker's cache of partition gradients lives across iterations, and a worker
whose process restarted has lost it, says so, and refills it."""

from __future__ import annotations

import logging

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")
ray = pytest.importorskip("ray", reason="ray is part of the [real] extra")

from realhelpers import make_run, scenario  # noqa: E402

pytestmark = [pytest.mark.usefixtures("local_ray"), pytest.mark.slow]


def test_the_cache_lives_across_iterations_so_staleness_follows_the_schedule(caplog):
    """Pipelined FR, s = 1, wait for all: each step a worker computes one of its 2 partitions and sends the sum
    of its cached ones, so from step 1 on the decode uses a gradient one step old (0 if the cache were lost)."""
    caplog.set_level(logging.WARNING, logger="gcbench")
    sc = scenario({"scheme": "pipelined_fr", "s": 1, "policy": "wait_all"}, iterations=5)
    run = make_run(sc)
    try:
        steps = [run.step(t) for t in range(5)]
        assert [step.staleness for step in steps] == [0.0, 1.0, 1.0, 1.0, 1.0]
        assert all(step.exact and np.isfinite(step.loss) for step in steps)
        assert "lost its cached partition gradients" not in caplog.text
    finally:
        run.shutdown()


def test_a_restarted_worker_has_lost_its_cache_says_so_and_refills_it(caplog):
    """Worker 0's process exits as its job of iteration 2 starts; its first job once Ray restarted it computes
    both of its partitions (the iterations go on without it meanwhile: its group partner answers)."""
    caplog.set_level(logging.WARNING, logger="gcbench")
    failures = {"model": "crash", "probability": 0.5, "downtime": 0.0}
    sc = scenario({"scheme": "pipelined_fr", "s": 1}, failures=failures, iterations=2000)
    run = make_run(sc, crash=[(2, 0)])
    try:
        for t in range(2000):
            step = run.step(t)
            assert step.exact
            if t > 2 and 0 in step.arrivals:
                break
        assert t < 1999, "worker 0 never came back"
        assert "worker 0 lost its cached partition gradients with its process; from step" in caplog.text
        assert "it computes partitions [0, 1] again" in caplog.text
        # once per restarted process (under load Ray may restart it more than once). Only worker 0's from its
        # drawn crash on count: on a loaded machine Ray also restarted actors it had just started (workers 0 and
        # 2 refilled at step 1 at load 10), which no drawn crash caused and the cluster does not count as exits
        refills = [int(line.split("from step ")[1].split()[0]) for line in caplog.text.splitlines()
                   if "worker 0 lost its cached partition gradients" in line]  # fmt: skip
        assert 1 <= sum(step >= 2 for step in refills) <= run.cluster.exits, refills
    finally:
        run.shutdown()


def test_a_resumed_run_counts_steps_on_and_refills_the_caches_its_new_workers_lack(caplog):
    """A run continuing at iteration 3 (as ``--resume`` does) starts fresh workers: step 3 refills every cache,
    so its decode is 0 steps stale and step 4's 1 (counted from step 0, they would read 3 and 4)."""
    from gcbench.real.run.variant_run import VariantRun

    from realhelpers import DATA

    caplog.set_level(logging.WARNING, logger="gcbench")
    sc = scenario({"scheme": "pipelined_fr", "s": 1, "policy": "wait_all"}, iterations=6)
    run = VariantRun(sc, 0, 0, DATA, None)
    run.next_iteration = 3
    try:
        master = run._start()
        for _ in master.steps(3, 6):
            pass
        assert run.rec.staleness[3:].tolist() == [0.0, 1.0, 1.0]
        assert "from step 3 it computes partitions" in caplog.text
    finally:
        run.close()
