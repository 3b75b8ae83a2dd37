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
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # 0: Ray keeps to 127.0.0.1 and refuses other nodes
START_TIMEOUT = 120.0  # seconds a node may take to start and join


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
    token = nodes.scratch / "ray_auth_token"
    token.write_text(secrets.token_hex(32))
    token.chmod(0o600)
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    os.environ.setdefault("RAY_enable_metrics_collection", "0")
    head = nodes.addresses[0]
    common = ["--num-cpus", str(cpus), "--temp-dir", str(nodes.scratch / "ray"), "--disable-usage-stats"]
    starts = [(0, [ray_command(), "start", "--head", "--node-ip-address", head, "--port", str(HEAD_PORT),
                   "--include-dashboard", "false"])]  # fmt: skip
    starts += [(k, [ray_command(), "start", "--address", f"{head}:{HEAD_PORT}", "--node-ip-address", address])
               for k, address in enumerate(nodes.addresses) if k > 0]  # fmt: skip
    for node, command in starts:
        command = [*command, *common, "--resources", json.dumps({node_resource(node): 1})]
        run = subprocess.run if node == 0 else lambda argv, node=node, **kw: nodes.run_in(node, argv, **kw)
        done = run(command, capture_output=True, text=True, timeout=START_TIMEOUT)
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["it said nothing"])[-1]
            raise GcbenchError(f"Ray did not start on emulated node {node} ({nodes.addresses[node]}): {why}")
    return f"{head}:{HEAD_PORT}"
