"""`gcbench simulate`: results on disk, the summary, --check, and exit code 2 for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from gcbench.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

TINY = """\
name: tiny
workers: 6
iterations: 20
seeds: [0, 1]
compute: {per_partition: {distribution: shifted_exponential, shift: 0.1, rate: 10}}
straggling: {model: independent, probability: 0.2, slowdown: 5}
variants:
  - {label: uncoded, scheme: uncoded, policy: wait_all}
  - {scheme: fr, s: 1}
sweep: {straggling.slowdown: [2, 8]}
"""


def gcbench(*args: str) -> subprocess.CompletedProcess:
    code = "from gcbench.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT)


def test_simulate_writes_results_and_prints_the_summary(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    out = tmp_path / "run"
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "iteration time (s) at straggling.slowdown = 2" in result.output
    assert "fr(s=1)/decodable" in result.output and "speedup" in result.output
    assert f"results: {out}" in result.output
    iterations = pd.read_parquet(out / "iterations.parquet")
    assert len(iterations) == 2 * 2 * 2 * 20
    assert {"variant", "seed", "iteration", "start", "end", "duration"} <= set(iterations.columns)
    assert len(pd.read_parquet(out / "workers.parquet")) == 2 * 2 * 2 * 20 * 6
    meta = json.loads((out / "run.json").read_text())
    assert meta["mode"] == "sim" and meta["scenario"]["name"] == "tiny" and "numpy" in meta["versions"]
    assert (out / "summary.csv").is_file()


def test_run_sim_is_simulate_and_takes_the_iterations_override(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    result = runner.invoke(app, ["run", str(scenario), "--sim", "--iterations", "5", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    iterations = pd.read_parquet(tmp_path / "run" / "iterations.parquet")
    assert len(iterations) == 2 * 2 * 2 * 5 and iterations["iteration"].max() == 4
    assert json.loads((tmp_path / "run" / "run.json").read_text())["scenario"]["iterations"] == 5


def test_check_validates_without_running(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    result = runner.invoke(app, ["simulate", "--check", str(scenario)])
    assert result.exit_code == 0 and "valid — 6 workers, 2 variants, 2 sweep point(s)" in result.output
    assert not (tmp_path / "results").exists()


def test_bad_scenario_exits_2_with_one_line_and_no_traceback(tmp_path):
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(TINY.replace("s: 1}", "s: 3}"))
    done = gcbench("simulate", str(scenario), "--out", str(tmp_path / "o"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "variants[1]: fr needs (s+1) to divide n: s+1=4 does not divide n=6." in done.stderr


def test_missing_scenario_file_exits_2():
    done = gcbench("simulate", "no/such.yaml")
    assert done.returncode == 2 and "no such scenario file" in done.stderr


def test_a_run_that_cannot_progress_exits_2(tmp_path):
    scenario = tmp_path / "crash.yaml"
    scenario.write_text(TINY.replace("variants:", "failures: {model: crash, probability: 1.0}\nvariants:"))
    done = gcbench("simulate", str(scenario), "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and "can never finish" in done.stderr


def test_rerunning_into_a_folder_leaves_no_stale_workers_table(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    out = tmp_path / "run"
    assert runner.invoke(app, ["simulate", str(scenario), "--out", str(out)]).exit_code == 0
    assert (out / "workers.parquet").is_file()
    assert runner.invoke(app, ["simulate", str(scenario), "--out", str(out), "--no-workers-table"]).exit_code == 0
    assert not (out / "workers.parquet").exists()


def test_asynchronous_runs_show_staleness(tmp_path):
    scenario = tmp_path / "async.yaml"
    scenario.write_text(TINY.replace("{scheme: fr, s: 1}", "{scheme: uncoded, policy: async}"))
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0 and "staleness" in result.output
    assert "an iteration is one model update from k results" in result.output
