"""`gcbench run` on Ray, end to end: synchronous and asynchronous variants taking turns (each block a checkpoint,
every iteration exactly once, each variant's clock stopped while the others run), --variants for real, the
shared schema with loss and accuracy, and asynchronous policies recording their staleness.

One run serves every check here (each variant starts its Ray actors, each importing torch: seconds apiece, so
two workers a variant); the checks read its output and tables.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

pytest.importorskip("ray", reason="ray is part of the [real] extra")

from typer.testing import CliRunner  # noqa: E402

from gcbench.cli import app  # noqa: E402
from gcbench.results import read_results  # noqa: E402

SCENARIO = """\
name: turns
workers: 2
iterations: 6
compute:
  per_partition: {distribution: exponential, rate: 20}
  overhead: {distribution: deterministic, value: 0.05}  # every job sleeps 50 ms: see the staleness test
straggling: {model: independent, probability: 0.3, delay: 0.2}
variants:
  - {label: uncoded, scheme: uncoded, policy: wait_all}
  - {label: CR s=1, scheme: cr, s: 1}
  - {label: FR s=1, scheme: fr, s: 1}
  - {label: async, scheme: uncoded, policy: async}
  - {label: 2-async, scheme: uncoded, policy: {name: k_async, k: 2}}
training: {dataset: synthetic, batch_size: 32, device: cpu, eval_every: 3, checkpoint_every: 2}
"""
CHOSEN = ["uncoded", "FR s=1", "async", "2-async"]  # (not CR s=1: --variants leaves it out)
SYNCHRONOUS, ASYNCHRONOUS = CHOSEN[:2], CHOSEN[2:]
ITERATIONS, WORKERS = 6, 2


@pytest.fixture(scope="module")
def ray_run(tmp_path_factory, local_ray) -> SimpleNamespace:
    """`gcbench run SCENARIO --variants CHOSEN` on the shared local Ray instance: its output and tables."""
    folder = tmp_path_factory.mktemp("turns")
    path = folder / "turns.yaml"
    path.write_text(SCENARIO)
    out = folder / "out"
    done = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--variants", ",".join(CHOSEN)])
    assert done.exit_code == 0, done.output
    iterations, workers, meta = read_results(out)
    return SimpleNamespace(out=out, output=done.output, iterations=iterations, workers=workers, meta=meta)


@pytest.mark.slow
def test_synchronous_and_asynchronous_variants_take_turns_on_ray(ray_run):
    progress = re.findall(r"^(.+), seed 0: (\d)/6 iterations, loss", ray_run.output, re.MULTILINE)
    assert progress == [(v, str(k)) for k in (2, 4, 6) for v in CHOSEN]
    iterations, meta = ray_run.iterations, ray_run.meta
    assert meta["status"] == "complete" and meta["iterations_planned"] == len(CHOSEN) * ITERATIONS
    for _, frame in iterations.groupby("variant"):
        assert sorted(frame["iteration"]) == list(range(ITERATIONS))
        assert frame["start"].is_monotonic_increasing and frame["end"].is_monotonic_increasing
    # the clock stops while the others run (the first turn of each alone starts 4 worker processes: seconds)
    synchronous = iterations[iterations["variant"] == "uncoded"].set_index("iteration")
    gaps = [synchronous.loc[t, "start"] - synchronous.loc[t - 1, "end"] for t in (2, 4)]
    assert max(gaps) < 1.0, gaps
    assert len(ray_run.workers) == len(CHOSEN) * ITERATIONS * WORKERS
    scenario = json.loads((ray_run.out / "run.json").read_text())["scenario"]
    assert [variant["label"] for variant in scenario["variants"]] == CHOSEN


@pytest.mark.slow
def test_gcbench_run_real_writes_the_shared_schema_with_loss_and_accuracy(ray_run):
    from gcbench.results import ITERATION_COLUMNS, TRAINED_COLUMNS, WORKER_COLUMNS

    iterations, workers, meta = ray_run.iterations, ray_run.workers, ray_run.meta
    assert meta["mode"] == "real" and meta["backend"] == "ray"
    assert set(ITERATION_COLUMNS) | set(TRAINED_COLUMNS) <= set(iterations.columns)
    assert set(WORKER_COLUMNS) <= set(workers.columns)
    assert len(iterations) == len(CHOSEN) * ITERATIONS and iterations["loss"].notna().all()
    assert (iterations.groupby("variant")["accuracy"].count() == 2).all()  # evaluated after iterations 3 and 6
    workers = workers[workers["variant"].isin(SYNCHRONOUS)]
    assert len(workers) == len(SYNCHRONOUS) * ITERATIONS * WORKERS
    used = workers[workers["used"]]
    assert (used["arrival"] >= used["compute_start"]).all() and (used["injected_delay"] >= 0).all()
    # work the master stopped waiting for still reports when it ran (abandoned: no arrival); a job abandoned
    # before it began (queued behind stale work when its iteration ended) has no times, as in the simulator
    unused = workers[~workers["used"]]
    began = unused["compute_start"].notna()
    assert (unused.loc[began, "compute_end"] >= unused.loc[began, "compute_start"]).all()
    assert unused.loc[~began, ["compute_end", "arrival"]].isna().all(axis=None)
    assert not ray_run.workers["failed"].any()


@pytest.mark.slow
def test_gcbench_run_trains_asynchronous_policies_and_records_staleness(ray_run):
    iterations, workers = ray_run.iterations, ray_run.workers
    asynchronous = iterations[iterations["variant"].isin(ASYNCHRONOUS)]
    assert len(asynchronous) == len(ASYNCHRONOUS) * ITERATIONS and (asynchronous["stop"] == "k_results").all()
    # each turn starts both workers on the same weights; the loser's job ends milliseconds after the winner's,
    # long before the winner's next one (its 50 ms overhead), so a turn whose loser did not straggle applies the
    # loser's result one update old; turns 2 and 3 have no straggler, whatever the machine's timing
    assert asynchronous.groupby("variant")["staleness"].mean()["async"] > 0
    used = workers[workers["used"]].groupby(["variant", "iteration"]).size()
    assert used.xs("async", level="variant").eq(1).all()
