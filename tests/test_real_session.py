"""The real run's driver without Ray (FakeMaster): turns, run.json provenance and status, partial tables,
Ctrl-C / SIGTERM messages and exit codes, --resume, --variants and --seeds."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")

import fakereal  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from gcbench.cli import app  # noqa: E402
from gcbench.real.run.session import turns  # noqa: E402

runner = CliRunner()
fake_ray = fakereal.fake_ray  # the fixture
SCENARIO = fakereal.SCENARIO


def gcbench(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def new_run(tmp_path: Path, *options: str, scenario: str = SCENARIO):
    path = tmp_path / "fake.yaml"
    path.write_text(scenario)
    out = tmp_path / "run"
    return gcbench("run", path, "--out", out, *options), out


def meta_of(out: Path) -> dict:
    return json.loads((out / "run.json").read_text())


# -- turns ----------------------------------------------------------------------------------------------------


class Turn(SimpleNamespace):
    """A stand-in run for ``turns``: a block moves it to its end."""

    @property
    def finished(self) -> bool:
        return self.stopped or self.next_iteration >= 6


def take_turns(runs: list[Turn], stop: tuple[str, int] | None = None) -> list[tuple[str, int, int, int]]:
    order = []
    for run, last in turns(runs, lambda first: min(first // 2 * 2 + 2, 6)):
        order.append((run.label, run.seed, run.next_iteration, last))
        run.stopped = (run.label, run.next_iteration) == stop
        run.next_iteration = last
    return order


def runs_at(*positions: tuple[str, int, int]) -> list[Turn]:
    return [Turn(label=label, seed=seed, next_iteration=at, stopped=False) for label, seed, at in positions]


def test_variants_take_turns_one_block_each_seed_after_seed():
    order = take_turns(runs_at(("a", 0, 0), ("b", 0, 0), ("a", 1, 0), ("b", 1, 0)))
    blocks = [(0, 2), (2, 4), (4, 6)]
    expected = [(v, 0, first, last) for first, last in blocks for v in "ab"]
    expected += [(v, 1, first, last) for first, last in blocks for v in "ab"]
    assert order == expected


def test_resumed_turns_start_where_each_checkpoint_left_off():
    order = take_turns(runs_at(("a", 0, 4), ("b", 0, 2), ("c", 0, 6)))
    assert order == [("a", 0, 4, 6), ("b", 0, 2, 4), ("b", 0, 4, 6)]


def test_a_stopped_variant_leaves_the_turns():
    order = take_turns(runs_at(("a", 0, 0), ("b", 0, 0)), stop=("a", 2))
    assert order == [("a", 0, 0, 2), ("b", 0, 0, 2), ("a", 0, 2, 4), ("b", 0, 2, 4), ("b", 0, 4, 6)]


def test_the_run_command_interleaves_variants_per_checkpoint_block(tmp_path, fake_ray):
    done, out = new_run(tmp_path, "--seeds", "0,1")
    assert done.exit_code == 0, done.output
    expected = []  # seed 0's blocks of 2 iterations, the variants taking turns; then seed 1's
    for seed in (0, 1):
        for first in (0, 2, 4):
            expected += [(label, seed, t) for label in ("uncoded", "FR s=1") for t in (first, first + 1)]
    assert fake_ray.log == expected
    meta = meta_of(out)
    assert meta["status"] == "complete" and meta["iterations_planned"] == 24 and meta["seeds"] == [0, 1]
    iterations = pd.read_parquet(out / "iterations.parquet")
    assert iterations.groupby(["variant", "seed"]).size().to_dict() == {
        (v, s): 6 for v in ("uncoded", "FR s=1") for s in (0, 1)
    }
    assert "95% CI over 2 seeds" in done.output


# -- progress ---------------------------------------------------------------------------------------------------


def test_progress_lines_are_printed_when_stdout_is_not_a_terminal(tmp_path, fake_ray):
    done, _ = new_run(tmp_path)
    assert done.exit_code == 0, done.output
    for done_so_far in (2, 4, 6):
        assert f"uncoded, seed 0: {done_so_far}/6 iterations, loss " in done.output
        assert f"FR s=1, seed 0: {done_so_far}/6 iterations, loss " in done.output
    assert "left (estimated)" in done.output and " elapsed" in done.output and "accuracy" in done.output
    assert "95% CI n/a: one seed and fewer than 50 iterations" in done.output


def test_off_a_terminal_a_block_end_does_not_repeat_the_line_just_printed():
    import io

    from rich.console import Console

    from gcbench.cli.progress import RunProgress

    file = io.StringIO()
    progress = RunProgress(Console(file=file, force_terminal=False, width=200), line_seconds=0.0)
    run = SimpleNamespace(index=0, label="CR s=1", seed=0, next_iteration=0, scenario=SimpleNamespace(iterations=4))
    progress.begin([run])
    tick = progress.on_iteration(run)
    tick(4, 0.5, float("nan"))  # a line (every 0 s), at the block's last iteration
    progress.block_done(run)
    assert file.getvalue().count("CR s=1, seed 0: 4/4 iterations") == 1


def test_progress_bars_on_a_terminal_show_iterations_eta_and_loss():
    import io

    from rich.console import Console

    from gcbench.cli.progress import RunProgress

    file = io.StringIO()
    progress = RunProgress(Console(file=file, force_terminal=True, width=200))
    run = SimpleNamespace(index=0, label="CR s=1", seed=0, next_iteration=0, scenario=SimpleNamespace(iterations=10))
    progress.begin([run])
    tick = progress.on_iteration(run)
    for t in range(1, 4):
        tick(t, 1.5 / t, 0.25 if t == 3 else float("nan"))
    progress.bar.refresh()
    progress.close()
    shown = file.getvalue()
    assert "CR s=1, seed 0" in shown and "3/10" in shown
    assert "loss 0.5" in shown and "accuracy 25.0%" in shown and "this run ~0m00s left" in shown
    assert "all runs ~0m00s left (estimated), 0m00s elapsed" in shown  # (an estimate, and the time since it began)


# -- run.json, partial results, Ctrl-C and SIGTERM --------------------------------------------------------------


def test_ctrl_c_keeps_checkpoints_flushes_rows_and_says_what_exists(tmp_path, fake_ray):
    fake_ray.events[("FR s=1", 0, 3)] = "interrupt"
    done, out = new_run(tmp_path)
    assert done.exit_code == 130, done.output
    line = [line for line in done.output.splitlines() if line.startswith("interrupted")]
    assert line == [
        "interrupted (SIGINT); checkpoints kept: variant 0 (uncoded), seed 0 at iteration 4; variant 1 (FR s=1), "
        f"seed 0 at iteration 2; continue with: gcbench run --resume {out}"
    ]
    assert "  " not in line[0]
    meta = meta_of(out)
    assert meta["status"] == "interrupted" and meta["iterations_planned"] == 12
    iterations = pd.read_parquet(out / "iterations.parquet")
    assert iterations.groupby("variant").size().to_dict() == {"uncoded": 4, "FR s=1": 3}  # 3: one past its checkpoint
    assert len(pd.read_parquet(out / "workers.parquet")) == 7 * 4


def test_ctrl_c_before_any_checkpoint_says_a_resume_starts_from_zero(tmp_path, fake_ray):
    fake_ray.events[("uncoded", 0, 1)] = "interrupt"
    done, out = new_run(tmp_path)
    assert done.exit_code == 130, done.output
    assert (
        "interrupted (SIGINT) before the first checkpoint (one is written every 2 iterations): no checkpoint exists "
        f"yet, so gcbench run --resume {out} starts from iteration 0." in done.output
    )
    assert meta_of(out)["status"] == "interrupted"


def test_ctrl_c_before_training_began_says_nothing_was_written(tmp_path, fake_ray, monkeypatch):
    import gcbench.training.data as data

    def interrupted(scenario, say=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(data, "load_data", interrupted)
    done, out = new_run(tmp_path)
    assert done.exit_code == 130, done.output
    assert done.output.strip() == f"interrupted (SIGINT) before training began; nothing was written to {out}."
    assert not out.exists()


def test_sigterm_is_handled_like_ctrl_c_with_exit_code_143(tmp_path, fake_ray):
    fake_ray.events[("uncoded", 0, 3)] = "sigterm"
    done, out = new_run(tmp_path)
    assert done.exit_code == 143, done.output
    assert "interrupted (SIGTERM); checkpoints kept: variant 0 (uncoded), seed 0 at iteration 2;" in done.output
    assert meta_of(out)["status"] == "interrupted"
    assert len(pd.read_parquet(out / "iterations.parquet")) == 2 + 2 + 1


def test_a_stopped_variant_makes_the_status_stopped(tmp_path, fake_ray):
    fake_ray.events[("FR s=1", 0, 3)] = "stuck"
    done, out = new_run(tmp_path)
    assert done.exit_code == 2, done.output
    assert "1 variant(s) stopped early (FR s=1)" in done.output
    assert "Left out of the comparison: FR s=1 stopped early" in " ".join(done.output.split())
    assert "Fastest exact variant: uncoded" in done.output
    assert meta_of(out)["status"] == "stopped"
    iterations = pd.read_parquet(out / "iterations.parquet")
    assert iterations.groupby("variant").size().to_dict() == {"uncoded": 6, "FR s=1": 3}


def test_results_are_written_at_every_checkpoint_while_running(tmp_path, fake_ray, monkeypatch):
    import gcbench.real.run.session as session

    seen = []
    original = session.Session.flush

    def spy(self, status):
        original(self, status)
        if (self.out / "iterations.parquet").exists():
            rows = len(pd.read_parquet(self.out / "iterations.parquet"))
            seen.append((json.loads((self.out / "run.json").read_text())["status"], rows))

    monkeypatch.setattr(session.Session, "flush", spy)
    done, _ = new_run(tmp_path)
    assert done.exit_code == 0, done.output
    assert seen == [("running", rows) for rows in (2, 4, 6, 8, 10, 12)] + [("complete", 12)]


# -- --resume ---------------------------------------------------------------------------------------------------


def test_run_json_records_the_gradient_the_model_has_not_the_files(tmp_path, fake_ray):
    # a real run's messages carry its model's gradient: the simulator's message sizes, and so the twin's fit of
    # the wire, read run.json's scenario, which said 11.2M entries (the schema's default) for a 188,810-entry CNN
    done, out = new_run(tmp_path, scenario=SCENARIO + "gradient: {length: 11200000, dtype: float64}\n")
    assert done.exit_code == 0, done.output
    assert meta_of(out)["scenario"]["gradient"] == {"length": 188_810, "dtype": "float32"}


def test_resume_keeps_the_provenance_and_says_what_it_continues(tmp_path, fake_ray, monkeypatch):
    fake_ray.events[("FR s=1", 0, 3)] = "interrupt"
    _, out = new_run(tmp_path)
    first = meta_of(out)
    fake_ray.events, fake_ray.log[:] = {}, []
    monkeypatch.setattr(sys, "argv", ["gcbench", "run", "--resume", str(out)])
    done = gcbench("run", "--resume", out)
    assert done.exit_code == 0, done.output
    assert "variant 0 (uncoded), seed 0: from iteration 4" in done.output
    assert "variant 1 (FR s=1), seed 0: from iteration 2" in done.output
    assert fake_ray.log == [("uncoded", 0, 4), ("uncoded", 0, 5), ("FR s=1", 0, 2), ("FR s=1", 0, 3),
                            ("FR s=1", 0, 4), ("FR s=1", 0, 5)]  # fmt: skip
    meta = meta_of(out)
    for key in ("created", "command", "wall_seconds"):
        assert meta[key] == first[key], key
    (entry,) = meta["resumes"]
    assert "--resume" in entry["command"] and entry["when"] >= first["created"] and entry["wall_seconds"] > 0
    assert entry["continued_from"] == [
        {"variant": "uncoded", "seed": 0, "iteration": 4},
        {"variant": "FR s=1", "seed": 0, "iteration": 2},
    ]
    assert meta["status"] == "complete"
    iterations = pd.read_parquet(out / "iterations.parquet")
    for _, frame in iterations.groupby("variant"):
        assert sorted(frame["iteration"]) == list(range(6)) and frame["end"].is_monotonic_increasing


def test_resuming_a_complete_run_reruns_and_rewrites_nothing(tmp_path, fake_ray):
    done, out = new_run(tmp_path)
    assert done.exit_code == 0, done.output
    workers = pd.read_parquet(out / "workers.parquet")
    late = workers[(workers["iteration"] == 5) & (workers["worker"] == 3)]
    assert late[["compute_start", "compute_end", "arrival"]].notna().all(axis=None)  # the last iteration's late work
    before = {path.name: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    fake_ray.log[:] = []
    again = gcbench("run", "--resume", out)
    assert again.exit_code == 0, again.output
    assert f"{out}: the run is complete (12 of 12 iterations); nothing to resume." in again.output
    assert fake_ray.log == []
    assert {path.name: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before


def test_the_last_checkpoint_keeps_the_late_timings(tmp_path, fake_ray):
    """A run whose status was lost after its last checkpoint is rebuilt from the checkpoints, late timings and all."""
    done, out = new_run(tmp_path)
    expected = pd.read_parquet(out / "workers.parquet")
    meta = meta_of(out)
    meta["status"] = "running"
    (out / "run.json").write_text(json.dumps(meta))
    again = gcbench("run", "--resume", out)
    assert again.exit_code == 0, again.output
    assert "variant 0 (uncoded), seed 0: complete (6 iterations), not run again" in again.output
    pd.testing.assert_frame_equal(pd.read_parquet(out / "workers.parquet"), expected)


def test_a_finished_run_from_before_run_json_had_a_status_is_left_as_it_is(tmp_path, fake_ray):
    done, out = new_run(tmp_path)
    meta = meta_of(out)
    del meta["status"]
    (out / "run.json").write_text(json.dumps(meta))
    (out / "workers.parquet").write_bytes(b"as the old run wrote it")
    again = gcbench("run", "--resume", out)
    assert again.exit_code == 0, again.output
    assert "the run is complete (12 of 12 iterations); nothing to resume." in again.output
    assert (out / "workers.parquet").read_bytes() == b"as the old run wrote it" and "status" not in meta_of(out)


def test_resume_refuses_options_that_would_change_the_run(tmp_path):
    done = gcbench("run", "--resume", tmp_path, "--seeds", "1", "--iterations", "3")
    assert done.exit_code == 2
    assert "error: --resume continues the run as it was set up; --iterations, --seeds cannot change it" in done.output


def test_a_new_run_does_not_pick_up_another_runs_checkpoints(tmp_path, fake_ray):
    _, out = new_run(tmp_path)
    done = gcbench("run", tmp_path / "fake.yaml", "--out", out)
    assert done.exit_code == 2
    assert f"error: --out {out} already holds a run's checkpoints; continue that run with --resume {out}" in done.output
    assert "start it again from its first iteration with --force" in done.output


def test_force_starts_a_run_with_checkpoints_again_from_its_first_iteration(tmp_path, fake_ray):
    _, out = new_run(tmp_path, "--iterations", "4")
    assert any((out / "checkpoints").iterdir())
    done = gcbench("run", tmp_path / "fake.yaml", "--out", out, "--iterations", "6", "--force")
    assert done.exit_code == 0, done.output
    iterations = pd.read_parquet(out / "iterations.parquet")
    assert iterations.groupby(["variant", "seed"])["iteration"].apply(list).map(list(range(6)).__eq__).all()
    assert meta_of(out)["scenario"]["iterations"] == 6


# -- --variants and --seeds --------------------------------------------------------------------------------------


def test_variants_selects_by_label(tmp_path, fake_ray):
    done, out = new_run(tmp_path, "--variants", "FR s=1")
    assert done.exit_code == 0, done.output
    assert {label for label, _, _ in fake_ray.log} == {"FR s=1"}
    assert [v["label"] for v in meta_of(out)["scenario"]["variants"]] == ["FR s=1"]


def test_variants_with_commas_in_a_label(tmp_path, fake_ray):
    scenario = SCENARIO.replace("label: FR s=1", "label: 'FR, s=1'")
    done, _ = new_run(tmp_path, "--variants", "FR, s=1,uncoded", scenario=scenario)
    assert done.exit_code == 0, done.output
    assert list(dict.fromkeys(label for label, _, _ in fake_ray.log)) == ["FR, s=1", "uncoded"]


def test_an_unknown_variant_lists_the_labels(tmp_path):
    done, _ = new_run(tmp_path, "--variants", "uncoded,CR s=1")
    assert done.exit_code == 2
    assert (
        "error: --variants: no variant is labelled 'CR s=1'; the scenario's labels are 'uncoded'; 'FR s=1'."
        in done.output
    )


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        ("0,x", "error: --seeds: give comma-separated whole numbers such as 0,1,2, not '0,x'."),
        ("0,-1", "error: --seeds: seeds are whole numbers >= 0, not '0,-1'."),
    ],
)
def test_bad_seeds_are_one_sentence(tmp_path, seeds, message):
    done, _ = new_run(tmp_path, "--seeds", seeds)
    assert done.exit_code == 2 and message in done.output, done.output
    assert "Traceback" not in done.output


# -- --set ----------------------------------------------------------------------------------------------------


def test_set_changes_any_field_of_a_real_run_as_the_file_would(tmp_path, fake_ray):
    done, out = new_run(tmp_path, "--set", "training.eval_every=3", "--set", "training.timeout=30")
    assert done.exit_code == 0, done.output
    training = meta_of(out)["scenario"]["training"]
    assert training["eval_every"] == 3 and training["timeout"] == 30


def test_a_bad_set_is_one_sentence_naming_the_field(tmp_path, fake_ray):
    done, _ = new_run(tmp_path, "--set", "training.eval_evry=3")
    assert done.exit_code == 2 and "training.eval_evry" in done.output and "Traceback" not in done.output


def test_resume_refuses_set(tmp_path, fake_ray):
    _, out = new_run(tmp_path)
    done = gcbench("run", "--resume", out, "--set", "training.eval_every=3")
    assert done.exit_code == 2 and "--set cannot change it" in done.output, done.output
