"""An emulated cluster on one Linux machine, without root: one network namespace per node inside one user
namespace, joined by a bridge, each node's links shaped to its bandwidths (docs/emulation.md).

support.py says whether this machine allows it (one sentence naming the setting where it does not); links.py turns
a node's link settings into the kernel's shaping; cluster.py builds the nodes, starts processes inside them and
tears everything down with the namespace's first process. Nothing here knows a scenario, a scheme or a backend."""

from gcbench.emulation.cluster import EmulatedCluster, NodeSpec
from gcbench.emulation.links import LinkRates
from gcbench.emulation.support import namespaces_refused, require_namespaces

__all__ = ["EmulatedCluster", "LinkRates", "NodeSpec", "namespaces_refused", "require_namespaces"]
