"""The wire a run's messages cross: which links each worker's messages share, at what rates, after what latency.

Without a topology and without ``network.master.ingress``, every worker has a link of its own (or the FIFO
``shared_link``), as ``Network.arrivals`` computes. Otherwise the links are shared fairly
(gcbench/models/fair_share.py): a worker's messages cross its node's uplink, shared with the other workers
of that node, then the master's ingress, shared with every node; without a topology every worker is a node
of its own. Node 0 holds the master: its workers' messages cross no link and arrive after their latency.

The weights go the other way (``broadcasts``, where ``master.egress`` or a downlink is finite): a copy for each
job, out of the master's egress, shared by every copy in flight, and into the worker's node's downlink, shared
by the copies its workers receive; a job begins once its copy is in. A copy a job, as the torch backend sends
them (Ray's object store sends one a node, which the model overcounts where a node holds several workers).
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
    latency beyond ``network.latency`` (its node's own latency, where it has one); ``downlink`` and ``egress``:
    the same the other way, for the weights; ``unfairness``: how unequally flows share a link (``rates``);
    ``burst``: what each node's links send at once after idling (``finish_times``)."""

    node: np.ndarray
    uplink: np.ndarray
    ingress: float
    extra_latency: np.ndarray
    downlink: np.ndarray
    egress: float
    unfairness: float = 0.0
    burst: np.ndarray | None = None  # each node's link's token-bucket depth, bytes (None: no node has one)

    @classmethod
    def of(cls, network: Network, topology: Topology | None, workers: int) -> Wire | None:
        """The fairly shared wire of this network and topology, or None where every worker has a link of its own
        (or the FIFO shared link): ``Network.arrivals``'s model."""
        ingress, egress = network.master.ingress, network.master.egress
        if topology is None and ingress is None and egress is None and network.downlink is None:
            return None
        if topology is None:
            node, settings = np.arange(workers), [None] * workers
            extra = np.zeros(workers)
        else:
            placed = topology.node_of(workers)
            node = np.where(placed == MASTER_NODE, -1, placed)
            settings = [network.nodes.get(k) for k in range(topology.nodes)]
            latency = np.array([0.0 if s is None or s.latency is None else s.latency - network.latency
                                for s in settings])  # fmt: skip
            extra = latency[placed]
        uplink = _rates(settings, "bandwidth", network.bandwidth)
        downlink = _rates(settings, "downlink", network.downlink)
        own = [None if s is None else s.burst for s in settings]
        burst = np.array([network.burst if b is None else b for b in own], dtype=float)
        return cls(node, uplink, _rate(ingress), extra, downlink, _rate(egress), network.unfairness,
                   burst if burst.any() else None)  # fmt: skip

    @property
    def broadcasts(self) -> bool:
        """Whether the weights take time to reach the workers: a finite egress, or a finite downlink of a node
        that holds a worker off the master's node."""
        nodes = np.unique(self.node[self.node >= 0])
        return self.egress < INF or bool(np.isfinite(self.downlink[nodes]).any())

    def weights_arrivals(self, sent: np.ndarray, weights_bytes: float) -> np.ndarray:
        """When each worker's copy of the weights, sent at ``sent`` (rows x workers; inf: none sent), is in."""
        return finish_times(sent, weights_bytes, self.node, self.downlink, self.egress, self.unfairness, self.burst)

    def delays(self, delay: float) -> np.ndarray:
        """Each worker's seconds besides its transfer, given every message's ``delay`` at ``network.latency``."""
        return delay + self.extra_latency

    def arrivals(self, ready: np.ndarray, message_bytes: float, delay: float) -> np.ndarray:
        """Arrival times at the master of messages ready at ``ready`` (rows x workers; inf: never sent), each
        worker's taking ``delay`` (at ``network.latency``: its node's latency is added) before its link; rows
        never share a link."""
        reach = np.asarray(ready, dtype=float) + self.delays(delay)
        return finish_times(reach, message_bytes, self.node, self.uplink, self.ingress, self.unfairness, self.burst)


def _rate(rate: float | None) -> float:
    return INF if rate is None else float(rate)


def _rates(settings: list, field: str, default: float | None) -> np.ndarray:
    """Each node's rate of ``field``: its own setting, else the network's (inf: unshaped)."""
    own = [None if s is None else getattr(s, field) for s in settings]
    return np.array([_rate(default if rate is None else rate) for rate in own])
