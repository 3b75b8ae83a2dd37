"""Where a run's workers are on the emulated cluster it runs in (``gcbench run --emulate``): the nodes, and each
worker's node as the scenario's topology places it; the one answer the Ray and torch backends, the DDP baseline
and the wall-clock cluster's latency share."""

from __future__ import annotations

import logging
import os

from gcbench.real.emulation import INTERFACE, Nodes


def emulated_placement(scenario) -> tuple[Nodes, list[int]] | None:
    """The emulated cluster this process runs in and each worker's node on it; None outside one (or without a
    topology, which a run on one always has)."""
    nodes = Nodes.from_environment()
    if nodes is None or scenario.topology is None:
        return None
    return nodes, [int(node) for node in scenario.topology.node_of(scenario.workers)]


def use_node_interface() -> None:
    """gloo groups this process builds from now on send from its node's address: told no interface, gloo
    advertises the loopback, which another node cannot reach."""
    os.environ["GLOO_SOCKET_IFNAME"] = INTERFACE


def say_node_crashed(node: int, iteration: int, processes: int, members: str, why: str, fate: str = "") -> None:
    """The one line a node's crash gets as it is done, before Ray's or torch's own words on its processes:
    ``members``: who went with it ("workers 1, 4", "ranks 2, 3"); ``why``: what crashed it; ``fate``: when it is
    back, if said."""
    fate = f", {fate}" if fate else ""
    logging.getLogger("gcbench").warning(
        f"gcbench: node {node} crashed at iteration {iteration} ({why}): its {processes} processes killed, {members} "
        f"with them{fate}; what Ray or torch say of its processes is expected"
    )
