"""Where the workers run: K nodes, and which workers each node holds (a scenario's ``topology``).

The master runs on node 0, beside the workers the placement puts there, as a driver runs on one machine of a
cluster: a worker on node 0 reaches the master without crossing a link. ``spread`` deals the workers out in turn
(worker w on node w mod K), ``pack`` fills each node before the next (n / K workers a node, the first n mod K nodes
one more), ``by_code`` places each variant's workers where its code survives the most whole-node losses (with
spread's count a node), and an explicit map names each node's workers. Without a topology every worker is a node
of its own, as before topologies existed.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from gcbench.models._config import Config

MAX_NODES = 250  # an emulated cluster's addresses: 10.9.0.1 to 10.9.0.250


class Topology(Config):
    """K nodes and the workers' placement on them."""

    nodes: Annotated[int, Field(ge=1, le=MAX_NODES)]
    # by_code: each variant's workers where its code survives the most node losses (gcbench/coding/node_loss.py),
    # resolved per variant (gcbench/scenario/build.py: ``placed``) into an explicit map
    placement: (
        Literal["spread", "pack", "by_code"] | dict[Annotated[int, Field(ge=0)], list[Annotated[int, Field(ge=0)]]]
    ) = "spread"

    def node_of(self, workers: int) -> np.ndarray:
        """Each worker's node (index: the worker)."""
        if self.placement == "by_code":
            raise ValueError("topology.placement: by_code depends on the variant's scheme: resolve it per variant "
                             "(gcbench.scenario.build.placed) before asking where a worker is")  # fmt: skip
        if self.placement == "spread":
            return np.arange(workers) % self.nodes
        if self.placement == "pack":  # (the first workers mod K nodes take one worker more)
            sizes = [len(part) for part in np.array_split(np.arange(workers), self.nodes)]
            return np.repeat(np.arange(self.nodes), sizes)
        node = np.empty(workers, dtype=int)
        for k, held in self.placement.items():
            node[held] = k
        return node

    def problems(self, workers: int) -> list[str]:
        """What keeps this placement from holding ``workers`` workers, as the scenario's sentences."""
        if isinstance(self.placement, str):
            if self.nodes > workers:
                return [f"topology.nodes: {self.nodes} nodes for {workers} workers would leave a node without one; "
                        "give an explicit placement to have empty nodes"]  # fmt: skip
            return []
        problems = []
        outside = sorted(k for k in self.placement if k >= self.nodes)
        if outside:
            problems.append(f"topology.placement: names node {outside[0]}, and the nodes are 0 to {self.nodes - 1}")
        placed = [w for held in self.placement.values() for w in held]
        twice = sorted({w for w in placed if placed.count(w) > 1})
        if twice:
            problems.append(f"topology.placement: puts worker {twice[0]} on more than one node")
        beyond = sorted(w for w in placed if w >= workers)
        if beyond:
            problems.append(f"topology.placement: names worker {beyond[0]}, and the workers are 0 to {workers - 1}")
        missing = sorted(set(range(workers)) - set(placed))
        if missing:
            problems.append(f"topology.placement: puts worker {missing[0]} on no node; every worker needs one")
        return problems
