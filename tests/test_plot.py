"""`gcbench plot`: every figure renders from small fixtures, with labels and legends; bad input is a message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.plot import figures
from gcbench.plot.make import plot_runs
from gcbench.results import write_results
from gcbench.scenario import load_scenario
from gcbench.sim.runner import simulate_points

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

SCENARIO = """\
name: fixture
workers: 6
iterations: 40
seeds: [0, 1]
compute: {per_partition: {distribution: shifted_exponential, shift: 0.1, rate: 10}}
straggling: {model: independent, probability: 0.2, slowdown: 4}
failures: {model: crash, probability: 0.01, downtime: 0.5}
variants:
  - {label: uncoded, scheme: uncoded, policy: wait_all}
  - {label: FR s=1, scheme: fr, s: 1}
  - {label: CCE-CR s=1 m=2, scheme: cce_cr, s: 1, m: 2}
sweep: {straggling.slowdown: [2, 8]}
"""


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sim")
    (folder / "fixture.yaml").write_text(SCENARIO)
    points = load_scenario(folder / "fixture.yaml")
    iterations, workers = simulate_points(points)
    meta = {
        "mode": "sim",
        "scenario": points[0].scenario.model_dump(mode="json"),
        "sweep_points": [p.values for p in points],
    }
    write_results(folder / "run", iterations, workers, meta)
    return folder / "run"


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    """A hand-made real-mode run: wall-clock times, loss and accuracy."""
    rng = np.random.default_rng(0)
    frames = []
    for label, scheme, s, m in (("uncoded", "uncoded", 0, 1), ("FR s=1", "fr", 1, 1)):
        duration = 0.3 + rng.exponential(0.1, 30)
        end = np.cumsum(duration)
        frames.append(
            pd.DataFrame(
                {
                    "variant": label, "scheme": scheme, "s": s, "m": m,
                    "policy": "wait_all" if scheme == "uncoded" else "decodable",
                    "point": 0, "seed": 0, "iteration": np.arange(30), "start": end - duration, "end": end,
                    "duration": duration, "messages_used": 6, "stop": "decodable", "exact": True, "residual": 0.0,
                    "staleness": 0.0, "loss": 2.3 * np.exp(-np.arange(30) / 15), "accuracy": np.linspace(0.1, 0.5, 30),
                }
            )
        )  # fmt: skip
    folder = tmp_path_factory.mktemp("real") / "run"
    write_results(folder, pd.concat(frames, ignore_index=True), None, {"mode": "real", "scenario": {"name": "fixture"}})
    return folder


def labels_of(fig):
    axes = fig.axes
    texts = {ax.get_xlabel() for ax in axes} | {ax.get_ylabel() for ax in axes}
    legends = {t.get_text() for ax in axes if ax.get_legend() for t in ax.get_legend().get_texts()}
    return texts, legends


def test_every_figure_is_written_non_trivially(sim_run, real_run, tmp_path):
    _, written = plot_runs([sim_run, real_run], tmp_path)
    names = {w.name for w in written}
    expected = {"ecdf", "mean-vs-sweep", "speedup-vs-sweep", "timeline", "scheme-map"}
    assert {f"fixture-sim-{n}" for n in expected} <= names
    assert {"fixture-real-training", "fixture-real-ecdf", "fixture-sim-vs-real"} <= names
    for item in written:
        for path in item.files:
            assert path.is_file() and path.stat().st_size > 5_000, path


def test_ecdf_and_sweep_figures_carry_labels_and_legends(sim_run):
    from gcbench.plot.runs import load_run

    run = load_run(sim_run)
    texts, legends = labels_of(figures.iteration_time_ecdf(run.iterations))
    assert "iteration time (s)" in texts
    assert {"uncoded · wait_all", "FR s=1 · decodable", "CCE-CR s=1 m=2 · decodable"} <= legends
    texts, legends = labels_of(figures.mean_vs_sweep(run.iterations))
    assert {"straggling.slowdown (×)", "mean iteration time (s)"} <= texts and "FR s=1 · decodable" in legends
    texts, _ = labels_of(figures.speedup_vs_sweep(run.iterations))
    assert "speedup over baseline (×)" in texts
    texts, legends = labels_of(figures.worker_timeline(run.iterations, run.workers))
    assert "time since iteration 0 began (s); iterations 0 to 5" in texts
    texts, legends = labels_of(figures.scheme_map(run.iterations, run.workers))
    assert {"stragglers tolerated, s", "load (partitions per worker)", "upload (gradients per message)"} <= texts
    fig = figures.scheme_map(run.iterations, run.workers)
    legend = {t.get_text() for legend in fig.legends for t in legend.get_texts()}
    assert legend == {"uncoded · wait_all", "FR s=1 · decodable", "CCE-CR s=1 m=2 · decodable"}


def test_real_run_figures(real_run, sim_run):
    from gcbench.plot.runs import load_run

    real, sim = load_run(real_run), load_run(sim_run)
    texts, legends = labels_of(figures.training_curves(real.iterations, 0.4, "real"))
    assert {"training loss", "test accuracy", "iteration", "wall-clock time (s)"} <= texts
    assert "FR s=1 · decodable" in legends
    at_first_point = sim.iterations[sim.iterations["point"] == 0]
    texts, legends = labels_of(figures.sim_vs_real(at_first_point, real.iterations))
    assert {"simulated mean iteration time (s)", "measured mean iteration time (s)"} <= texts
    assert {"FR s=1 · decodable (simulated)", "FR s=1 · decodable (measured)", "simulated = measured"} <= legends
    reached = figures.time_to_accuracy(real.iterations, 0.4).set_index("variant")["seconds"]
    assert np.isfinite(reached["FR s=1"])


def test_a_single_evaluation_still_shows_in_the_training_figure(real_run):
    """Accuracy is evaluated every eval_every iterations: one evaluation must still draw a visible mark."""
    from gcbench.plot.runs import load_run

    iterations = load_run(real_run).iterations.copy()
    iterations.loc[iterations["iteration"] < 29, "accuracy"] = np.nan
    fig = figures.training_curves(iterations, None, "real")
    accuracy_axes = [ax for ax in fig.axes if ax.get_ylabel() == "test accuracy"]
    lines = [line for line in accuracy_axes[0].get_lines() if len(line.get_xdata()) == 1]
    assert lines and all(line.get_marker() not in (None, "", "None") for line in lines)


def test_figures_need_their_data():
    frame = pd.DataFrame(
        {"variant": ["a"], "scheme": ["uncoded"], "policy": ["wait_all"], "point": [0], "duration": [1.0]}
    )
    assert figures.training_curves(frame) is None
    assert figures.mean_vs_sweep(frame) is None


def test_report_and_cli_output(sim_run, tmp_path):
    out = tmp_path / "figs"
    result = runner.invoke(app, ["plot", str(sim_run), "-o", str(out), "--report", "--vector", "svg"])
    assert result.exit_code == 0, result.output
    assert "fixture-sim-ecdf.png" in result.output and (out / "fixture-sim-ecdf.svg").is_file()
    report = (out / "fixture-report.md").read_text()
    assert "![Distribution of iteration times" in report and "| variant |" in report
    assert "<figcaption>" in (out / "fixture-report.html").read_text()


def test_report_times_the_target_accuracy(real_run, tmp_path):
    result = runner.invoke(app, ["plot", str(real_run), "-o", str(tmp_path), "--report", "--target-accuracy", "0.3"])
    assert result.exit_code == 0, result.output
    assert "Time to reach 30.0% test accuracy (s):" in (tmp_path / "fixture-report.md").read_text()
    result = runner.invoke(app, ["plot", str(real_run), "-o", str(tmp_path), "--target-accuracy", "3"])
    assert result.exit_code == 2 and "--target-accuracy must be in (0, 1]" in result.output


def test_not_a_results_directory_exits_2(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", "from gcbench.cli import main; main()", "plot", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "not a gcbench results directory" in done.stderr


def test_a_missing_column_is_a_message(sim_run, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    pd.read_parquet(sim_run / "iterations.parquet").drop(columns=["duration"]).to_parquet(broken / "iterations.parquet")
    result = runner.invoke(app, ["plot", str(broken), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2 and "has no column 'duration'" in result.output


def test_no_runs_at_all_is_a_message(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plot"])
    assert result.exit_code == 2 and "no results directories under results/" in result.output
