"""`gcbench simulate --ray`: a sweep's tasks on Ray give a local run's files, bit for bit, a task lost with its
worker is run again, a task's own error is raised once, as locally; the option errors are one sentence.

The Ray tests run on the shared local instance (``local_ray``); the functions that stand in for a task there
(to kill its worker, or fail) are closures, which Ray ships by value: its workers cannot import this module.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.errors import GcbenchError
from gcbench.results.store import read_results
from gcbench.scenario import load_scenario

runner = CliRunner()

# both engines (fastest_k: vectorised; k_async: the event engine), 2 points x 3 variants x 2 seeds = 12 tasks
SWEEP = """\
name: ray-sweep
workers: 6
iterations: 20
seeds: [0, 1]
compute: {per_partition: {distribution: shifted_exponential, shift: 0.1, rate: 10}}
straggling: {model: independent, probability: 0.2, slowdown: 5}
variants:
  - {label: uncoded, scheme: uncoded, policy: wait_all}
  - {scheme: cr, s: 1, policy: {name: fastest_k, k: 4}}
  - {label: 2-async, scheme: uncoded, policy: {name: k_async, k: 2}}
sweep: {straggling.slowdown: [2, 8]}
"""
TASKS = 12
ONE_TASK = """\
name: ray-one-task
workers: 6
iterations: 20
compute: {per_partition: {distribution: exponential, rate: 10}}
variants: [{label: uncoded, scheme: uncoded}]
"""
USER_ERROR = "variants[1].s: the stand-in task refuses to run, as a user's error would."


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sweep") / "sweep.yaml"
    path.write_text(SWEEP)
    return path


@pytest.fixture(scope="module")
def one_task(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("one") / "one.yaml"
    path.write_text(ONE_TASK)
    return path


def simulate(*args: str):
    return runner.invoke(app, ["simulate", *map(str, args)], catch_exceptions=False)


def assert_same_run(a: Path, b: Path) -> None:
    """The tables as ``read_results`` gives them, exactly, and the same summary.csv, byte for byte."""
    (iterations_a, workers_a, _), (iterations_b, workers_b, _) = read_results(a), read_results(b)
    pd.testing.assert_frame_equal(iterations_a, iterations_b, check_exact=True)
    assert (workers_a is None) == (workers_b is None)
    if workers_a is not None:
        pd.testing.assert_frame_equal(workers_a, workers_b, check_exact=True)
    assert (a / "summary.csv").read_bytes() == (b / "summary.csv").read_bytes()


@pytest.mark.parametrize("table", ["--workers-table", "--no-workers-table"])
def test_a_sweep_on_ray_writes_the_files_of_a_local_run(local_ray, sweep, tmp_path, table):
    local = simulate(sweep, "--jobs", "1", table, "--out", tmp_path / "local")
    on_ray = simulate(sweep, "--ray", table, "--out", tmp_path / "ray")
    assert local.exit_code == 0 and on_ray.exit_code == 0, on_ray.output
    assert "tasks on Ray: a local instance" in on_ray.output
    assert_same_run(tmp_path / "ray", tmp_path / "local")
    assert read_results(tmp_path / "ray")[2]["ray_cluster"] == "local"


def dies_once(marker: Path):
    """A task function whose task of variant 1, seed 1, point 1 kills its worker process the first time."""

    def run(point, index, task, tables):
        from gcbench.sim.ray_tasks import task_files

        if (index, task.variant, task.seed) == (1, 1, 1) and not marker.exists():
            marker.touch()
            os._exit(1)
        return task_files(point, index, task, tables)

    return run


def test_a_task_lost_with_its_worker_runs_again_and_the_files_are_the_same(local_ray, sweep, tmp_path, monkeypatch):
    from gcbench.sim import ray_tasks
    from gcbench.sim.runner import stream_points

    marker = tmp_path / "died"
    monkeypatch.setattr(ray_tasks, "task_files", dies_once(marker))
    points, done = load_scenario(sweep), []
    stream_points(points, tmp_path / "ray", on_ray=True, progress=done.append)
    stream_points(points, tmp_path / "local", jobs=1)
    assert marker.exists(), "the task never killed its worker"
    assert done == list(range(1, TASKS + 1))  # the bar's count, a task at a time, as --jobs moves it
    for name in ("iterations", "workers"):
        frames = [pd.read_parquet(tmp_path / run / f"{name}.parquet") for run in ("ray", "local")]
        pd.testing.assert_frame_equal(*frames, check_exact=True)


def refuses(attempts: Path):
    """A task function that raises a user's error, counting its attempts."""

    def run(*args):
        with attempts.open("a") as file:
            file.write("attempt\n")
        raise GcbenchError(USER_ERROR)

    return run


def always_dies(attempts: Path):
    """A task function that kills its worker process every time, counting its attempts."""

    def run(*args):
        with attempts.open("a") as file:
            file.write("attempt\n")
        os._exit(1)

    return run


def test_a_tasks_user_error_is_raised_once_as_a_local_run_raises_it(local_ray, one_task, tmp_path, monkeypatch):
    from gcbench.sim import ray_tasks, runner

    attempts = tmp_path / "attempts"
    monkeypatch.setattr(ray_tasks, "task_files", refuses(attempts))
    on_ray = simulate(one_task, "--ray", "--out", tmp_path / "ray")
    monkeypatch.setattr(runner, "write_task", refuses(tmp_path / "local-attempts"))
    local = simulate(one_task, "--jobs", "1", "--out", tmp_path / "local")
    assert on_ray.exit_code == local.exit_code == 2
    assert on_ray.output.splitlines()[-1] == local.output.splitlines()[-1] == f"error: {USER_ERROR}"
    assert "Traceback" not in on_ray.output and not (tmp_path / "ray").exists()
    assert attempts.read_text().count("attempt") == 1  # an error the task raises is not retried


def test_a_task_lost_every_time_ends_in_one_sentence(local_ray, one_task, tmp_path, monkeypatch):
    from gcbench.sim import ray_tasks

    attempts = tmp_path / "attempts"
    monkeypatch.setattr(ray_tasks, "task_files", always_dies(attempts))
    monkeypatch.setattr(ray_tasks, "RETRIES", 1)
    result = simulate(one_task, "--ray", "--out", tmp_path / "ray")
    assert result.exit_code == 2, result.output
    assert result.output.splitlines()[-1] == (
        "error: the task of variant 'uncoded', seed 0, at sweep point 0 was lost with its Ray worker or node 2 "
        "times (WorkerCrashedError); check the cluster's nodes, or run the sweep here without --ray."
    )
    assert attempts.read_text().count("attempt") == 2 and not (tmp_path / "ray").exists()


def test_address_without_ray_is_one_sentence(sweep, tmp_path):
    result = runner.invoke(app, ["simulate", str(sweep), "--address", "10.0.0.1:6379", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and not (tmp_path / "r").exists()
    assert (
        result.output
        == "error: --address 10.0.0.1:6379 is the Ray cluster to run the tasks on; add --ray, or drop it.\n"
    )


def test_jobs_with_ray_is_one_sentence(sweep, tmp_path):
    result = runner.invoke(app, ["simulate", str(sweep), "--ray", "--jobs", "2", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and not (tmp_path / "r").exists()
    assert result.output == (
        "error: --jobs sets the processes on this machine, and with --ray Ray runs the tasks; drop one.\n"
    )


def test_ray_without_the_real_extra_is_one_sentence(sweep, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what importlib sees for a package that is not installed
    result = runner.invoke(app, ["simulate", str(sweep), "--ray", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and not (tmp_path / "r").exists()
    assert result.output.startswith("error: --ray needs Ray, part of the [real] extra (ray cannot be imported): ")
    assert result.output.endswith("or drop --ray to run the tasks in processes on this machine.\n")
    assert result.output.count("\n") == 1


def test_the_ray_path_imports_no_torch():
    """--ray starts Ray from gcbench.real.ray.start, not the real runner (3 s of torch on these machines)."""
    probe = (
        "import sys, gcbench.cli.simulate, gcbench.cli.simulation, gcbench.real.ray.start, gcbench.sim.ray_tasks; "
        "print('torch' in sys.modules, 'ray' in sys.modules)"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.split() == ["False", "False"]


def test_a_cluster_address_is_joined_with_token_authentication(sweep, tmp_path, monkeypatch):
    """--address reaches start_ray as real mode's: RAY_AUTH_MODE=token, and an unreachable cluster in a sentence."""
    import importlib.machinery
    import types

    calls: dict = {}
    ray = types.ModuleType("ray")
    ray.__spec__ = importlib.machinery.ModuleSpec("ray", None)  # found, as an installed Ray is
    ray.is_initialized = lambda: False

    def init(**options):
        calls.update(options, auth_mode=os.environ.get("RAY_AUTH_MODE"))
        raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6379")

    ray.init = init
    monkeypatch.setenv("RAY_AUTH_MODE", "unset")  # restored after the test, though start_ray sets it
    monkeypatch.delenv("RAY_AUTH_MODE")
    monkeypatch.setitem(sys.modules, "ray", ray)
    result = runner.invoke(app, ["simulate", str(sweep), "--ray", "--address", "10.0.0.1:6379", "--out", str(tmp_path)])
    assert calls["address"] == "10.0.0.1:6379" and calls["auth_mode"] == "token"
    assert result.exit_code == 2 and result.output.startswith("error: cannot start or reach Ray at 10.0.0.1:6379: ")
    assert "auth_token" in result.output and result.output.count("\n") == 1


@pytest.mark.slow
def test_a_sweep_across_three_emulated_ray_nodes_writes_the_files_of_a_local_run(sweep, tmp_path):
    """Three Ray nodes, each in a network namespace of its own with its own raylet and object store, one CPU
    each: the tasks spread over them and their parts come back across the nodes' links, and the files are a
    local run's, bit for bit. (Run as a command: it re-runs itself inside the emulated cluster's node 0.)"""
    from gcbench.real.emulation import namespaces_refused

    if namespaces_refused():
        pytest.skip(namespaces_refused())
    pytest.importorskip("ray", reason="ray is part of the [real] extra")
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    command = [sys.executable, "-m", "gcbench", "simulate", str(sweep), "--ray", "--emulate", "3", "--out"]
    emulated = subprocess.run([*command, str(tmp_path / "emulated")], capture_output=True, text=True, timeout=600,
                              env=environment)  # fmt: skip
    assert emulated.returncode == 0, emulated.stdout[-3000:] + emulated.stderr[-3000:]
    assert "tasks on Ray: 3 emulated nodes (10.9.0.1, 10.9.0.2, 10.9.0.3)" in emulated.stdout
    local = simulate(sweep, "--jobs", "1", "--out", tmp_path / "local")
    assert local.exit_code == 0, local.output
    assert_same_run(tmp_path / "emulated", tmp_path / "local")
    assert read_results(tmp_path / "emulated")[2]["ray_cluster"] == "emulated: 10.9.0.1, 10.9.0.2, 10.9.0.3"


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        (["--emulate", "3"], "error: --emulate 3 runs the tasks on Ray nodes of an emulated cluster; add --ray.\n"),
        (["--ray", "--emulate", "3", "--address", "10.0.0.1:6379"],
         "error: --emulate builds a cluster on this machine, and --address 10.0.0.1:6379 joins another; drop one.\n"),
    ],
)  # fmt: skip
def test_emulate_without_ray_or_beside_an_address_is_one_sentence(sweep, tmp_path, options, sentence):
    result = runner.invoke(app, ["simulate", str(sweep), *options, "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and not (tmp_path / "r").exists()
    assert result.output == sentence


def test_emulate_needs_two_nodes_at_least(sweep, tmp_path):
    result = runner.invoke(app, ["simulate", str(sweep), "--ray", "--emulate", "1", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "--emulate" in result.output and not (tmp_path / "r").exists()
