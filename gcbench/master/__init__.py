"""The one master: the rules of a run, written once against the cluster protocol (gcbench.cluster)."""

from gcbench.master.asynchronous import AsynchronousMaster
from gcbench.master.outcome import SimulationStuck, decoding_quality
from gcbench.master.synchronous import SynchronousMaster

__all__ = ["AsynchronousMaster", "SimulationStuck", "SynchronousMaster", "decoding_quality"]
