"""Streamed results: the tables `gcbench simulate` writes as tasks finish equal, value for value and dtype for
dtype, the tables the earlier path built in memory (goldens written by it, commit fae2631: pandas frames of
``table_columns``, ``to_parquet``); the summary from running aggregates equals the one from the whole table.

The goldens were computed on another machine: every column must match them bit for bit except ``residual``, which
a LAPACK SVD computes and another BLAS kernel rounds otherwise (``golden_decodes``: its tolerance, derived from the
scenarios' worst decode, in gcbench/testing/tables.py). Comparisons of two runs made here stay bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from gcbench.results import summarize
from gcbench.results.summary import RunningSummary
from gcbench.scenario import load_scenario
from gcbench.scenario.build import scheme_for
from gcbench.sim.runner import simulate_points, stream_points
from gcbench.testing.tables import Decodes, assert_tables_equal, decodes_of

GOLDEN = Path(__file__).resolve().parent / "golden"

# golden floats: .ci/run runs these again under other BLAS kernels (pytest -m blas)
pytestmark = pytest.mark.blas

BLOCKS = """\
name: stream-blocks
workers: 6
iterations: 30
seeds: [0, 1]
compute: {per_partition: {distribution: shifted_exponential, shift: 0.1, rate: 10}}
straggling: {model: independent, probability: 0.2, slowdown: 5}
variants:
  - {label: uncoded, scheme: uncoded, policy: wait_all}
  - {scheme: fr, s: 1}
  - {scheme: cr, s: 1, policy: {name: fastest_k, k: 4}}
  - {scheme: cr, s: 1, policy: {name: deadline, deadline: 0.25, fallback: approximate}}
  - {scheme: cce_cr, s: 1, m: 2}
sweep: {straggling.slowdown: [2, 8]}
"""

# crashes with downtime, stale work finished, a compute overhead and a network: the stepped path
STEPPED = """\
name: stream-stepped
workers: 6
iterations: 40
seeds: [3]
stale_work: finish
compute:
  per_partition: {distribution: shifted_exponential, shift: 0.1, rate: 10}
  overhead: {distribution: exponential, rate: 100}
straggling: {model: independent, probability: 0.2, slowdown: 5}
failures: {model: crash, probability: 0.05, downtime: 0.3}
network: {latency: 0.001, bandwidth: 1.25e8}
variants:
  - {label: uncoded, scheme: uncoded, policy: wait_all}
  - {scheme: fr, s: 1}
  - {scheme: cr, s: 2, policy: {name: fastest_k, k: 4}}
"""

# blocks of i.i.d. iterations between stepped crash iterations
CRASHES = """\
name: stream-crashes
workers: 6
iterations: 40
seeds: [5]
compute: {per_partition: {distribution: shifted_exponential, shift: 0.1, rate: 10}}
failures: {model: crash, probability: 0.03, downtime: 0.3}
variants:
  - {scheme: fr, s: 1}
  - {scheme: cyclic_mds, s: 2}
"""

SCENARIOS = {"blocks": BLOCKS, "stepped": STEPPED, "crashes": CRASHES}


def points_of(tmp_path: Path, name: str):
    path = tmp_path / f"{name}.yaml"
    path.write_text(SCENARIOS[name])
    return load_scenario(path)


def golden_decodes(points) -> Decodes:
    """The worst decodes of the scenario's schemes (every received set): the residual's tolerance against a golden."""
    return decodes_of(scheme_for(p.scenario, v) for p in points for v in p.scenario.variants)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("jobs", [1, 2])
def test_streamed_tables_equal_the_earlier_paths_tables(tmp_path, name, jobs):
    points = points_of(tmp_path, name)
    running = stream_points(points, tmp_path / "run", jobs=jobs)
    for table in ("iterations", "workers"):
        golden = pd.read_parquet(GOLDEN / f"stream_{name}_{table}.parquet")
        streamed = pd.read_parquet(tmp_path / "run" / f"{table}.parquet")
        assert_tables_equal(streamed, golden, golden_decodes(points))
    golden_summary = pd.read_csv(GOLDEN / f"stream_{name}_summary.csv")
    summary = running.summary()
    summary.to_csv(tmp_path / "summary.csv", index=False, float_format="%.17g")
    # times and flags bit for bit on any machine; the mean residual of inexact decodes within the decodes' bound
    assert_tables_equal(pd.read_csv(tmp_path / "summary.csv"), golden_summary, golden_decodes(points))


def test_simulate_points_gives_the_frames_the_files_hold(tmp_path):
    points = points_of(tmp_path, "blocks")
    frames = dict(zip(("iterations", "workers"), simulate_points(points), strict=True))
    for table, frame in frames.items():
        assert_tables_equal(frame, pd.read_parquet(GOLDEN / f"stream_blocks_{table}.parquet"), golden_decodes(points))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_task_streams_its_workers_rows_in_chunks_and_the_tables_are_unchanged(tmp_path, monkeypatch, name):
    monkeypatch.setattr("gcbench.sim.synchronous.BLOCK_ELEMENTS", 6 * 3)  # engine blocks of 3 iterations
    monkeypatch.setattr("gcbench.sim.synchronous.CHUNK_ELEMENTS", 6 * 7)  # a window of 7: chunks of 6 or 7
    points = points_of(tmp_path, name)
    stream_points(points, tmp_path / "run", jobs=1)
    tasks = sum(len(p.scenario.variants) * len(p.scenario.seeds) for p in points)
    assert pq.ParquetFile(tmp_path / "run" / "iterations.parquet").num_row_groups == tasks  # a row group a task
    workers = pq.ParquetFile(tmp_path / "run" / "workers.parquet")
    sizes = [workers.metadata.row_group(g).num_rows for g in range(workers.num_row_groups)]
    assert len(sizes) >= 5 * tasks and max(sizes) <= 6 * 7
    column = workers.metadata.row_group(0).column(0)
    assert column.path_in_schema == "variant" and "RLE_DICTIONARY" in column.encodings
    for table in ("iterations", "workers"):
        assert_tables_equal(
            pd.read_parquet(tmp_path / "run" / f"{table}.parquet"),
            pd.read_parquet(GOLDEN / f"stream_{name}_{table}.parquet"),
            golden_decodes(points),
        )


def test_the_event_engine_writes_its_rows_in_chunks_too(tmp_path, monkeypatch):
    monkeypatch.setattr("gcbench.sim.tasks.CHUNK_ELEMENTS", 6 * 7)
    path = tmp_path / "event.yaml"
    path.write_text(CRASHES.replace("variants:", "engine: event\nvariants:"))
    stream_points(load_scenario(path), tmp_path / "run", jobs=1)
    workers = pq.ParquetFile(tmp_path / "run" / "workers.parquet")
    assert workers.num_row_groups == 2 * 6  # 40 iterations in chunks of 7, two variants
    golden = pd.read_parquet(GOLDEN / "stream_crashes_workers.parquet")
    # the other engine: the same times by other sums in another order (a few ulp, held to 1e-9 as in
    # tests/test_event_engine.py); the workers table has no kernel-dependent column
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "run" / "workers.parquet"), golden, rtol=1e-9)


def test_running_summary_equals_the_summary_of_the_whole_table():
    iterations = pd.read_parquet(GOLDEN / "stream_blocks_iterations.parquet")
    running = RunningSummary(["straggling.slowdown"])
    for _, task in iterations.groupby(["point", "variant", "seed"], sort=False):
        running.add(task)
    pd.testing.assert_frame_equal(running.summary(), summarize(iterations, ["straggling.slowdown"]))
    assert running.rows == len(iterations)


def test_a_failed_run_leaves_no_folder_and_no_partial_file(tmp_path):
    path = tmp_path / "crash.yaml"
    path.write_text(BLOCKS.replace("variants:", "failures: {model: crash, probability: 1.0}\nvariants:"))
    with pytest.raises(Exception, match="can never finish"):
        stream_points(load_scenario(path), tmp_path / "run", jobs=1)
    assert not (tmp_path / "run").exists()


def test_the_vectorised_engine_keeps_one_window_of_worker_times_and_emits_every_row_once(monkeypatch):
    from gcbench.scenario.build import scheme_for
    from gcbench.sim.synchronous import simulate_synchronous

    from simhelpers import scenario

    monkeypatch.setattr("gcbench.sim.synchronous.BLOCK_ELEMENTS", 6 * 4)
    monkeypatch.setattr("gcbench.sim.synchronous.CHUNK_ELEMENTS", 6 * 10)
    sc = scenario(iterations=95, failures={"model": "crash", "probability": 0.02, "downtime": 0.5})
    v = sc.variants[0]
    full = simulate_synchronous(sc, v, scheme_for(sc, v), 0)
    emitted: list[tuple[int, int, dict]] = []
    loads = [1] * 6
    rec = simulate_synchronous(
        sc, v, scheme_for(sc, v), 0, workers=lambda r, a, b: emitted.append((a, b, r.worker_rows(loads, a, b)))
    )
    assert rec.compute_start.shape == (10, 6)  # a window of 10 iterations, not 95
    assert [a for a, _, _ in emitted] == [0] + [b for _, b, _ in emitted[:-1]] and emitted[-1][1] == 95
    whole = full.worker_columns(loads)
    for name, values in whole.items():
        streamed = np.concatenate([columns[name] for _, _, columns in emitted])
        np.testing.assert_array_equal(streamed, values, err_msg=name)
    with pytest.raises(ValueError, match="not in the recorder"):
        rec.worker_rows(loads, 0, 10)


def test_simulate_that_cannot_finish_leaves_no_results_folder(tmp_path):
    from typer.testing import CliRunner

    from gcbench.cli import app

    path = tmp_path / "crash.yaml"
    path.write_text(BLOCKS.replace("variants:", "failures: {model: crash, probability: 1.0}\nvariants:"))
    result = CliRunner().invoke(app, ["simulate", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "can never finish" in result.output
    assert not (tmp_path / "run").exists()


def test_a_checkpoints_row_dicts_restore_the_recorder_real_runs_keep_every_row():
    from gcbench.results.recorder import RunRecorder
    from gcbench.results.rows import restore, row_dicts, table_columns
    from gcbench.scenario.build import scheme_for
    from gcbench.sim.synchronous import simulate_synchronous

    from simhelpers import scenario

    sc = scenario(iterations=30, failures={"model": "crash", "probability": 0.05, "downtime": 0.5})
    v = sc.variants[0]
    rec, loads = simulate_synchronous(sc, v, scheme_for(sc, v), 0), np.ones(6, dtype=int)
    rows, workers = row_dicts(rec, loads, 20)
    back = RunRecorder(30, 6)
    restore(back, rows, workers)
    before, after = table_columns(rec, {}, loads, 20, trained=True), table_columns(back, {}, loads, 20, trained=True)
    for table in (0, 1):
        for name, values in before[table].items():
            np.testing.assert_array_equal(after[table][name], values, err_msg=name)


@pytest.mark.slow
def test_gcbench_plot_draws_the_same_bytes_from_streamed_tables_as_from_the_earlier_ones(tmp_path):
    import shutil

    from gcbench.plot.make import plot_runs
    from gcbench.results.metadata import run_metadata
    from gcbench.results.store import write_metadata

    points = points_of(tmp_path, "blocks")
    old, new = tmp_path / "old" / "blocks", tmp_path / "new" / "blocks"
    stream_points(points, new, jobs=1)
    write_metadata(new, run_metadata("sim", tmp_path / "blocks.yaml", points, {"backend": "simulator"}))
    old.mkdir(parents=True)
    for table in ("iterations", "workers"):
        shutil.copy(GOLDEN / f"stream_blocks_{table}.parquet", old / f"{table}.parquet")
    shutil.copy(new / "run.json", old / "run.json")
    drawn = {}
    for name, folder in (("old", old), ("new", new)):
        _, written = plot_runs([folder], tmp_path / name / "figures", formats=("png",))
        drawn[name] = {path.name: path.read_bytes() for item in written for path in item.files}
    assert len(drawn["new"]) >= 5 and drawn["new"] == drawn["old"]


def test_an_error_in_the_writer_thread_is_raised_and_leaves_no_file(tmp_path):
    import pyarrow as pa

    from gcbench.results.arrow import arrow_table
    from gcbench.results.schema import ITERATION_COLUMNS
    from gcbench.results.stream import ResultsWriter

    columns = {name: np.zeros(3) for name in ITERATION_COLUMNS if name not in ("variant", "seed")}
    writer = ResultsWriter(tmp_path, with_workers=False)
    writer.iterations(arrow_table(columns, {"variant": "a", "seed": 0}))
    writer.iterations(arrow_table(columns, {"variant": "a", "seed": "not a seed"}))  # cannot be cast: fails there
    with pytest.raises(pa.ArrowInvalid):
        writer.close()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_without_the_workers_table_the_iterations_are_the_same(tmp_path, name):
    points = points_of(tmp_path, name)
    stream_points(points, tmp_path / "run", jobs=1, with_workers=False)
    assert not (tmp_path / "run" / "workers.parquet").exists()
    assert_tables_equal(
        pd.read_parquet(tmp_path / "run" / "iterations.parquet"),
        pd.read_parquet(GOLDEN / f"stream_{name}_iterations.parquet"),
        golden_decodes(points),
    )
