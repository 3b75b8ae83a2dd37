"""The first process of an emulated cluster's namespaces (``python -m gcbench.real.emulation.holder``, started by
``unshare -rn --pid --fork --mount-proc``): it builds the bridge and the nodes, says where they are, and holds them
until its standard input closes. It is the namespaces' init: when it exits, for whatever reason, the kernel ends
every process started inside them, and the namespaces go with their last process.

Protocol: one JSON line in (the nodes' addresses and link rates), one JSON line out (each node's process id, as
seen inside), then it waits for end of input (the driver closing the pipe, or dying).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from gcbench.real.emulation.links import INTERFACE, shaping

BRIDGE = "gcbr"
NODE_NAME = "gcbench-node"  # node k's host name: gcbench-node<k>
PREFIX = 24


def run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` failed: {done.stderr.strip() or done.returncode}")


def in_node(pid: int, command: list[str]) -> list[str]:
    return ["nsenter", "-t", str(pid), "-n", "--", *command]


def start_node() -> int:
    """A process that holds a new network namespace for a node: it sleeps until the namespaces end."""
    holder = subprocess.Popen(["unshare", "-n", "--", "sleep", "infinity"])
    for _ in range(200):  # until it is in its own network namespace (unshare has run)
        try:
            with open(f"/proc/{holder.pid}/comm") as comm:
                if comm.read().strip() == "sleep":
                    return holder.pid
        except FileNotFoundError:
            break
        time.sleep(0.005)
    raise RuntimeError("a node's namespace did not start")


def build(spec: dict) -> list[int]:
    """The scratch folder's memory file system, the bridge, and each node's namespace joined to it by a veth pair,
    shaped both ways; the nodes' pids."""
    run(["mount", "-t", "tmpfs", "-o", "mode=700", "gcbench-emulated", spec["scratch"]])
    name_nodes(spec)
    run(["ip", "link", "set", "lo", "up"])
    run(["ip", "link", "add", BRIDGE, "type", "bridge"])
    run(["ip", "link", "set", BRIDGE, "up"])
    pids = []
    for k, node in enumerate(spec["nodes"]):
        pid = start_node()
        inside, outside = f"gcv{k}", f"gcb{k}"
        run(["ip", "link", "add", inside, "type", "veth", "peer", "name", outside])
        run(["ip", "link", "set", outside, "master", BRIDGE, "up"])
        run(["ip", "link", "set", inside, "netns", str(pid)])
        for command in (["ip", "link", "set", "lo", "up"], ["ip", "link", "set", inside, "name", INTERFACE],
                        ["ip", "addr", "add", f"{node['address']}/{PREFIX}", "dev", INTERFACE],
                        ["ip", "link", "set", INTERFACE, "up"], *shaping(INTERFACE, node.get("up"))):  # fmt: skip
            run(in_node(pid, command))
        for command in shaping(outside, node.get("down")):
            run(command)
        pids.append(pid)
    return pids


def name_nodes(spec: dict) -> None:
    """Give every node a name (``gcbench-node<k>``) in this mount namespace's /etc/hosts (a copy in the scratch
    folder bound over it; the machine's own is untouched): a program that looks an address up (gloo's store,
    logging its peers) then finds one, and says nothing."""
    hosts = os.path.join(spec["scratch"], "hosts")
    try:
        with open("/etc/hosts") as machine:
            kept = machine.read()
    except OSError:
        kept = "127.0.0.1 localhost\n"
    # (each address also as IPv6 maps it: a dual-stack server sees its IPv4 peers so; with no name server to
    # reach from a node, an address /etc/hosts lacks is not "unknown" but a failure to resolve, which c10d logs)
    names = "".join(
        f"{address} {NODE_NAME}{k}\n"
        for k, node in enumerate(spec["nodes"])
        for address in (node["address"], f"::ffff:{node['address']}")
    )
    names += "::ffff:127.0.0.1 localhost\n::1 localhost\n"
    with open(hosts, "w") as written:
        written.write(kept.rstrip("\n") + "\n" + names)
    run(["mount", "--bind", hosts, "/etc/hosts"])


def reap(*_) -> None:
    """As the namespaces' init, collect every orphan that exits (a daemon started inside, once its parent has
    gone), so none stays a zombie."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def main() -> None:
    spec = json.loads(sys.stdin.readline())
    try:
        pids = build(spec)
    except (RuntimeError, OSError) as error:
        print(json.dumps({"error": str(error)}), flush=True)
        raise SystemExit(1) from None
    signal.signal(signal.SIGCHLD, reap)  # (after the build, whose commands it waits for itself)
    print(json.dumps({"pids": pids}), flush=True)
    sys.stdin.read()  # until the driver closes the pipe or dies; then every process inside ends with this one


if __name__ == "__main__":
    main()
