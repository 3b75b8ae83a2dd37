"""`gcbench run --emulate`: the same run, on an emulated cluster of this machine (docs/emulation.md).

This process builds the cluster from the scenario (its topology's nodes, each node's uplink and downlink shaped
to its ``bandwidth`` and ``downlink``, the network's or the node's own, and node 0's, the master's, to
``network.master``'s ``ingress`` and ``egress``: the links the simulator models, gcbench/models/wire.py) and runs
the command again inside node 0, where the run's driver and the master
live; that run finds the nodes in its environment (gcbench.real.emulation.Nodes) and its backend spreads the workers
over them (the Ray backend: a Ray node a node, each actor on its worker's node). A Ctrl-C or a SIGTERM is passed
on to the run inside, which stops as a run on its own does (its checkpoints kept, exit 130 or 143); when it has
ended, whatever way, the cluster goes, and everything started in it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from gcbench.cluster import backend_class, real_backends
from gcbench.errors import GcbenchError
from gcbench.real.emulation import EmulatedCluster, LinkRates, Nodes, NodeSpec, require_namespaces
from gcbench.scenario.schema import Scenario


def inside_emulation() -> Nodes | None:
    """The emulated cluster this process runs in (node 0's driver), or None."""
    return Nodes.from_environment()


def worker_nodes(scenario: Scenario) -> list[int] | dict[str, list[int]]:
    """Each worker's node, as the topology places it (run.json records it; the backends place the workers by
    gcbench/real/wallclock/placement.py, from the same topology); with ``by_code``, each variant's, by label."""
    from gcbench.scenario.build import placed, scheme_for

    if scenario.topology.placement == "by_code":
        return {variant.display_label(): worker_nodes(placed(scenario, scheme_for(scenario, variant)))
                for variant in scenario.variants}  # fmt: skip
    return [int(node) for node in scenario.topology.node_of(scenario.workers)]


def node_specs(scenario: Scenario) -> list[NodeSpec]:
    """The topology's nodes and their links (null: unshaped): node 0, the master's, sends at the master's egress
    and receives at its ingress; every other node sends at its bandwidth and receives at its downlink (the
    node's own, or the network's)."""
    network = scenario.network
    specs = [NodeSpec(LinkRates(up=network.master.egress, down=network.master.ingress))]
    for k in range(1, scenario.topology.nodes):
        own = network.nodes.get(k)
        up = network.bandwidth if own is None or own.bandwidth is None else own.bandwidth
        down = network.downlink if own is None or own.downlink is None else own.downlink
        specs.append(NodeSpec(LinkRates(up=up, down=down)))
    return specs


def check_emulated(scenario: Scenario, backend: str) -> None:
    """What --emulate needs, refused in one sentence before anything starts."""
    if scenario.topology is None:
        raise GcbenchError("--emulate builds the scenario's topology; give it one (topology: {nodes: 2}, for example).")
    if not backend_class(backend).places_on_nodes:
        placing = [entry.name for entry in real_backends() if backend_class(entry.name).places_on_nodes]
        raise GcbenchError(f"--emulate runs on a backend that starts each worker on its node ({', '.join(placing)}), "
                           f"not {backend}.")  # fmt: skip
    latency = scenario.network.latency > 0 or any(node.latency for node in scenario.network.nodes.values())
    allreduce = [v.display_label() for v in scenario.variants if v.policy.real_only]
    if latency and allreduce:
        raise GcbenchError(
            f"--emulate adds network latency as the master takes each message (this kernel has no netem to add it "
            f"to a link), and variant '{allreduce[0]}' is DDP's all-reduce, which no master sees; set every "
            "latency to 0, or drop the variant."
        )
    require_namespaces()


def run_emulated(scenario: Scenario, argv: list[str]) -> int:
    """Run ``gcbench`` with ``argv`` inside node 0 of the scenario's emulated cluster; its exit status."""
    return run_inside(node_specs(scenario), argv)


def run_inside(specs: list[NodeSpec], argv: list[str]) -> int:
    """Run ``gcbench`` with ``argv`` inside node 0 of an emulated cluster of these nodes; its exit status."""
    with EmulatedCluster(specs) as cluster:
        command = [sys.executable, "-m", "gcbench", *argv]
        # (in a session of its own: a Ctrl-C in the terminal reaches this process, which passes it on to the run
        # inside, and not nsenter, which would die of it and leave the run to end with the cluster, unsaved)
        inner = cluster.start_in(0, command, env={**os.environ, **cluster.inside()}, start_new_session=True,
                                 preexec_fn=_interruptible)  # fmt: skip
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        for sig in previous:
            signal.signal(sig, lambda received, _: _pass_on(inner, received))
        try:
            return inner.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _interruptible() -> None:
    """(In the child, before nsenter runs.) A SIGINT passed on must interrupt the run inside, even where this
    process was started with SIGINT ignored (a shell's background job is), which its children would inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _pass_on(nsenter: subprocess.Popen, sig: int) -> None:
    """Send ``sig`` to the run inside (nsenter's child: nsenter itself only waits for it)."""
    from gcbench.real.emulation.cluster import descendants

    for pid in descendants(nsenter.pid)[:1]:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
