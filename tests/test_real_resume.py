"""Kill or interrupt the driver of a real run mid-way (SIGKILL, Ctrl-C, SIGTERM), resume it, and find every
iteration exactly once, the run's provenance kept; and the local Ray instance a driver starts listens on the
loopback interface only, without a metrics exporter.

Each Ray driver starts a Ray instance of its own (seconds of a loaded machine's time; the SIGTERM to the driver
alone is sent to a torch-backend driver, which starts none), so the interrupted run that
Ctrl-C ends is also the one whose process tree is checked with ``ss``: every listening TCP socket of the
driver, GCS, raylet, agents and workers is bound to 127.0.0.1, and no Ray metrics endpoint answers but the two
docs/security.md names (the autoscaler's and the dashboard head's, on 127.0.0.1).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")
pytest.importorskip("ray", reason="ray is part of the [real] extra")

from typer.testing import CliRunner  # noqa: E402

from gcbench.cli import app  # noqa: E402
from gcbench.results import read_results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = ("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:")
DOCUMENTED_METRICS_PORTS = {44217, 44227}  # Ray's AUTOSCALER_METRIC_PORT and DASHBOARD_METRIC_PORT
HAS_SS = shutil.which("ss") is not None and shutil.which("ps") is not None

SCENARIO = """\
name: resume
workers: 2
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
def test_resume_after_the_driver_is_killed(tmp_path, local_ray):
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
    # resumed here, on the shared Ray instance: starting one in a new driver is what the killed one did
    resumed = CliRunner().invoke(app, ["run", "--resume", str(out)])
    output = resumed.output
    assert resumed.exit_code == 0, output
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


def interruptible(folder: Path, backend: str = "ray", **kwargs) -> tuple[subprocess.Popen, Path]:
    """A driver of 100 iterations (still running when a signal comes), with the default signal handlers."""
    scenario = folder / "resume.yaml"
    scenario.write_text(SCENARIO.replace("iterations: 12", "iterations: 100"))
    out = folder / "run"
    piped = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True}
    command = ("run", str(scenario), "--backend", backend, "--out", str(out))
    return gcbench(*command, **piped, preexec_fn=restore_default_signals, **kwargs), out


def descendants(root: int) -> dict[int, str]:
    """pid -> command name of root and every process below it."""
    table = subprocess.run(["ps", "-eo", "pid=,ppid=,comm="], capture_output=True, text=True).stdout
    children: dict[int, list[tuple[int, str]]] = {}
    for line in table.splitlines():
        pid, ppid, name = line.split(None, 2)
        children.setdefault(int(ppid), []).append((int(pid), name.strip()))
    found, stack = {root: "driver"}, [root]
    while stack:
        for pid, name in children.get(stack.pop(), []):
            found[pid] = name
            stack.append(pid)
    return found


def listening(processes: dict[int, str]) -> dict[str, str]:
    """local address -> command name, for the TCP sockets these processes listen on."""
    lines = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout.splitlines()
    return {
        line.split()[3]: name for line in lines for pid, name in processes.items() if f"pid={pid}," in line
    }  # fmt: skip


def answers_metrics(address: str) -> bool:
    port = address.rsplit(":", 1)[1]
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            return response.status == 200 and b"# TYPE" in response.read()
    except (urllib.error.URLError, OSError, ValueError):
        return False
    except Exception:  # a gRPC port answers HTTP/1 with garbage
        return False


def look(run: subprocess.Popen, seen: SimpleNamespace) -> None:
    """Add the sockets the run's processes listen on now; once its workers are up, probe them for metrics."""
    processes = descendants(run.pid)
    now = listening(processes)
    if any(name.startswith("ray::GradientWo") for name in processes.values()) and not seen.metrics:
        time.sleep(2)  # the workers are up: every server has started
        now = listening(descendants(run.pid))
        seen.metrics = {address for address in now if answers_metrics(address)} | {"probed"}
    seen.sockets.update(now)


@pytest.fixture(scope="module")
def observed(tmp_path_factory) -> SimpleNamespace:
    """A driver whose process tree is watched (with ``ss``, where it is installed) from its start to its exit,
    its metrics endpoints probed once its workers are up, and interrupted with Ctrl-C (SIGINT to its pid) once
    the first checkpoint is written and the probe done. Its environment holds no Ray setting: the loopback and
    metrics settings must be gcbench's own, not those of the tests' shared instance."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"PYTHONPATH": str(ROOT)}
    run, out = interruptible(tmp_path_factory.mktemp("observed"), env=environment)
    checkpoint = out / "checkpoints" / "variant0-seed0.pt"
    seen = SimpleNamespace(sockets={}, metrics=set() if HAS_SS else {"probed"})
    deadline = time.time() + 600
    try:
        while run.poll() is None and time.time() < deadline and not (checkpoint.exists() and seen.metrics):
            if HAS_SS:
                look(run, seen)
            time.sleep(0.2)
        run.send_signal(signal.SIGINT)
        while HAS_SS and run.poll() is None and time.time() < deadline:
            look(run, seen)
            time.sleep(0.2)
        output, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    return SimpleNamespace(output=output, returncode=run.returncode, out=out, **vars(seen))


@pytest.mark.slow
@pytest.mark.skipif(not HAS_SS, reason="needs ss and ps (iproute2)")
def test_the_local_ray_instance_listens_on_loopback_only_and_exports_no_metrics(observed):
    sockets, metrics = observed.sockets, observed.metrics
    assert "probed" in metrics, f"the run ended before its workers were seen; sockets seen: {sockets}"
    assert {"gcs_server", "raylet"} <= set(sockets.values()), sockets
    exposed = {address: name for address, name in sockets.items() if not address.startswith(LOOPBACK)}
    assert not exposed, f"listening beyond this machine: {exposed}"
    answering = {int(address.rsplit(":", 1)[1]) for address in metrics - {"probed"}}
    assert answering <= DOCUMENTED_METRICS_PORTS, f"metrics answer on {answering}; docs/security.md names 44217, 44227"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "name", "code", "backend"),
    [("pid", "SIGINT", 130, "ray"), ("pid", "SIGTERM", 143, "torch"), ("group", "SIGTERM", 143, "ray")],
    ids=["ctrl-c", "sigterm-on-torch", "sigterm-to-the-group"],
)
def test_a_signal_keeps_the_checkpoints_and_says_how_to_resume(tmp_path, how, name, code, backend, request):
    """Ctrl-C and SIGTERM (a scheduler's, to the driver or, like SLURM, to its whole process group) end the same
    way: one line, the rows so far written, a defined exit code; not Ray's stack dump and SIGABRT. (Ctrl-C: the
    observed run's. SIGTERM to the driver alone on the torch backend, whose driver starts in seconds: the session's
    handling is every backend's, and Ray's own handlers are met by the group's SIGTERM; the torch backend's Ctrl-C
    to its process group is tests/test_torch_cluster.py's.)"""
    if name == "SIGINT":
        run = request.getfixturevalue("observed")
        output, returncode, out = run.output, run.returncode, run.out
    else:
        driver, out = interruptible(tmp_path, backend)
        checkpoint = out / "checkpoints" / "variant0-seed0.pt"
        deadline = time.time() + 240
        while not checkpoint.exists() and time.time() < deadline and driver.poll() is None:
            time.sleep(0.2)
        number = getattr(signal, name)
        os.killpg(driver.pid, number) if how == "group" else driver.send_signal(number)
        output, _ = driver.communicate(timeout=60)
        returncode = driver.returncode
    assert returncode == code, output
    (line,) = [line for line in output.splitlines() if line.startswith("interrupted")]
    assert line.startswith(f"interrupted ({name}); checkpoints kept: variant 0 (uncoded), seed 0 at iteration ")
    assert line.endswith(f"; continue with: gcbench run --resume {out}") and "  " not in line
    assert "SIGTERM received" not in output and "Traceback" not in output
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
    assert len(pd.read_parquet(out / "iterations.parquet")) >= 2
