"""`gcbench plot` on hand-made run directories: where it writes, partial runs, damaged or missing files.

The directories are written here with pandas (no simulator, no Ray), so each test states exactly what the
run holds: a partial run's status, a truncated parquet file, a missing run.json or workers table.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.patches import Rectangle
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.plot import figures

runner = CliRunner()
VARIANTS = (("uncoded", "uncoded", 0, "wait_all"), ("FR s=1", "fr", 1, "decodable"))


def iteration_rows(iterations: int, variants=VARIANTS, stop: str = "decodable") -> pd.DataFrame:
    """Iterations as an earlier gcbench wrote them: without bytes_received (added later), which plotting reads as
    NaN, so every test here also proves such a run still plots."""
    frames = []
    for label, scheme, s, policy in variants:
        duration = 0.2 + 0.01 * np.arange(iterations)
        end = np.cumsum(duration)
        frames.append(
            pd.DataFrame(
                {
                    "variant": label, "scheme": scheme, "s": s, "m": 1, "policy": policy, "point": 0, "seed": 0,
                    "iteration": np.arange(iterations), "start": end - duration, "end": end, "duration": duration,
                    "messages_used": 4, "stop": stop, "exact": True, "residual": 0.0, "staleness": 0.0,
                }
            )
        )  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def worker_rows(iterations: pd.DataFrame, workers: int) -> pd.DataFrame:
    rows = []
    for it in iterations.itertuples():
        for worker in range(workers):
            ready = it.start + 0.1 + 0.01 * worker
            rows.append(
                {
                    "variant": it.variant, "point": 0, "seed": 0, "iteration": it.iteration, "worker": worker,
                    "partitions": it.s + 1, "compute_start": it.start, "compute_end": ready, "injected_delay": 0.0,
                    "arrival": ready + 0.01, "used": True, "straggling": False, "failed": False,
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def make_run(
    folder: Path, mode: str = "sim", rows: int = 10, planned: int = 10, workers: int | None = 4, **metadata
) -> Path:
    """A run directory of len(VARIANTS) variants, one seed, `rows` of `planned` iterations each written."""
    folder.mkdir(parents=True)
    iterations = iteration_rows(rows)
    iterations.to_parquet(folder / "iterations.parquet")
    if workers:
        worker_rows(iterations, workers).to_parquet(folder / "workers.parquet")
    scenario = {"name": "synthetic", "iterations": planned, "seeds": [0], "variants": [{}] * len(VARIANTS)}
    (folder / "run.json").write_text(json.dumps({"mode": mode, "scenario": scenario, **metadata}))
    return folder


def plot(*args: str):
    """Run `gcbench plot`; whatever it says, it never ends in an exception."""
    result = runner.invoke(app, ["plot", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


# item 3: where the figures go


def test_by_default_the_figures_go_beside_the_run_not_into_the_repository(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = make_run(tmp_path / "results" / "synthetic-1")
    result = plot(str(run))
    assert result.exit_code == 0, result.output
    assert (run / "figures" / "synthetic-1-sim-ecdf.png").is_file()
    assert f"wrote {run / 'figures' / 'synthetic-1-sim-ecdf.png'}" in result.output
    assert not (tmp_path / "figures").exists()


@pytest.mark.slow
def test_two_runs_of_one_scenario_keep_their_own_figures_in_one_folder(tmp_path):
    out = tmp_path / "figs"
    first, second = make_run(tmp_path / "synthetic-1"), make_run(tmp_path / "synthetic-2", rows=5, planned=5)
    assert plot(str(first), "-o", str(out)).exit_code == 0
    before = (out / "synthetic-1-sim-ecdf.png").read_bytes()
    assert plot(str(second), "-o", str(out)).exit_code == 0
    assert (out / "synthetic-1-sim-ecdf.png").read_bytes() == before
    assert (out / "synthetic-2-sim-ecdf.png").is_file()
    result = plot(str(first), str(second), "-o", str(out), "--report")
    assert result.exit_code == 0 and (out / "synthetic-1+synthetic-2-report.md").is_file()


def test_two_runs_whose_directories_share_a_name_are_refused(tmp_path):
    first, second = make_run(tmp_path / "a" / "run"), make_run(tmp_path / "b" / "run")
    result = plot(str(first), str(second), "-o", str(tmp_path / "figs"))
    assert result.exit_code == 2
    assert "are both named 'run': their figures would overwrite each other" in result.output
    assert not (tmp_path / "figs").exists()


def test_a_directory_name_ending_in_its_mode_is_not_repeated(tmp_path):
    run = make_run(tmp_path / "cifar10-sim")
    assert plot(str(run), "-o", str(tmp_path / "o")).exit_code == 0
    assert (tmp_path / "o" / "cifar10-sim-ecdf.png").is_file()


# item 8: partial runs


def test_a_partial_run_is_plotted_and_says_how_partial(tmp_path):
    run = make_run(tmp_path / "synthetic-1", rows=7, status="interrupted", iterations_planned=30)
    result = plot(str(run), "--report")
    assert result.exit_code == 0, result.output
    assert f"note: {run}: partial: 14 of 30 iterations (run interrupted)" in result.output
    report = (run / "figures" / "synthetic-1-report.md").read_text()
    assert "**partial: 14 of 30 iterations (run interrupted).**" in report
    assert "(synthetic-1: partial: 14 of 30 iterations (run interrupted))" in report  # in the captions


def test_without_iterations_planned_the_total_comes_from_the_scenario(tmp_path):
    run = make_run(tmp_path / "synthetic-1", rows=3, planned=50, status="running")  # 50 iterations x 2 variants
    result = plot(str(run))
    assert result.exit_code == 0 and "partial: 6 of 100 iterations (run running)" in result.output


@pytest.mark.slow  # (seconds: the everyday lane keeps its cheaper siblings)
def test_a_complete_run_says_nothing_about_being_partial(tmp_path):
    for name, status in (("old", None), ("new", "complete")):
        run = make_run(tmp_path / name, **({"status": status} if status else {}))
        result = plot(str(run))
        assert result.exit_code == 0 and "partial" not in result.output


def test_a_run_without_iterations_yet_says_so(tmp_path):
    run = tmp_path / "synthetic-1"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"mode": "real", "status": "running"}))
    result = plot(str(run))
    assert result.exit_code == 2
    assert f"{run} has run.json but no iterations yet (the run wrote no checkpoint): nothing to plot." in result.output


def test_by_default_a_newer_run_without_iterations_is_not_passed_over_in_silence(tmp_path, monkeypatch):
    import os

    monkeypatch.chdir(tmp_path)
    make_run(tmp_path / "results" / "synthetic-1")
    newer = tmp_path / "results" / "synthetic-2"
    newer.mkdir()
    (newer / "run.json").write_text(json.dumps({"mode": "real", "status": "running"}))
    os.utime(newer / "run.json", (2e9, 2e9))
    result = plot()
    assert result.exit_code == 2 and "results/synthetic-2 has run.json but no iterations yet" in result.output


def test_by_default_the_latest_run_is_the_last_one_run_not_the_last_one_plotted(tmp_path, monkeypatch):
    """Plotting an older run draws its figures into its folder; that does not make it the most recent."""
    import os

    monkeypatch.chdir(tmp_path)
    older, newer = make_run(tmp_path / "results" / "synthetic-1"), make_run(tmp_path / "results" / "synthetic-2")
    for run, when in ((older, 1.5e9), (newer, 1.6e9)):
        for name in ("run.json", "iterations.parquet"):
            os.utime(run / name, (when, when))
    assert plot(str(older)).exit_code == 0  # (its folder changes now: figures/ is added)
    os.utime(newer, (1.6e9, 1.6e9))
    result = plot()
    assert result.exit_code == 0, result.output
    assert (newer / "figures").is_dir() and "synthetic-2" in result.output


def test_an_empty_iterations_table_is_nothing_to_plot(tmp_path):
    run = make_run(tmp_path / "synthetic-1")
    iteration_rows(0).to_parquet(run / "iterations.parquet")
    result = plot(str(run))
    assert result.exit_code == 2 and "iterations.parquet has no rows yet: nothing to plot" in result.output


# item 10: damaged and missing files


@pytest.mark.parametrize("table", ["iterations.parquet", "workers.parquet"])
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_parquet_file_is_one_sentence_naming_it(tmp_path, table, damage):
    run = make_run(tmp_path / "synthetic-1")
    data = (run / table).read_bytes()
    (run / table).write_bytes(b"not a parquet file" if damage == "garbage" else data[: len(data) // 2])
    result = plot(str(run))
    assert result.exit_code == 2, result.output
    assert (
        result.output
        == f"error: {run / table} is not a readable parquet table (damaged or truncated): nothing to plot.\n"
    )


def test_without_run_json_the_run_is_refused_not_guessed(tmp_path):
    run = make_run(tmp_path / "synthetic-1", mode="real")
    (run / "run.json").unlink()
    result = plot(str(run))
    assert result.exit_code == 2
    assert "has iterations.parquet but no run.json, so whether it was simulated or real is unknown" in result.output
    assert not (run / "figures").exists()


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"mode": "lab"}', "{}"])
def test_a_damaged_run_json_is_one_sentence(tmp_path, text):
    run = make_run(tmp_path / "synthetic-1")
    (run / "run.json").write_text(text)
    result = plot(str(run))
    assert result.exit_code == 2 and result.output.startswith(f"error: {run / 'run.json'} ")
    assert result.output.count("\n") == 1


def test_without_workers_table_the_timeline_is_skipped_with_a_note(tmp_path):
    run = make_run(tmp_path / "synthetic-1", workers=None)
    result = plot(str(run))
    assert result.exit_code == 0, result.output
    assert f"note: {run} has no workers.parquet" in result.output and "the worker timeline is skipped" in result.output
    assert not (run / "figures" / "synthetic-1-sim-timeline.png").exists()
    assert (run / "figures" / "synthetic-1-sim-scheme-map.png").is_file()
    result = plot(str(run), "--report")
    assert (
        "*synthetic-1-sim-scheme-map*: Upload per message (gradients) against"
        in (run / "figures" / "synthetic-1-report.md").read_text()
    )


def test_a_path_that_is_not_a_directory_is_a_message(tmp_path):
    result = plot(str(tmp_path / "nowhere"))
    assert result.exit_code == 2 and "no such results directory" in result.output


# item 16: the timeline and the ECDF, on data whose every value the test sets


def test_timeline_ticks_are_whole_workers_and_it_says_where_it_was_drawn(tmp_path):
    iterations = iteration_rows(6)
    fig = figures.worker_timeline(iterations, worker_rows(iterations, 20))
    FigureCanvasAgg(fig).draw()
    for ax in fig.axes:
        ticks = [t for t in ax.get_yticks() if ax.get_ylim()[1] <= t <= ax.get_ylim()[0]]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
    assert fig.axes[-1].get_xlabel().endswith("iterations 0 to 5 at seed 0")


def test_timeline_draws_a_crashed_workers_downtime_as_down_not_as_compute():
    iterations = iteration_rows(6)
    workers = worker_rows(iterations, 4)
    down = (workers["worker"] == 2) & (workers["iteration"] <= 3)
    back = iterations["end"][3] + 0.5  # back after iteration 3 ended: down through iterations 0 to 3
    workers.loc[down, ["failed", "used", "compute_start"]] = [True, False, back]
    workers.loc[down, ["compute_end", "arrival"]] = [back + 0.1, back + 0.11]
    fig = figures.worker_timeline(iterations, workers)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and abs(p.get_y() + p.get_height() / 2 - 2) < 1e-9]
    assert all(p.get_width() > 0 for p in ax.patches if isinstance(p, Rectangle))
    assert all(p.get_x() >= iterations["start"][4] - 1e-9 for p in bars), [(p.get_x(), p.get_width()) for p in bars]
    red = [line for line in ax.get_lines() if line.get_color() == "#D55E00" and len(line.get_xdata()) == 2]
    assert len(red) == 4 and max(max(line.get_xdata()) for line in red) == pytest.approx(iterations["end"][3])
    crosses = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert len(crosses) == 1  # one crash, then down: not a crash per iteration


def test_asynchronous_update_times_get_their_own_ecdf_panel():
    sync = iteration_rows(20)
    updates = iteration_rows(20, (("4-async", "uncoded", 0, "k_async"),), stop="k_results")
    fig = figures.iteration_time_ecdf(pd.concat([sync, updates], ignore_index=True))
    assert [ax.get_xlabel() for ax in fig.axes] == ["iteration time (s)", "time between model updates (s)"]
    in_panel = [{t.get_text() for t in ax.get_legend().get_texts()} for ax in fig.axes]
    # the two synchronous variants have identical times here, so the second is marked as lying on the first
    assert in_panel == [{"uncoded", "FR s=1 (same curve as uncoded)"}, {"4-async · uncoded / k_async [stale]"}]
    assert [ax.get_title() for ax in fig.axes] == ["synchronous policies", "asynchronous policies"]
    only_sync = figures.iteration_time_ecdf(sync)
    assert len(only_sync.axes) == 1 and only_sync.axes[0].get_xlabel() == "iteration time (s)"


# damaged run directories, at random: every one is drawn or refused in a sentence, none ends in a traceback

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@pytest.mark.slow
@settings(max_examples=30)
@given(
    table=st.sampled_from(["iterations.parquet", "workers.parquet", "run.json"]),
    keep=st.floats(0, 1),
    garbage=st.binary(max_size=16),
)
def test_a_damaged_file_never_ends_in_a_traceback(tmp_path_factory, table, keep, garbage):
    run = make_run(tmp_path_factory.mktemp("fuzz") / "synthetic-1")
    data = (run / table).read_bytes()
    (run / table).write_bytes(data[: int(len(data) * keep)] + garbage)
    assert plot(str(run), "-o", str(run / "o")).exit_code in (0, 2)


@pytest.mark.slow
@settings(max_examples=30)
@given(key=st.sampled_from(["mode", "scenario", "sweep_points", "status", "iterations_planned", "name"]), value=JSON)
@example(key="sweep_points", value=[{"a": 1}])  # a swept column the table lacks: was a KeyError
@example(key="iterations_planned", value=True)  # was "partial: 20 of True iterations"
@example(key="scenario", value={"name": None, "iterations": "x", "seeds": 3, "variants": None})
def test_any_value_in_run_json_is_plotted_or_refused_in_a_sentence(tmp_path_factory, key, value):
    run = make_run(tmp_path_factory.mktemp("fuzz") / "synthetic-1", status="interrupted")
    metadata = json.loads((run / "run.json").read_text())
    (metadata["scenario"] if key == "name" else metadata)[key] = value
    (run / "run.json").write_text(json.dumps(metadata))
    result = plot(str(run), "-o", str(run / "o"), "--report")
    assert result.exit_code in (0, 2), result.output
    assert result.exit_code == 0 or result.output.count("\n") == 1
    assert " of True " not in result.output


@pytest.mark.slow
def test_the_same_run_plots_to_the_same_bytes(tmp_path):
    """Regenerated figures differ only when the results do (no creation date in PDF or SVG)."""
    import hashlib
    import time

    from gcbench.plot.make import REPRODUCIBLE

    assert set(REPRODUCIBLE) == {"pdf", "svg"}
    run = make_run(tmp_path / "run")
    digests = []
    for attempt in range(2):
        out = tmp_path / f"figs{attempt}"
        for vector in ("pdf", "svg"):
            assert plot(str(run), "-o", str(out), "--vector", vector).exit_code == 0
        digests.append({p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())})
        time.sleep(1.1)  # a creation date would now differ
    assert digests[0] == digests[1]


def test_a_file_given_for_a_run_is_one_sentence(tmp_path):
    scenario = Path(__file__).resolve().parents[1] / "scenarios" / "stragglers.yaml"
    result = runner.invoke(app, ["plot", str(scenario), "-o", str(tmp_path)])
    assert result.exit_code == 2 and "is a file, not a results directory" in result.output
