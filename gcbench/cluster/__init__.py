"""The cluster protocol the one master runs against; backends register by name (``simpy`` lives in gcbench.sim)."""

from gcbench.cluster._base import (
    Cluster,
    Event,
    Failure,
    Job,
    Restart,
    Result,
    available_clusters,
    cluster_class,
    message_fractions,
    register_cluster,
)

__all__ = [
    "Cluster",
    "Event",
    "Failure",
    "Job",
    "Restart",
    "Result",
    "available_clusters",
    "cluster_class",
    "message_fractions",
    "register_cluster",
]
