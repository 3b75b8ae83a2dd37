"""`gcbench plot`: every figure renders from small fixtures, with labels and legends; bad input is a message."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.plot import figures
from gcbench.plot.make import plot_runs
from gcbench.plot.report import accuracy_lines
from gcbench.plot.runs import load_run
from gcbench.plot.style import legend_label
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
  - {label: CR s=1, scheme: cr, s: 1}
  - {label: cyclic-MDS s=1, scheme: cyclic_mds, s: 1}
  - {label: CCE-CR s=1 m=2, scheme: cce_cr, s: 1, m: 2}
sweep: {straggling.slowdown: [2, 4, 8]}
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
    write_results(folder / "fixture-sim", iterations, workers, meta)
    return folder / "fixture-sim"


# the real run's scenario sits at the simulated sweep's middle point, so that point is what it is compared with
REAL_META = {"mode": "real", "scenario": {"name": "fixture", "straggling": {"slowdown": 4}}}


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
                    "duration": duration, "messages_used": 6, "bytes_received": 6 * 755_240.0, "stop": "decodable",
                    "exact": True, "residual": 0.0,
                    "staleness": 0.0, "loss": 2.3 * np.exp(-np.arange(30) / 15), "accuracy": np.linspace(0.1, 0.5, 30),
                }
            )
        )  # fmt: skip
    folder = tmp_path_factory.mktemp("real") / "fixture-real"
    write_results(folder, pd.concat(frames, ignore_index=True), None, REAL_META)
    return folder


def labels_of(fig):
    axes = fig.axes
    texts = {ax.get_xlabel() for ax in axes} | {ax.get_ylabel() for ax in axes}
    legends = {t.get_text() for ax in axes if ax.get_legend() for t in ax.get_legend().get_texts()}
    legends |= {t.get_text() for legend in fig.legends for t in legend.get_texts()}
    return texts, legends


def line_styles(fig) -> dict[str, object]:
    """Each labelled line's dash pattern, by its legend label."""
    legend = [lg for ax in fig.axes for lg in [ax.get_legend()] if lg] + list(fig.legends)
    return {
        text.get_text(): line.get_linestyle()
        for lg in legend
        for line, text in zip(lg.get_lines(), lg.get_texts(), strict=True)
    }


@pytest.mark.slow
def test_every_figure_is_written_non_trivially(sim_run, real_run, tmp_path):
    _, written = plot_runs([sim_run, real_run], tmp_path)
    names = {w.name for w in written}
    expected = {"ecdf", "mean-vs-sweep", "speedup-vs-sweep", "timeline", "scheme-map"}
    assert {f"fixture-sim-{n}" for n in expected} <= names
    assert {"fixture-real-training", "fixture-real-ecdf", "fixture-sim-vs-fixture-real"} <= names
    for item in written:
        for path in item.files:
            assert path.is_file() and path.stat().st_size > 5_000, path


def test_ecdf_and_sweep_figures_carry_labels_and_legends(sim_run):
    run = load_run(sim_run)
    texts, legends = labels_of(figures.iteration_time_ecdf(run.iterations))
    assert "iteration time (s)" in texts
    assert {"uncoded", "FR s=1", "CCE-CR s=1 m=2"} <= legends
    texts, legends = labels_of(figures.mean_vs_sweep(run.iterations))
    assert {"straggling.slowdown (×)", "mean iteration time (s)"} <= texts and "FR s=1" in legends
    texts, _ = labels_of(figures.speedup_vs_sweep(run.iterations))
    assert "speedup over uncoded (×)" in texts  # the baseline named
    texts, legends = labels_of(figures.scheme_map(run.iterations, run.workers))
    assert {"stragglers tolerated, s", "load (partitions per worker)", "upload (gradients per message)"} <= texts
    assert legends == {"uncoded", "FR s=1", "CR s=1", "cyclic-MDS s=1", "CCE-CR s=1 m=2"}


def test_approximate_and_stale_curves_are_marked_and_say_so_in_the_legend(sim_run):
    iterations = load_run(sim_run).iterations.copy()
    iterations.loc[iterations["variant"] == "CR s=1", "exact"] = False
    iterations.loc[iterations["variant"] == "FR s=1", "staleness"] = 1.0
    for fig in (figures.speedup_vs_sweep(iterations), figures.iteration_time_ecdf(iterations)):
        _, legends = labels_of(fig)
        assert {"CR s=1 [approximate]", "FR s=1 [stale]", "uncoded"} <= legends
    lines = {line.get_label(): line for line in figures.speedup_vs_sweep(iterations).axes[0].get_lines()}
    assert lines["CR s=1 [approximate]"].get_marker() == "x" and lines["FR s=1 [stale]"].get_marker() == "+"
    assert lines["uncoded"].get_marker() == "o"


def test_legends_drop_the_default_policy_and_keep_any_other():
    assert legend_label("FR s=2", "fr", "decodable") == "FR s=2"
    assert legend_label("uncoded", "uncoded", "wait_all") == "uncoded"  # for uncoded, the same rule as the default
    assert legend_label("FR s=2", "fr", "wait_all") == "FR s=2 · wait_all"
    assert legend_label("fastest-8", "uncoded", "fastest_k") == "fastest-8 · uncoded / fastest_k"


def test_the_results_default_policy_is_the_one_a_variant_gets_without_a_policy():
    from gcbench.policies import Decodable
    from gcbench.results.schema import DEFAULT_POLICY

    assert DEFAULT_POLICY == Decodable.model_fields["name"].default


def test_a_curve_lying_exactly_on_another_is_drawn_dashed_and_says_so(sim_run):
    """CR and cyclic-MDS have the same support and decoding rule: in scenarios/stragglers.yaml their times are
    identical, and one line hid the other. Here cyclic-MDS is given exactly CR's times."""
    iterations = load_run(sim_run).iterations
    cr = iterations[iterations["variant"] == "CR s=1"]
    mds = iterations["variant"] == "cyclic-MDS s=1"
    iterations.loc[mds, ["start", "end", "duration"]] = cr[["start", "end", "duration"]].to_numpy()
    for fig in (
        figures.iteration_time_ecdf(iterations),
        figures.mean_vs_sweep(iterations),
        figures.speedup_vs_sweep(iterations),
    ):
        styles = line_styles(fig)
        assert "cyclic-MDS s=1 (same curve as CR s=1)" in styles, styles
        assert styles["cyclic-MDS s=1 (same curve as CR s=1)"] != styles["CR s=1"]
        assert sum("same curve" in label for label in styles) == 1  # the others are drawn plainly


def test_a_geometric_sweep_has_a_logarithmic_axis_with_its_values_as_ticks(sim_run):
    run = load_run(sim_run)
    ax = figures.speedup_vs_sweep(run.iterations).axes[0]
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "4", "8"]
    arithmetic = run.iterations.replace({"straggling.slowdown": {8.0: 6.0}})  # 2, 4, 6
    assert figures.speedup_vs_sweep(arithmetic).axes[0].get_xscale() == "linear"
    assert figures.is_geometric(np.array([1.5, 3, 6, 12, 24])) and not figures.is_geometric(np.array([2.0, 8.0]))


def test_scheme_map_caption_describes_its_two_panels(sim_run):
    from gcbench.plot.make import FIGURES

    caption = next(spec.caption for spec in FIGURES if spec.name == "scheme-map")
    fig = figures.scheme_map(load_run(sim_run).iterations, load_run(sim_run).workers)
    assert [ax.get_ylabel() for ax in fig.axes] == ["load (partitions per worker)", "upload (gradients per message)"]
    assert "load (partitions per worker, left)" in caption and "upload per message (gradients, right)" in caption
    assert "marker area" not in caption


def test_the_scheme_map_draws_m_sgc_s_load_in_uncoded_partitions(tmp_path):
    """M-SGC (n = 6, B = 1, W = 3, lambda = 2) computes 9 partitions of k = 42 a round: 9 x 6 / 42 uncoded ones."""
    scenario = tmp_path / "m.yaml"
    scenario.write_text(
        "name: m\nworkers: 6\niterations: 5\ncompute: {per_partition: {distribution: deterministic, value: 0.1}}\n"
        "variants:\n  - {scheme: m_sgc, burst: 1, window: 3, lam: 2}\n  - {scheme: uncoded}\n"
    )
    result = CliRunner().invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    run = load_run(tmp_path / "run")
    shares = figures.partition_shares(run.metadata)
    fig = figures.scheme_map(run.iterations, run.workers, shares)
    loads = sorted(float(line.get_ydata()[0]) for line in fig.axes[0].lines)
    assert loads == pytest.approx([1.0, 9 * 6 / 42])
    assert figures.partition_shares({"scenario": {"name": "older"}}) == {}  # a run.json without them: plain counts


def test_real_run_figures(real_run, sim_run):
    real, sim = load_run(real_run), load_run(sim_run)
    texts, legends = labels_of(figures.training_curves(real.iterations, 0.4, "real"))
    assert {"training loss", "test accuracy", "iteration", "wall-clock time (s)"} <= texts
    assert "FR s=1 (same curve per iteration as uncoded)" in legends  # the fixture's losses are equal
    at_first_point = sim.iterations[sim.iterations["point"] == 0]
    texts, legends = labels_of(figures.sim_vs_real(at_first_point, real.iterations))
    assert {"simulated mean iteration time (s)", "measured mean iteration time (s)"} <= texts
    assert {"simulated", "measured", "simulated = measured"} <= legends
    reached = figures.time_to_accuracy(real.iterations, 0.4).set_index("variant")["seconds"]
    assert np.isfinite(reached["FR s=1"])


def test_accuracy_is_in_percent_like_its_target(real_run):
    fig = figures.training_curves(load_run(real_run).iterations, 0.4, "real")
    FigureCanvasAgg(fig).draw()
    for ax in (ax for ax in fig.axes if ax.get_ylabel() == "test accuracy" or ax.get_xlabel() == "iteration"):
        if any(t.get_text().startswith("target") for t in ax.texts):
            labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
            assert labels and all(label.endswith("%") for label in labels), labels
            assert [t.get_text() for t in ax.texts] == ["target 40.0%"]
    unreached = figures.training_curves(load_run(real_run).iterations, 0.9, "real")
    assert "target 90.0% (not reached)" in {t.get_text() for ax in unreached.axes for t in ax.texts}


def test_accuracy_ticks_stay_distinct_over_a_narrow_range(real_run):
    """A run near chance (accuracy 9.0-9.9%) once read "10%, 10%, 9%, 9%, 9%"."""
    iterations = load_run(real_run).iterations.copy()
    iterations["accuracy"] = 0.09 + 0.009 * (iterations["iteration"] / iterations["iteration"].max())
    fig = figures.training_curves(iterations, None, "real")
    FigureCanvasAgg(fig).draw()
    for ax in (ax for ax in fig.axes if ax.get_ylabel() == "test accuracy"):
        labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert len(labels) > 1 and len(set(labels)) == len(labels), labels


def test_sim_vs_real_counts_iterations_gives_errors_and_hides_nothing(real_run, sim_run):
    real, sim = load_run(real_run), load_run(sim_run)
    at_first_point = sim.iterations[sim.iterations["point"] == 0]
    fig = figures.sim_vs_real(at_first_point, real.iterations)
    left, right = fig.axes
    assert fig.get_suptitle() == "simulated: 80 · measured: 30 iterations per variant"
    assert left.get_title() == "distributions (solid: simulated, dashed: measured)"
    for ax in (left, right):
        assert ax.get_legend() is None  # the legend sits below both panels, over no curve
    simulated = at_first_point[at_first_point["variant"] == "FR s=1"]["duration"].mean()
    measured = real.iterations[real.iterations["variant"] == "FR s=1"]["duration"].mean()
    _, legends = labels_of(fig)
    assert f"FR s=1: simulated mean {(simulated - measured) / measured:+.0%} off measured" in legends
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    legend_box = fig.legends[0].get_window_extent(renderer)
    assert not any(legend_box.overlaps(ax.get_window_extent(renderer)) for ax in (left, right))
    assert not right.yaxis.label.get_window_extent(renderer).overlaps(left.get_tightbbox(renderer))


@pytest.mark.slow  # (gcbench plot draws every figure of three runs: 9 s)
def test_a_paired_and_a_long_run_simulation_share_the_figure_with_the_measured_means_95_cis(real_run, tmp_path):
    """The comparison shows what calibration achieves: measured means with their 95% CIs, against the simulation
    of the same seeds and iterations (paired, so named) and a long run (hollow), each with its own CI."""
    from matplotlib.collections import LineCollection

    fixture = load_run(real_run)
    doubled = pd.concat([fixture.iterations, fixture.iterations.assign(iteration=fixture.iterations["iteration"] + 30)])
    write_results(tmp_path / "fixture-real", doubled.reset_index(drop=True), None, fixture.metadata)
    real_run = tmp_path / "fixture-real"
    real = load_run(real_run)  # 60 iterations, one seed: a 95% CI from 10 batch means
    meta = {"mode": "sim", "scenario": {**real.metadata["scenario"], "calibrated_from": [str(real_run)]}}
    rng = np.random.default_rng(1)
    paired = real.iterations.assign(duration=real.iterations["duration"] * 1.02)  # its seeds and iterations
    long = pd.concat([real.iterations.assign(seed=seed) for seed in range(3)] * 4, ignore_index=True)
    long = long.assign(iteration=long.groupby(["variant", "seed"]).cumcount(),
                       duration=0.3 + rng.exponential(0.1, len(long)))  # fmt: skip
    write_results(tmp_path / "fixture-paired", paired, None, meta)
    write_results(tmp_path / "fixture-long", long, None, meta)
    out = tmp_path / "o"
    result = runner.invoke(app, ["plot", str(tmp_path / "fixture-long"), str(tmp_path / "fixture-paired"),
                                 str(real_run), "-o", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (out / "fixture-long-sim-and-fixture-paired-sim-vs-fixture-real.png").is_file()
    fig = figures.sim_vs_real(paired, real.iterations, "calibrated simulation, paired",
                              {"calibrated simulation, 240 iterations": long})  # fmt: skip
    _, right = fig.axes
    assert fig.get_suptitle() == (
        "calibrated simulation, paired: 60 · calibrated simulation, 240 iterations: 720 · measured: 60 iterations "
        "per variant"
    )
    _, legends = labels_of(fig)
    assert "FR s=1: calibrated simulation, paired mean +2% off measured" in legends
    points = {line.get_label(): line for line in right.get_lines() if line.get_label().startswith("FR s=1")}
    hollow = points[next(label for label in points if "240 iterations" in label)]
    assert hollow.get_markerfacecolor() == "none"
    # a vertical bar (the measured mean's 95% CI) and a horizontal one (the simulation's) per point: 2 variants,
    # 2 simulations
    bars = [c for c in right.collections if isinstance(c, LineCollection)]
    assert len(bars) == 2 * 2 * 2
    low, high = figures.summarize(real.iterations).set_index("variant").loc["FR s=1", ["ci_low", "ci_high"]]
    vertical = [seg for c in bars for seg in c.get_segments() if seg[0][0] == seg[1][0]]
    assert any(np.allclose(sorted([seg[0][1], seg[1][1]]), [low, high]) for seg in vertical)


def real_on(backend: str, real_run: Path, folder: Path, slower: float) -> Path:
    """The fixture's real run as if measured on ``backend``, its iterations ``slower`` times as long."""
    run = load_run(real_run)
    iterations = run.iterations.assign(duration=run.iterations["duration"] * slower)
    path = folder / f"fixture-{backend}"
    write_results(path, iterations, None, {**run.metadata, "backend": backend})
    return path


@pytest.mark.slow  # (seconds: the everyday lane keeps its cheaper siblings)
def test_a_ray_run_a_torch_run_and_a_simulation_of_one_scenario_share_one_figure(real_run, sim_run, tmp_path):
    """Issue 11: `gcbench plot SIM RAY TORCH` puts the three side by side: one figure, each measured run with
    its own dash and marker, its name in the legend and the counts, its own error against the simulation."""
    ray_run, torch_run = real_on("ray", real_run, tmp_path, 1.0), real_on("torch", real_run, tmp_path, 1.5)
    result = runner.invoke(app, ["plot", str(sim_run), str(ray_run), str(torch_run), "-o", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert [p.name for p in sorted((tmp_path / "o").glob("fixture-sim-vs-*.png"))] == [
        "fixture-sim-vs-fixture-ray-real-and-fixture-torch-real.png"
    ]
    sim = load_run(sim_run).iterations.query("point == 1")
    measured = {name: load_run(path).iterations for name, path in (("ray", ray_run), ("torch", torch_run))}
    fig = figures.sim_vs_real(sim, measured)
    left, right = fig.axes
    assert fig.get_suptitle() == "simulated: 80 · measured (ray): 30 · measured (torch): 30 iterations per variant"
    dashes = {line.get_label(): line.get_linestyle() for line in fig.legends[0].get_lines()}
    assert dashes["simulated"] == "-" and dashes["measured (ray)"] == "--" and dashes["measured (torch)"] == ":"
    _, legends = labels_of(fig)
    assert {"simulated", "measured (ray)", "measured (torch)", "simulated = measured"} <= legends
    for name, frame in measured.items():
        simulated = sim[sim["variant"] == "FR s=1"]["duration"].mean()
        mean = frame[frame["variant"] == "FR s=1"]["duration"].mean()
        assert f"FR s=1: simulated mean {(simulated - mean) / mean:+.0%} off measured ({name})" in legends
    points = [line for line in right.get_lines() if line.get_label().startswith("FR s=1")]
    assert sorted(line.get_marker() for line in points) == ["o", "s"]  # one marker per measured run
    assert len(left.get_lines()) == 2 * 3  # two variants, each simulated and on two backends


@pytest.mark.slow
def test_sim_vs_real_compares_the_sweep_point_the_real_run_is_at(real_run, sim_run, tmp_path):
    from gcbench.plot.make import comparable_rows, pairing_notes

    sim, real = load_run(sim_run), load_run(real_run)
    assert set(comparable_rows(sim, real)["straggling.slowdown"]) == {4}
    real.metadata["scenario"]["straggling"]["slowdown"] = 5
    assert comparable_rows(sim, real) is None
    assert pairing_notes([sim, real]) == [
        f"no sweep point of {sim_run} has the values of {real_run}'s scenario: no simulated-against-measured figure"
    ]
    elsewhere = tmp_path / "fixture-real"
    elsewhere.mkdir()
    for name in ("iterations.parquet", "run.json"):
        (elsewhere / name).write_bytes((real_run / name).read_bytes())
    (elsewhere / "run.json").write_text(json.dumps(real.metadata))
    result = runner.invoke(app, ["plot", str(sim_run), str(elsewhere), "-o", str(tmp_path / "o")])
    assert result.exit_code == 0 and "no simulated-against-measured figure" in result.output
    assert not list((tmp_path / "o").glob("*-vs-fixture-real*"))


def test_a_single_evaluation_still_shows_in_the_training_figure(real_run):
    """Accuracy is evaluated every eval_every iterations: one evaluation must still draw a visible mark."""
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


@pytest.mark.slow  # (seconds: the everyday lane keeps its cheaper siblings)
def test_report_and_cli_output(sim_run, tmp_path):
    out = tmp_path / "figs"
    result = runner.invoke(app, ["plot", str(sim_run), "-o", str(out), "--report", "--vector", "svg"])
    assert result.exit_code == 0, result.output
    assert "fixture-sim-ecdf.png" in result.output and (out / "fixture-sim-ecdf.svg").is_file()
    report = (out / "fixture-sim-report.md").read_text()
    assert "![Distribution of iteration times" in report and "| variant |" in report
    assert "<figcaption>" in (out / "fixture-sim-report.html").read_text()


@pytest.mark.slow  # (seconds: the everyday lane keeps its cheaper siblings)
def test_report_times_the_target_accuracy_only_where_it_was_reached(real_run, tmp_path):
    result = runner.invoke(app, ["plot", str(real_run), "-o", str(tmp_path), "--report", "--target-accuracy", "0.3"])
    assert result.exit_code == 0, result.output
    assert "Time to reach 30.0% test accuracy (s):" in (tmp_path / "fixture-real-report.md").read_text()
    result = runner.invoke(app, ["plot", str(real_run), "-o", str(tmp_path), "--report", "--target-accuracy", "0.9"])
    report = (tmp_path / "fixture-real-report.md").read_text()
    assert "No variant reached 90.0% test accuracy (the best reached 50.0%)." in report
    assert "Time to reach" not in report
    result = runner.invoke(app, ["plot", str(real_run), "-o", str(tmp_path), "--target-accuracy", "3"])
    assert result.exit_code == 2 and "--target-accuracy must be in (0, 1]" in result.output


@pytest.mark.slow  # (seconds: the everyday lane keeps its cheaper siblings)
def test_the_report_table_reads_like_the_console_table(real_run, tmp_path):
    """30 iterations give no confidence interval: the report says n/a, as the console does, not nan."""
    assert runner.invoke(app, ["plot", str(real_run), "-o", str(tmp_path), "--report"]).exit_code == 0
    report = (tmp_path / "fixture-real-report.md").read_text()
    assert "| variant | mean (s) | 95% CI low | 95% CI high |" in report and " n/a |" in report
    assert "nan" not in report and "ci_low" not in report
    assert "nan" not in (tmp_path / "fixture-real-report.html").read_text()


def test_report_names_the_variants_that_missed_the_target(real_run, tmp_path):
    iterations = load_run(real_run).iterations
    iterations.loc[iterations["variant"] == "uncoded", "accuracy"] *= 0.5  # uncoded peaks at 25%
    run = load_run(real_run)
    run.iterations = iterations
    sentence, reached = accuracy_lines(run, 0.4)
    assert sentence == "Time to reach 40.0% test accuracy (s) (uncoded: not reached):"
    assert list(reached["variant"]) == ["FR s=1"]


@pytest.mark.slow  # (seconds: the everyday lane keeps its cheaper siblings)
def test_not_a_results_directory_exits_2(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", "from gcbench.cli import main; main()", "plot", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "not a gcbench results directory" in done.stderr and "Traceback" not in done.stderr


def test_a_missing_column_is_a_message(sim_run, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    pd.read_parquet(sim_run / "iterations.parquet").drop(columns=["duration"]).to_parquet(broken / "iterations.parquet")
    (broken / "run.json").write_text((sim_run / "run.json").read_text())
    result = runner.invoke(app, ["plot", str(broken), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2 and "has no column 'duration'" in result.output


def test_no_runs_at_all_is_a_message(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["plot"])
    assert result.exit_code == 2 and "no results directories under results/" in result.output


@pytest.mark.slow  # (seconds: the everyday lane keeps its cheaper siblings)
def test_without_runs_named_the_latest_is_plotted_beside_itself(sim_run, tmp_path, monkeypatch):
    import shutil

    monkeypatch.chdir(tmp_path)
    shutil.copytree(sim_run, tmp_path / "results" / "fixture-sim")
    result = runner.invoke(app, ["plot"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "results" / "fixture-sim" / "figures" / "fixture-sim-ecdf.png").is_file()
    assert not (tmp_path / "figures").exists()


def test_the_readme_links_shipped_figures_and_they_carry_the_names_plot_gives():
    """The README's figures exist, and every shipped figure is one its regeneration commands would write."""
    from gcbench.plot.make import FIGURES

    links = re.findall(r"\]\((figures/[^)]+)\)", (ROOT / "README.md").read_text())
    assert links and all((ROOT / link).is_file() for link in links), links
    # results/stragglers, results/cifar10-{sim,real}, results/scheme_family, results/compression,
    # results/compression-cifar10-real, results/trace_replay
    stems = ("stragglers-sim", "cifar10-sim", "cifar10-real", "scheme_family-sim", "compression-sim",
             "compression-cifar10-real", "trace_replay-sim")  # fmt: skip
    names = {f"{stem}-{spec}" for stem in stems for spec in [*(spec.name for spec in FIGURES), "attribution"]}
    names |= {"cifar10-sim-vs-cifar10-real", "cifar10-paired-sim-and-cifar10-sim-vs-cifar10-real"}
    names |= {"twin-wire-paired-sim-vs-interleaved-real"}  # benchmarks/emulated_cluster.py --part 4 plots it
    shipped = {path.stem for path in (ROOT / "figures").glob("*.png")}
    assert shipped <= names, shipped - names


@pytest.mark.slow  # (every figure of two runs, twice: 8 s)
def test_a_calibrated_simulation_is_called_so_beside_the_real_run(real_run, sim_run, tmp_path, monkeypatch):
    """A simulation of a scenario gcbench calibrate wrote (its ``calibrated_from``) is "calibrated simulation" in
    the side-by-side figure; any other stays "simulated"."""
    from gcbench.plot.make import draw_runs

    sim, real = load_run(sim_run), load_run(real_run)
    drawn = []
    original = figures.sim_vs_real
    monkeypatch.setattr(figures, "sim_vs_real", lambda *args: drawn.append(original(*args)) or drawn[-1])
    draw_runs([sim, real], tmp_path / "plain", ("png",), None)
    sim.metadata["scenario"]["calibrated_from"] = [str(real_run)]
    draw_runs([sim, real], tmp_path / "calibrated", ("png",), None)
    plain, calibrated = drawn
    assert plain.get_suptitle().startswith("simulated: ")
    assert calibrated.get_suptitle().startswith("calibrated simulation: ")
    assert calibrated.axes[0].get_title() == "distributions (solid: calibrated simulation, dashed: measured)"
