"""`gcbench simulate`: results on disk, the summary, --check, and exit code 2 for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pandas as pd
import pytest
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
    assert "iteration time (s) at straggling.slowdown = 2; speedup over uncoded" in result.output
    assert "tiny: 6 workers; straggling: independent, slowdown 2 to 8 (swept)" in result.output
    assert "kind: exact (every decode exact)" in result.output and "│ exact " in result.output
    assert "Fastest exact variant: " in result.output  # the conclusion (tests/test_conclusion.py reads it through)
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


def test_run_sim_check_checks_and_simulates_nothing(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    out = tmp_path / "o"
    result = runner.invoke(app, ["run", str(scenario), "--sim", "--check", "--iterations", "7", "--out", str(out)])
    assert result.exit_code == 0 and "valid" in result.output and "7 iterations" in result.output, result.output
    assert not out.exists()


def test_run_sim_takes_seeds_and_asks_for_force_before_overwriting(tmp_path):
    scenario, out = tmp_path / "tiny.yaml", tmp_path / "run"
    scenario.write_text(TINY)
    command = ["run", str(scenario), "--sim", "--iterations", "3", "--seeds", "7", "--out", str(out)]
    assert runner.invoke(app, command).exit_code == 0
    assert set(pd.read_parquet(out / "iterations.parquet")["seed"]) == {7}
    again = runner.invoke(app, command)
    assert again.exit_code == 2
    assert f"--out {out}: holds results already; add --force to overwrite them" in again.output
    assert runner.invoke(app, [*command, "--force"]).exit_code == 0


def test_a_real_run_asks_for_force_before_overwriting_results(tmp_path):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    out = tmp_path / "earlier"
    out.mkdir()
    (out / "iterations.parquet").write_bytes(b"")
    result = runner.invoke(app, ["run", "--backend", "local", "--dataset", "synthetic", "--out", str(out)])
    assert result.exit_code == 2 and "holds results already; add --force" in result.output, result.output


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


CERTAIN_DEATH = "failures: {model: crash, probability: 1.0, downtime: null}\nvariants:"


def certain_death_variants() -> list[dict]:
    """A variant of every policy a master runs (from the registry), synchronous ones with both fallbacks."""
    from gcbench.policies import POLICIES

    variants = []
    for name in POLICIES.names():
        cls = POLICIES.get(name)
        if getattr(cls, "real_only", False):
            continue
        policy = {"name": name, **{f: 2 for f, field in cls.model_fields.items() if field.is_required()}}
        if cls.synchronous:
            fallbacks = get_args(cls.model_fields["fallback"].annotation)  # those the policy takes
            variants += [{"scheme": "cr", "s": 1, "policy": {**policy, "fallback": f}} for f in fallbacks]
        else:
            variants.append({"scheme": "uncoded", "policy": policy})
    return variants


@pytest.mark.parametrize("variant", certain_death_variants(), ids=lambda v: json.dumps(v["policy"]))
def test_check_refuses_what_certainly_never_finishes_in_the_runs_own_sentence(tmp_path, variant):
    """Crash probability 1 without downtime: every worker crashes for good in its first job, whatever the draws,
    so --check says what the run says, word for word, and exits 2."""
    scenario = tmp_path / "dead.yaml"
    scenario.write_text(TINY.split("variants:")[0] + f"{CERTAIN_DEATH} [{json.dumps(variant)}]\n")
    checked = runner.invoke(app, ["simulate", "--check", str(scenario)])
    ran = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "o")])
    assert checked.exit_code == ran.exit_code == 2, checked.output
    assert checked.stderr == ran.stderr and checked.stderr.count("\n") == 1
    assert "0 can never finish (" in checked.stderr and "valid" not in checked.stdout


def test_check_names_the_first_certain_stop_of_a_sweep_and_accepts_what_is_left_to_chance(tmp_path):
    scenario = tmp_path / "crash.yaml"
    scenario.write_text(TINY.replace("variants:", CERTAIN_DEATH))
    done = gcbench("simulate", "--check", str(scenario))
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1
    assert done.stderr == (
        "error: variant 'uncoded': iteration 0 can never finish (6 of 6 workers crashed for good (workers 0, 1, 2, "
        "3, 4 and 5), 0 answered; too many for uncoded with s=0 under wait_all); give failures.downtime or "
        "policy.fallback: approximate.\n"
    )
    swept = TINY.replace("variants:", CERTAIN_DEATH).replace("probability: 1.0, downtime", "probability: 0.0, downtime")
    scenario.write_text(swept.replace("sweep: {straggling.slowdown: [2, 8]}", "sweep: {failures.probability: [0, 1]}"))
    checked = runner.invoke(app, ["simulate", "--check", str(scenario)])
    assert checked.exit_code == 2 and "variant 'uncoded': iteration 0 can never finish (6 of 6" in checked.stderr
    for chance in ("probability: 0.99, downtime: null", "probability: 1.0, downtime: 0.5", "rate: 1e6"):
        scenario.write_text(TINY.replace("variants:", f"failures: {{model: crash, {chance}}}\nvariants:"))
        checked = runner.invoke(app, ["simulate", "--check", str(scenario)])
        assert checked.exit_code == 0, (chance, checked.output)


def test_rerunning_into_a_folder_leaves_no_stale_workers_table(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    out = tmp_path / "run"
    assert runner.invoke(app, ["simulate", str(scenario), "--out", str(out)]).exit_code == 0
    assert (out / "workers.parquet").is_file()
    again = ["simulate", str(scenario), "--out", str(out), "--no-workers-table", "--force"]
    assert runner.invoke(app, again).exit_code == 0
    assert not (out / "workers.parquet").exists()


def test_a_missing_interval_is_explained(tmp_path):
    scenario = tmp_path / "short.yaml"
    scenario.write_text(TINY)
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "o"), "--seeds", "0"])
    assert result.exit_code == 0 and "n/a" in result.output
    assert "95% CI n/a: one seed and fewer than 50 iterations" in result.output


def test_an_interval_clipped_at_zero_says_so(tmp_path):
    """Two seeds, one with a 5 s straggler in 10 iterations and one without: the t interval's lower end falls
    below 0, and a mean time cannot be negative."""
    scenario = tmp_path / "clip.yaml"
    scenario.write_text(
        "name: clip\nworkers: 4\niterations: 10\nseeds: [0, 1]\n"
        "compute: {per_partition: {distribution: exponential, rate: 100}}\n"
        "straggling: {model: independent, probability: 0.05, delay: 5.0}\n"
        "variants:\n  - {label: uncoded, scheme: uncoded, policy: wait_all}\n"
    )
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0 and "[0 (clipped), " in result.output, result.output


def test_asynchronous_runs_show_staleness(tmp_path):
    scenario = tmp_path / "async.yaml"
    scenario.write_text(TINY.replace("{scheme: fr, s: 1}", "{scheme: uncoded, policy: async}"))
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0 and "staleness" in result.output
    assert "an iteration is one model update from k results" in result.output
    assert "Pipelined schemes" not in result.output and "Sequential schemes" not in result.output  # (none ran)


def test_out_onto_existing_results_asks_for_force(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    out = tmp_path / "run"
    assert runner.invoke(app, ["simulate", str(scenario), "--out", str(out), "--iterations", "2"]).exit_code == 0
    before = (out / "run.json").read_text()
    done = gcbench("simulate", str(scenario), "--out", str(out), "--iterations", "3")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr == f"error: --out {out}: holds results already; add --force to overwrite them, or choose another.\n"
    )
    assert (out / "run.json").read_text() == before
    assert (
        runner.invoke(app, ["simulate", str(scenario), "--out", str(out), "--iterations", "3", "--force"]).exit_code
        == 0
    )
    assert pd.read_parquet(out / "iterations.parquet")["iteration"].max() == 2


def test_iterations_seeds_and_set_override_the_file(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    out = tmp_path / "run"
    options = ["--iterations", "4", "--seeds", "7, 9,11", "--set", "straggling.probability=0.5"]
    options += ["--set", "sweep={straggling.slowdown: [3]}", "--set", "variants[1].policy={name: fastest_k, k: 5}"]
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(out), *options])
    assert result.exit_code == 0, result.output
    iterations = pd.read_parquet(out / "iterations.parquet")
    assert sorted(iterations["seed"].unique()) == [7, 9, 11] and iterations["iteration"].max() == 3
    assert set(iterations["straggling.slowdown"]) == {3} and "fr(s=1)/fastest_k" in set(iterations["variant"])
    meta = json.loads((out / "run.json").read_text())
    assert meta["scenario"]["straggling"]["probability"] == 0.5 and meta["seeds"] == [7, 9, 11]


def test_overrides_are_validated_like_the_file(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    cases = {
        ("--set", "straggling.probability=2"): "with the command-line options: straggling.probability: Input should be "
        "less than or equal to 1.",
        (
            "--set",
            "straggling.probabilty=0.5",
        ): "straggling.probabilty: unknown field; did you mean 'probability'?",
        ("--set", "variants[5].s=1"): "--set variants[5].s: there is no item 5 to set.",
        ("--set", "noequals"): "--set noequals: write it as path=value, e.g. --set straggling.probability=0.2.",
        ("--set", "a..b=1"): "--set a..b: not a dotted path such as straggling.slowdown or variants[1].s.",
        ("--set", "name=[unclosed"): "--set name=[unclosed: not valid YAML",
        ("--seeds", "0,x"): "--seeds: give comma-separated whole numbers such as 0,1,2, not '0,x'.",
        ("--seeds", "0,-1"): "--seeds: seeds are whole numbers >= 0, not '0,-1'.",
        ("--seeds", "1,1"): "seeds: Value error, give each seed once",
        (
            "--iterations",
            "-3",
        ): "with the command-line options: iterations: Input should be greater than or equal to 1.",
    }
    for option, message in cases.items():
        for check in ([], ["--check"]):
            done = runner.invoke(app, ["simulate", str(scenario), *check, *option, "--out", str(tmp_path / "o")])
            assert done.exit_code == 2 and done.stderr.count("\n") == 1, (option, done.stderr)
            assert message.replace("Value error, ", "") in done.stderr, (option, done.stderr)
    assert not (tmp_path / "o").exists()


def test_check_takes_the_overrides(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    result = runner.invoke(app, ["simulate", "--check", str(scenario), "--seeds", "1,2,3", "--iterations", "9"])
    # (rich wraps the line at the terminal's width, and the temporary path's length varies)
    assert result.exit_code == 0 and "3 seed(s), 9 iterations each" in " ".join(result.output.split())


def test_help_shows_no_typer_type_placeholders():
    for command in ["simulate", "run", "plot", "schemes", None]:
        args = [command, "--help"] if command else ["--help"]
        result = runner.invoke(app, args, env={"COLUMNS": "160"})
        assert result.exit_code == 0
        assert "<bool>" not in result.output and "list[" not in result.output, (command, result.output)
    run_help = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "160"}).output
    assert "cuda:N" in run_help
    simulate_help = runner.invoke(app, ["simulate", "--help"], env={"COLUMNS": "160"}).output
    assert all(flag in simulate_help for flag in ("--iterations", "--seeds", "--set", "PATH=VALUE", "--force"))


ASYNC_TINY = TINY.replace("policy: wait_all}", "policy: {name: k_async, k: 3}}")


def test_engine_flag_runs_the_event_engine_and_run_json_says_so(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    fast = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "fast")])
    event = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "event"), "--engine", "event"])
    assert fast.exit_code == 0 and event.exit_code == 0, event.output
    assert "engine: vectorised (2 variants)" in fast.output and "engine: event (2 variants)" in event.output
    assert json.loads((tmp_path / "event" / "run.json").read_text())["engines"] == {
        "uncoded": "event",
        "fr(s=1)/decodable": "event",
    }
    summaries = [pd.read_csv(tmp_path / name / "summary.csv") for name in ("fast", "event")]
    pd.testing.assert_frame_equal(*summaries, rtol=1e-9)


def test_vectorised_engine_for_an_asynchronous_policy_exits_2(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(ASYNC_TINY)
    result = gcbench("simulate", str(scenario), "--out", str(tmp_path / "run"), "--engine", "vectorised")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "engine: vectorised covers synchronous policies only" in result.stderr + result.stdout
    assert not (tmp_path / "run" / "iterations.parquet").exists()


def test_an_unknown_engine_exits_2_naming_the_field(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    result = gcbench("simulate", str(scenario), "--engine", "fast")
    assert result.returncode == 2 and "engine: Input should be 'auto', 'event' or 'vectorised'" in result.stderr


def test_jobs_must_be_at_least_one(tmp_path):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    result = runner.invoke(app, ["simulate", str(scenario), "--jobs", "0", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "--jobs" in result.output and not (tmp_path / "r").exists()


def test_check_refuses_what_the_run_s_engine_would_refuse(tmp_path):
    """--check validates up to each variant's engine: a variant the chosen engine cannot run is the run's own
    one-sentence error (exit 2) at --check, not only once the run starts."""
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY.replace("{scheme: fr, s: 1}", "{scheme: uncoded, policy: {name: k_async, k: 3}}"))
    checked = runner.invoke(app, ["simulate", "--check", str(scenario), "--engine", "vectorised"])
    ran = runner.invoke(app, ["simulate", str(scenario), "--engine", "vectorised", "--out", str(tmp_path / "o")])
    assert checked.exit_code == ran.exit_code == 2, checked.output
    error = [line for line in checked.output.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and error == [line for line in ran.output.splitlines() if line.startswith("error:")]
    assert "valid" not in checked.output
    assert runner.invoke(app, ["simulate", "--check", str(scenario)]).exit_code == 0  # auto runs it on the event engine


def test_a_placement_sweep_is_said_so_and_concluded_point_by_point(tmp_path):
    """scenarios/slow_node.yaml sweeps the placement: the first line says so, and the conclusion names each
    placement with "at" (no "from pack on": placements have no order)."""
    result = runner.invoke(app, ["simulate", str(ROOT / "scenarios" / "slow_node.yaml"), "--iterations", "60",
                                 "--out", str(tmp_path / "o")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "slow_node" in result.output and "8 workers on 4 nodes (placement swept)" in result.output
    assert "Fastest exact variant: FR s=1 at topology.placement = spread" in result.output
    assert "at topology.placement = pack" in result.output and "pack on" not in result.output
