"""Ray across an emulated cluster's nodes, started from a process inside node 0: a Ray head there and a Ray node
(its own raylet and object store) on every other node, joined at the head's address with token authentication,
each node offering a resource of its own (``node_resource(k)``) so that an actor can be placed on it.

Ray's session files (its temporary folder, sockets and logs) and the cluster's token go into the cluster's scratch
folder, a memory file system of the cluster's mount namespace: they go with the namespaces, so no Ray session
directory outlives the cluster, however it ends. Every Ray process is inside the namespaces and ends with them;
none is stopped by name (``ray stop`` would stop every Ray on the machine).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from gcbench.errors import GcbenchError
from gcbench.real.emulation.cluster import Nodes

HEAD_PORT = 6379
TOKEN = "ray_auth_token"  # in the cluster's scratch folder: there while Ray runs across the cluster
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # 0: Ray keeps to 127.0.0.1 and refuses other nodes
START_TIMEOUT = 120.0  # seconds a node may take to start and join
# the head's settings for a node's crash (a run may kill one, docs/run.md "A node's crash"): Ray's defaults
# notice a dead raylet after five missed health checks three seconds apart (14 s measured here), and only then
# restart its actors elsewhere or wait for their node; checked every 0.25 s and dead after two misses, it was 1.5
# s. A task on an actor whose process died fails at once, not after Ray's second waiting for the death's cause
# (1.8 s here with it, 18 ms without).
HEAD_CONFIG = {"health_check_period_ms": 250, "health_check_timeout_ms": 250, "health_check_failure_threshold": 2,
               "timeout_ms_task_wait_for_death_info": 0}  # fmt: skip


def node_resource(node: int) -> str:
    """The Ray resource node ``node`` offers (one unit): an actor asking for a share of it runs there."""
    return f"gcbench_node_{node}"


def ray_command() -> str:
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.is_file() else "ray"


def start_ray_nodes(nodes: Nodes, cpus: int = 1) -> str:
    """Start the head on this process's node (node 0) and a node on each other, ``cpus`` logical CPUs each; set
    this process's environment so that ``ray.init`` on the returned address authenticates."""
    # a local Ray instance's loopback-only switch (gcbench.real.ray.start sets it for one), inherited here, would
    # refuse a second node: these nodes have addresses of their own
    os.environ.pop(LOOPBACK_ONLY, None)
    token = nodes.scratch / TOKEN
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    os.environ.setdefault("RAY_enable_metrics_collection", "0")
    for node in range(len(nodes.addresses)):
        command = start_command(nodes, node, cpus)
        run = subprocess.run if node == 0 else lambda argv, node=node, **kw: nodes.run_in(node, argv, **kw)
        done = run(command, capture_output=True, text=True, timeout=START_TIMEOUT)
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["it said nothing"])[-1]
            raise GcbenchError(f"Ray did not start on emulated node {node} ({nodes.addresses[node]}): {why}")
    return f"{nodes.addresses[0]}:{HEAD_PORT}"


def start_command(nodes: Nodes, node: int, cpus: int = 1) -> list[str]:
    """``ray start`` for ``node``: the head on node 0, a node joining it on every other."""
    head, address = nodes.addresses[0], nodes.addresses[node]
    if node == 0:
        command = [ray_command(), "start", "--head", "--node-ip-address", head, "--port", str(HEAD_PORT),
                   "--include-dashboard", "false", "--system-config", json.dumps(HEAD_CONFIG)]  # fmt: skip
    else:
        command = [ray_command(), "start", "--address", f"{head}:{HEAD_PORT}", "--node-ip-address", address]
    return [*command, "--num-cpus", str(cpus), "--temp-dir", str(nodes.scratch / "ray"), "--disable-usage-stats",
            "--resources", json.dumps({node_resource(node): 1})]  # fmt: skip


def ray_node_restored(nodes: Nodes, node: int, cpus: int = 1) -> str | None:
    """After a crash that no Ray run noticed (a DDP variant's, whose ranks need no Ray) took ``node``'s processes,
    Ray again on the node where Ray runs across the cluster, waited for: the next variant's actors need it. None
    when done or not needed (node 0's Ray is not a worker's; no Ray on the cluster); else why not, in words."""
    if node == 0 or not (nodes.scratch / TOKEN).is_file():
        return None
    start = restart_ray_node(nodes, node, cpus)
    try:
        start.wait(START_TIMEOUT)
    except subprocess.TimeoutExpired:
        start.kill()
        return f"Ray did not start again on emulated node {node} within {START_TIMEOUT:g} s"
    if start.returncode != 0:
        why = (start.stderr.read().strip().splitlines() or ["it said nothing"])[-1]
        return f"Ray did not start again on emulated node {node}: {why}"
    return None


def restart_ray_node(nodes: Nodes, node: int, cpus: int = 1) -> subprocess.Popen:
    """Start Ray again on ``node`` (not the head's) after its processes were killed: a new raylet that joins the
    head, offering the node's resource again, so that its actors are restarted there. Started, not waited for
    (it takes about 2 s): the caller polls it."""
    return nodes.start_in(node, start_command(nodes, node, cpus), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)  # fmt: skip
