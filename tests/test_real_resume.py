"""Kill the driver of a real run mid-way, resume it, and find every iteration exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from gcbench.results import read_results

pytest.importorskip("ray", reason="ray is part of the [real] extra")

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
    assert not (out / "iterations.parquet").exists(), "the run finished before it could be killed"
    saved = torch.load(checkpoint, weights_only=True)
    resumed = gcbench("run", "--resume", str(out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, output
    iterations, _, meta = read_results(out)
    assert meta["mode"] == "real"
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


def test_ctrl_c_says_how_to_resume(tmp_path):
    scenario = tmp_path / "resume.yaml"
    scenario.write_text(SCENARIO.replace("iterations: 12", "iterations: 100"))
    out = tmp_path / "run"
    piped = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    # a shell's background job starts with SIGINT ignored, and Python keeps that: restore the default
    default = {"preexec_fn": lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)}
    driver = gcbench("run", str(scenario), "--out", str(out), **piped, **default)
    checkpoint = out / "checkpoints" / "variant0-seed0.pt"
    deadline = time.time() + 240
    while not checkpoint.exists() and time.time() < deadline and driver.poll() is None:
        time.sleep(0.2)
    driver.send_signal(signal.SIGINT)
    output, _ = driver.communicate(timeout=60)
    assert driver.returncode == 130, output
    assert f"continue with  gcbench run --resume {out}" in output
