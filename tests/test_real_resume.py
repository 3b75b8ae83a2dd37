"""Kill or interrupt the driver of a real run mid-way (SIGKILL, Ctrl-C, SIGTERM), resume it, and find every
iteration exactly once, the run's provenance kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")
pytest.importorskip("ray", reason="ray is part of the [real] extra")

from gcbench.results import read_results  # noqa: E402

SCENARIO = """\
name: resume
workers: 4
iterations: 12
compute: {per_partition: {distribution: exponential, rate: 10}}
straggling: {model: independent, probability: 0.3, delay: 0.2}
variants: [{label: uncoded, scheme: uncoded, policy: wait_all}, {scheme: fr, s: 1}]
training: {dataset: synthetic, batch_size: 32, eval_every: 4, checkpoint_every: 2, device: cpu}
"""


def gcbench(*args: str, **kwargs) -> subprocess.Popen:
    code = "from gcbench.cli import main; main()"
    return subprocess.Popen([sys.executable, "-c", code, *args], start_new_session=True, **kwargs)


@pytest.mark.slow
def test_resume_after_the_driver_is_killed(tmp_path):
    scenario = tmp_path / "resume.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "run"
    driver = gcbench("run", str(scenario), "--out", str(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoint = out / "checkpoints" / "variant0-seed0.pt"
    deadline = time.time() + 240
    while not checkpoint.exists() and time.time() < deadline and driver.poll() is None:
        time.sleep(0.2)
    time.sleep(1.0)  # let it get past the first checkpoint, mid-way through the first variant
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    assert checkpoint.exists(), "no checkpoint was written before the kill"
    first = json.loads((out / "run.json").read_text())
    assert first["status"] == "running", "the run finished before it could be killed"
    partial = pd.read_parquet(out / "iterations.parquet")  # written at each checkpoint, so a partial run plots
    assert 0 < len(partial) < first["iterations_planned"] == 24
    saved = torch.load(checkpoint, weights_only=True)
    resumed = gcbench("run", "--resume", str(out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, output
    assert f"variant 0 (uncoded), seed 0: from iteration {saved['next_iteration']}" in output
    iterations, _, meta = read_results(out)
    assert meta["mode"] == "real" and meta["status"] == "complete"
    assert (meta["created"], meta["command"]) == (first["created"], first["command"])
    assert [entry["continued_from"][0] for entry in meta["resumes"]] == [
        {"variant": "uncoded", "seed": 0, "iteration": saved["next_iteration"]}
    ]
    for variant, frame in iterations.groupby("variant"):
        assert sorted(frame["iteration"]) == list(range(12)), f"{variant}: {sorted(frame['iteration'])}"
        assert frame["end"].is_monotonic_increasing
    # the iterations before the kill were kept, not run again
    first = iterations[iterations["variant"] == "uncoded"].set_index("iteration")["end"]
    for row in saved["rows"]:
        assert first[row["iteration"]] == row["end"]


def test_resume_needs_a_real_run_directory(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", "from gcbench.cli import main; main()", "run", "--resume", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 2 and "not a real-run directory" in done.stderr


def restore_default_signals() -> None:
    """A shell's background job starts with SIGINT ignored, and Python keeps that: restore the defaults."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "name", "code"),
    [("pid", "SIGINT", 130), ("pid", "SIGTERM", 143), ("group", "SIGTERM", 143)],
    ids=["ctrl-c", "sigterm", "sigterm-to-the-group"],
)
def test_a_signal_keeps_the_checkpoints_and_says_how_to_resume(tmp_path, how, name, code):
    """Ctrl-C and SIGTERM (a scheduler's, to the driver or, like SLURM, to its whole process group) end the same
    way: one line, the rows so far written, a defined exit code; not Ray's stack dump and SIGABRT."""
    scenario = tmp_path / "resume.yaml"
    scenario.write_text(SCENARIO.replace("iterations: 12", "iterations: 100"))
    out = tmp_path / "run"
    piped = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    driver = gcbench("run", str(scenario), "--out", str(out), **piped, preexec_fn=restore_default_signals)
    checkpoint = out / "checkpoints" / "variant0-seed0.pt"
    deadline = time.time() + 240
    while not checkpoint.exists() and time.time() < deadline and driver.poll() is None:
        time.sleep(0.2)
    number = getattr(signal, name)
    os.killpg(driver.pid, number) if how == "group" else driver.send_signal(number)
    output, _ = driver.communicate(timeout=60)
    assert driver.returncode == code, output
    (line,) = [line for line in output.splitlines() if line.startswith("interrupted")]
    assert line.startswith(f"interrupted ({name}); checkpoints kept: variant 0 (uncoded), seed 0 at iteration ")
    assert line.endswith(f"; continue with: gcbench run --resume {out}") and "  " not in line
    assert "SIGTERM received" not in output and "Traceback" not in output
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
    assert len(pd.read_parquet(out / "iterations.parquet")) >= 2
