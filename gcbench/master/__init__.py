"""The one master: the rules of a run, written once against the cluster protocol (gcbench.cluster)."""

from gcbench.master.asynchronous import AsynchronousMaster
from gcbench.master.choose import master_for
from gcbench.master.learner import Learner
from gcbench.master.outcome import ClusterTimeout, RunStuck, SimulationStuck, decoding_quality
from gcbench.master.synchronous import SynchronousMaster

__all__ = [
    "AsynchronousMaster",
    "ClusterTimeout",
    "Learner",
    "RunStuck",
    "SimulationStuck",
    "SynchronousMaster",
    "decoding_quality",
    "master_for",
]
