"""The wire a run's messages cross: which links each worker's messages share, at what rates, after what latency.

Without a topology and without ``network.master.ingress``, every worker has a link of its own (or the FIFO
``shared_link``), as ``Network.arrivals`` computes. Otherwise the links are shared fairly
(gcbench/models/fair_share.py): a worker's messages cross its node's uplink, shared with the other workers
of that node, then the master's ingress, shared with every node; without a topology every worker is a node
of its own. Node 0 holds the master: its workers' messages cross no link and arrive after their latency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gcbench.models.fair_share import finish_times
from gcbench.models.network import Network
from gcbench.models.topology import Topology

INF = float("inf")
MASTER_NODE = 0  # the node the master runs on, with a topology


@dataclass(frozen=True)
class Wire:
    """``node``: each worker's node (-1: the master's, no link to cross); ``uplink``: each node's uplink, bytes
    per second (inf: unshaped); ``ingress``: the master's (inf: no limit); ``extra_latency``: each worker's
    latency beyond ``network.latency`` (its node's own latency, where it has one)."""

    node: np.ndarray
    uplink: np.ndarray
    ingress: float
    extra_latency: np.ndarray

    @classmethod
    def of(cls, network: Network, topology: Topology | None, workers: int) -> Wire | None:
        """The fairly shared wire of this network and topology, or None where every worker has a link of its own
        (or the FIFO shared link): ``Network.arrivals``'s model."""
        ingress = network.master.ingress
        if topology is None and ingress is None:
            return None
        default = INF if network.bandwidth is None else network.bandwidth
        if topology is None:
            node = np.arange(workers)
            uplink = np.full(workers, default)
            extra = np.zeros(workers)
        else:
            placed = topology.node_of(workers)
            node = np.where(placed == MASTER_NODE, -1, placed)
            settings = [network.nodes.get(k) for k in range(topology.nodes)]
            uplink = np.array([default if s is None or s.bandwidth is None else s.bandwidth for s in settings])
            latency = np.array([0.0 if s is None or s.latency is None else s.latency - network.latency
                                for s in settings])  # fmt: skip
            extra = latency[placed]
        return cls(node, uplink.astype(float), INF if ingress is None else float(ingress), extra)

    def delays(self, delay: float) -> np.ndarray:
        """Each worker's seconds besides its transfer, given every message's ``delay`` at ``network.latency``."""
        return delay + self.extra_latency

    def arrivals(self, ready: np.ndarray, message_bytes: float, delay: float) -> np.ndarray:
        """Arrival times at the master of messages ready at ``ready`` (rows x workers; inf: never sent), each
        worker's taking ``delay`` (at ``network.latency``: its node's latency is added) before its link; rows
        never share a link."""
        reach = np.asarray(ready, dtype=float) + self.delays(delay)
        return finish_times(reach, message_bytes, self.node, self.uplink, self.ingress)
