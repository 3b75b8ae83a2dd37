"""The cluster protocol the one master runs against, and the registry of backends by name (lazy: listing them
imports none)."""

from gcbench.cluster._base import (
    Cluster,
    Event,
    Failure,
    Job,
    Restart,
    Result,
    message_fractions,
)
from gcbench.cluster._registry import (
    BackendEntry,
    available_clusters,
    backend_class,
    backend_entry,
    cluster_class,
    real_backends,
    register_backend,
)

__all__ = [
    "BackendEntry",
    "Cluster",
    "Event",
    "Failure",
    "Job",
    "Restart",
    "Result",
    "available_clusters",
    "backend_class",
    "backend_entry",
    "cluster_class",
    "message_fractions",
    "real_backends",
    "register_backend",
]
