"""The local Ray instance of `gcbench run` listens on the loopback interface only, without a metrics exporter.

Checked on the running processes with ``ss``: every listening TCP socket of the
run's process tree (driver, GCS, raylet, agents, workers) is bound to
127.0.0.1, and no Ray metrics endpoint answers but the two docs/security.md
names (the autoscaler's and the dashboard head's, on 127.0.0.1).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = ("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:")
DOCUMENTED_METRICS_PORTS = {44217, 44227}  # Ray's AUTOSCALER_METRIC_PORT and DASHBOARD_METRIC_PORT

pytestmark = pytest.mark.slow


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


@pytest.mark.skipif(shutil.which("ss") is None or shutil.which("ps") is None, reason="needs ss and ps (iproute2)")
def test_the_local_ray_instance_listens_on_loopback_only_and_exports_no_metrics(tmp_path):
    pytest.importorskip("ray", reason="ray is part of the [real] extra")
    scenario = tmp_path / "exposure.yaml"
    scenario.write_text(
        "name: exposure\nworkers: 4\niterations: 30\n"
        "compute: {per_partition: {distribution: deterministic, value: 0.01}}\n"
        "straggling: {model: independent, probability: 1.0, delay: 0.2}\n"
        "variants: [{scheme: cr, s: 1}]\ntraining: {dataset: synthetic, batch_size: 32, device: cpu, eval_every: 30}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")} | {"PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", "from gcbench.cli import main; main()", "run", str(scenario)]
    run = subprocess.Popen(
        [*command, "--out", str(tmp_path / "out")], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    sockets: dict[str, str] = {}
    metrics: set[str] = set()
    try:
        deadline = time.time() + 600
        while run.poll() is None and time.time() < deadline:
            processes = descendants(run.pid)
            now = listening(processes)
            if any(name.startswith("ray::GradientWo") for name in processes.values()) and not metrics:
                time.sleep(2)  # the workers are up: every server has started
                now = listening(descendants(run.pid))
                metrics = {address for address in now if answers_metrics(address)} | {"probed"}
            sockets.update(now)
            time.sleep(0.5)
        output = run.communicate(timeout=max(1, deadline - time.time()))[0].decode()
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, output
    assert "probed" in metrics, f"the run ended before its workers were seen; sockets seen: {sockets}"
    assert {"gcs_server", "raylet"} <= set(sockets.values()), sockets
    exposed = {address: name for address, name in sockets.items() if not address.startswith(LOOPBACK)}
    assert not exposed, f"listening beyond this machine: {exposed}"
    answering = {int(address.rsplit(":", 1)[1]) for address in metrics - {"probed"}}
    assert answering <= DOCUMENTED_METRICS_PORTS, f"metrics answer on {answering}; docs/security.md names 44217, 44227"
