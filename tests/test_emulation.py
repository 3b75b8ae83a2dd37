"""The emulated cluster (gcbench/real/emulation): nodes in network namespaces of one user namespace, no root, shaped
links, and a teardown that leaves nothing however the driver ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gcbench.errors import GcbenchError
from gcbench.real.emulation import EmulatedCluster, LinkRates, NodeSpec, namespaces_refused
from gcbench.real.emulation import cluster as cluster_module
from gcbench.real.emulation.cluster import alive, descendants
from gcbench.real.emulation.links import shaping
from gcbench.real.emulation.probe import transfer

ROOT = Path(__file__).resolve().parents[1]
REFUSED = namespaces_refused()
needs_namespaces = pytest.mark.skipif(REFUSED is not None, reason=REFUSED or "")
MBIT = 1e6 / 8  # bytes a second in a megabit a second


def fake_proc(tmp_path: Path, **settings: str) -> Path:
    for path, value in settings.items():
        file = tmp_path / path.replace(".", "/")
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(value + "\n")
    return tmp_path


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("sys.kernel.unprivileged_userns_clone", "0"),
        ("sys.user.max_user_namespaces", "0"),
        ("sys.kernel.apparmor_restrict_unprivileged_userns", "1"),
    ],  # fmt: skip
)
def test_a_machine_that_forbids_user_namespaces_is_one_sentence_naming_the_setting(tmp_path, setting, value):
    refused = namespaces_refused(fake_proc(tmp_path, **{setting: value}), trial=False)
    name = setting.removeprefix("sys.")
    assert refused is not None and f"{name} is {value}" in refused and refused.count(". ") == 0
    assert refused.endswith(".")


def test_allowing_settings_are_not_refused(tmp_path):
    proc = fake_proc(tmp_path, **{"sys.kernel.unprivileged_userns_clone": "1", "sys.user.max_user_namespaces": "15",
                                  "sys.kernel.apparmor_restrict_unprivileged_userns": "0"})  # fmt: skip
    assert namespaces_refused(proc, trial=False) is None


def test_a_link_is_shaped_to_carry_the_scenarios_rate_of_message_bytes():
    """The bucket counts frames of 1514 bytes for 1448 of payload: its rate is the payload rate times that."""
    (command,) = shaping("eth0", 100 * MBIT)
    rate = command[command.index("rate") + 1]
    assert rate == f"{round(100e6 * 1514 / 1448)}bit"
    assert shaping("eth0", None) == []
    with pytest.raises(ValueError, match="positive"):
        LinkRates(up=0)


@needs_namespaces
def test_nodes_have_their_addresses_and_their_links_carry_no_more_than_their_rate():
    """Two nodes at 20 Mb/s each way: each has its address and bucket, and 2 MB take at least the time the rate
    allows (an upper bound on the rate, which a busy machine cannot break; benchmarks/emulated_cluster.py
    measures how close it comes)."""
    rate = 20 * MBIT
    with EmulatedCluster([NodeSpec(LinkRates(rate, rate)), NodeSpec(LinkRates(rate, rate))]) as cluster:
        assert cluster.addresses == ["10.9.0.1", "10.9.0.2"]
        for node, address in enumerate(cluster.addresses):
            shown = cluster.run_in(node, ["ip", "-j", "addr", "show", "eth0"], capture_output=True, text=True)
            assert address in shown.stdout
            qdiscs = json.loads(cluster.run_in(node, ["tc", "-j", "qdisc", "show", "dev", "eth0"],
                                               capture_output=True, text=True).stdout)  # fmt: skip
            assert [q["kind"] for q in qdiscs] == ["tbf"]
        size = 2_000_000
        received, seconds = transfer(cluster, 0, 1, size)
        assert received == size
        burst = 16 * 1024
        assert seconds >= (size - 2 * burst) / (rate * 1.05)


@needs_namespaces
def test_closing_the_cluster_ends_every_process_inside_it():
    with EmulatedCluster([NodeSpec(), NodeSpec()]) as cluster:
        sleeper = cluster.start_in(1, ["sleep", "1000"])
        deadline = time.monotonic() + 10
        while not descendants(sleeper.pid) and time.monotonic() < deadline:  # (nsenter forks into the node)
            time.sleep(0.01)
        inside = cluster.processes() + descendants(sleeper.pid)
        assert len(inside) == 4  # the holder, two nodes, the sleep
    assert sleeper.wait(10) != 0  # ended by the kernel with the namespaces
    assert not [pid for pid in inside if alive(pid)]


DRIVER = """
import json, sys, time
from gcbench.real.emulation import EmulatedCluster, NodeSpec
cluster = EmulatedCluster([NodeSpec(), NodeSpec()])
cluster.start()
sleeper = cluster.start_in(1, ["sleep", "1000"])
time.sleep(0.5)
from gcbench.real.emulation.cluster import descendants
import os
print(json.dumps(descendants(os.getpid())), flush=True)
time.sleep(1000)
"""


@needs_namespaces
def test_a_driver_killed_with_sigkill_takes_its_namespaces_and_their_processes_with_it():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, text=True, env=env)
    try:
        started = json.loads(driver.stdout.readline())
        assert len(started) >= 5  # unshare, the holder, two nodes; nsenter and the sleep
        driver.send_signal(signal.SIGKILL)
        driver.wait(10)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in started if alive(pid)]
    finally:
        driver.kill()


@needs_namespaces
def test_a_failed_start_is_one_sentence_and_leaves_nothing(monkeypatch):
    monkeypatch.setattr(cluster_module, "SUBNET", "10.9.300")  # no such address: the holder fails to build
    cluster = EmulatedCluster([NodeSpec(), NodeSpec()])
    before = set(descendants(os.getpid()))
    with pytest.raises(GcbenchError, match="could not be built") as refused:
        cluster.start()
    assert "\n" not in str(refused.value)
    time.sleep(0.2)
    assert not [pid for pid in set(descendants(os.getpid())) - before if alive(pid)]
    assert not cluster.running


RAY_INSIDE = """
import json, os, sys, time
from gcbench.real.emulation import Nodes
from gcbench.real.emulation.ray_nodes import node_resource, start_ray_nodes

nodes = Nodes.from_environment()
address = start_ray_nodes(nodes)
import ray

ray.init(address=address, log_to_driver=False)

@ray.remote(num_cpus=0)
def where():
    import subprocess
    return subprocess.run(["ip", "-4", "-o", "addr", "show", "eth0"], capture_output=True, text=True).stdout.split()[3]

placed = [ray.get(where.options(resources={node_resource(k): 0.01}).remote()) for k in range(len(nodes.addresses))]
alive = sum(node["Alive"] for node in ray.nodes())
print(json.dumps({"alive": alive, "placed": placed, "scratch": sorted(os.listdir(nodes.scratch))}), flush=True)
if sys.argv[1:] == ["hold"]:
    time.sleep(1000)
"""


@needs_namespaces
@pytest.mark.slow
def test_ray_spans_the_nodes_and_leaves_no_process_and_no_session_folder():
    """A Ray head on node 0 and a Ray node on node 1: both alive, a task placed on each node runs at its address,
    and after the cluster closes no Ray process and no session folder is left (they lived in the scratch folder)."""
    pytest.importorskip("ray", reason="ray is part of the [real] extra")
    with EmulatedCluster([NodeSpec(), NodeSpec()]) as cluster:
        scratch = cluster.scratch
        done = cluster.run_in(0, [sys.executable, "-c", RAY_INSIDE], capture_output=True, text=True, timeout=300,
                              env={**os.environ, **cluster.inside()})  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        found = json.loads(done.stdout.strip().splitlines()[-1])
        inside = cluster.processes()
    assert found["alive"] == 2
    assert found["placed"] == ["10.9.0.1/24", "10.9.0.2/24"]
    assert {"ray", "ray_auth_token"} <= set(found["scratch"])  # Ray's session went to the scratch folder
    assert not [pid for pid in inside if alive(pid)]
    assert not scratch.exists()  # (and with it Ray's session folder: /tmp/ray is other Rays' to change meanwhile)


RAY_DRIVER = """
import json, os, subprocess, sys, time
from gcbench.real.emulation import EmulatedCluster, NodeSpec
cluster = EmulatedCluster([NodeSpec(), NodeSpec()])
cluster.start()
inner = cluster.start_in(0, [sys.executable, "-c", sys.argv[1], "hold"], stdout=subprocess.PIPE, text=True,
                         env={**os.environ, **cluster.inside()})
inner.stdout.readline()
from gcbench.real.emulation.cluster import descendants
print(json.dumps({"pids": descendants(os.getpid()), "scratch": str(cluster.scratch)}), flush=True)
time.sleep(1000)
"""


@needs_namespaces
@pytest.mark.slow
def test_a_killed_driver_takes_its_ray_nodes_and_their_session_files_with_it():
    pytest.importorskip("ray", reason="ray is part of the [real] extra")
    from gcbench.real.emulation.cluster import sweep_scratch

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen([sys.executable, "-c", RAY_DRIVER, RAY_INSIDE], stdout=subprocess.PIPE, text=True,
                              env=env)  # fmt: skip
    try:
        started = json.loads(driver.stdout.readline())
        assert len(started["pids"]) >= 8  # unshare, the holder, two nodes, nsenter, the driver inside, Ray's own
        driver.send_signal(signal.SIGKILL)
        driver.wait(10)
        deadline = time.monotonic() + 15
        while any(alive(pid) for pid in started["pids"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in started["pids"] if alive(pid)]
        scratch = Path(started["scratch"])
        # its memory file system went with the namespaces: the mount point is left empty (or already swept away by
        # another cluster's start, which removes a dead driver's empty ones)
        assert not scratch.exists() or not list(scratch.iterdir())
        sweep_scratch()  # (the next cluster's start removes the empty mount point)
        assert not scratch.exists()  # (and with it Ray's session folder: /tmp/ray is other Rays' to change meanwhile)
    finally:
        driver.kill()


GLOO_RANK = """
import os, sys, time
import torch
import torch.distributed as dist

rank, master = int(sys.argv[1]), sys.argv[2]
os.environ["GLOO_SOCKET_IFNAME"] = "eth0"  # each rank's own interface (else gloo advertises 127.0.0.1)
dist.init_process_group("gloo", init_method=f"tcp://{master}:29500", rank=rank, world_size=2)
gradient = torch.full((1_250_000,), float(rank + 1))  # 5 MB of float32
if rank == 1:
    dist.send(gradient, dst=0)
else:
    began = time.perf_counter()
    dist.recv(gradient, src=1)
    print(float(gradient[0]), time.perf_counter() - began, flush=True)
dist.destroy_process_group()
"""


@needs_namespaces
@pytest.mark.slow
def test_gloo_ranks_on_two_nodes_talk_over_the_shaped_link():
    """torch.distributed's gloo across nodes, each rank on its node's own interface: a 5 MB gradient sent from node
    1 to node 0 arrives whole, no faster than the 100 Mb/s link allows."""
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    rate = 100 * MBIT
    with EmulatedCluster([NodeSpec(LinkRates(rate, rate)), NodeSpec(LinkRates(rate, rate))]) as cluster:
        master = cluster.addresses[0]
        ranks = [cluster.start_in(k, [sys.executable, "-c", GLOO_RANK, str(k), master], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for k in (0, 1)]  # fmt: skip
        outputs = [rank.communicate(timeout=120) for rank in ranks]
        assert [rank.returncode for rank in ranks] == [0, 0], outputs
    value, seconds = (float(word) for word in outputs[0][0].split())
    assert value == 2.0
    assert seconds >= (5_000_000 - 2 * 16 * 1024) / (rate * 1.05)


CRASHER = """
import json, subprocess, time
from gcbench.real.emulation import Nodes
from gcbench.real.emulation.cluster import alive
nodes = Nodes.from_environment()
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
on_1 = [nodes.start_in(1, ["sleep", "1000"], **quiet) for _ in range(2)]
on_2 = nodes.start_in(2, ["sleep", "1000"], **quiet)
time.sleep(0.3)
before = nodes.processes_on(1)
killed = nodes.crash(1)
for process in on_1:
    process.wait(10)
address = nodes.run_in(1, ["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True).stdout
print(json.dumps({"before": before, "killed": killed, "mine": [p.pid for p in on_1], "other": alive(on_2.pid),
                  "holder": alive(nodes.pids[1]), "after": nodes.processes_on(1), "address": address}))
on_2.kill()
"""


@needs_namespaces
def test_a_node_s_crash_kills_every_process_on_it_by_id_and_keeps_its_network():
    """What a run's node crash does (gcbench/real/wallclock/wall_cluster.py): every process in the node's network
    namespace killed, found by process id (not by name), another node's left running, and the node's network (its
    address, its shaped links) kept for what starts on it again."""
    with EmulatedCluster([NodeSpec(), NodeSpec(), NodeSpec()]) as cluster:
        env = {**os.environ, **cluster.inside(), "PYTHONPATH": str(ROOT)}
        done = cluster.run_in(0, [sys.executable, "-c", CRASHER], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
    assert sorted(seen["killed"]) == sorted(seen["before"]) and set(seen["mine"]) <= set(seen["killed"])
    assert seen["other"] and seen["holder"] and seen["after"] == []
    assert "10.9.0.2/24" in seen["address"]
