"""An emulated cluster on one Linux machine, without root: one network namespace per node inside one user
namespace, joined by a bridge, each node's links shaped to its bandwidths (docs/emulation.md).

support.py says whether this machine allows it (one sentence naming the setting where it does not); links.py turns
a node's link settings into the kernel's shaping; cluster.py builds the nodes, starts processes inside them and
tears everything down with the namespace's first process; ray_nodes.py starts Ray across the nodes. Nothing here
knows a scenario or a scheme."""

from gcbench.real.emulation.cluster import EmulatedCluster, Nodes, NodeSpec
from gcbench.real.emulation.links import INTERFACE, LinkRates
from gcbench.real.emulation.support import namespaces_refused, require_namespaces

__all__ = ["INTERFACE", "EmulatedCluster", "LinkRates", "NodeSpec", "Nodes", "namespaces_refused", "require_namespaces"]
