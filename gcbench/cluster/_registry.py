"""The registry of backends: each one's name, where its class lives, and a few words about it.

Entries are lazy: listing the backends (``available_clusters``, ``real_backends``, ``gcbench run --help``)
imports none of them, so neither ray nor torch; ``backend_class`` imports the one asked for, on first use.
A backend of ``gcbench run`` declares on its class what a real run needs to know of it (what to start
first, how its runs are built, whether its workers keep caches: gcbench/real/backend.py), so every
decision that depends on the backend asks its class, and no code compares backend names.

Adding a backend is its folder, one ``register_backend`` line below, and its row of test parameters
(gcbench/testing/cluster_parameters.py) for the cluster conformance suite.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from gcbench.cluster._base import Cluster


TRAINING = ("torch", "torchvision")  # what a backend that trains imports of the [real] extra, Ray aside


@dataclass(frozen=True)
class BackendEntry:
    """``location``: ``module:Class``, imported on first use. ``note``: a few words for ``--help``.
    ``clock``: ``virtual`` (the simulator's own cluster) or ``wall`` (a backend of ``gcbench run``).
    ``protocol``: its class is a ``Cluster`` on the protocol, held to the conformance suite (False: a real
    backend that runs without one, the local backend). ``modules``: what it imports of the [real] extra,
    checked before a run starts (gcbench/real/run/requirements.py)."""

    name: str
    location: str
    note: str = ""
    clock: Literal["virtual", "wall"] = "wall"
    protocol: bool = True
    modules: tuple[str, ...] = TRAINING


_ENTRIES: dict[str, BackendEntry] = {}
_CLASSES: dict[str, type] = {}


def register_backend(name: str, location: str, note: str = "", clock: Literal["virtual", "wall"] = "wall",
                     protocol: bool = True, modules: tuple[str, ...] = TRAINING) -> BackendEntry:  # fmt: skip
    """Make a backend available by name, without importing it."""
    _ENTRIES[name] = BackendEntry(name, location, note, clock, protocol, modules)
    _CLASSES.pop(name, None)
    return _ENTRIES[name]


register_backend("simpy", "gcbench.sim.cluster:SimPyCluster", "the simulator's workers", clock="virtual", modules=())
register_backend("ray", "gcbench.real.ray.cluster:RayCluster", modules=(*TRAINING, "ray"))
register_backend("torch", "gcbench.real.torch.cluster:TorchCluster", "worker processes here")
register_backend("local", "gcbench.real.local.backend:LocalBackend", "one process", protocol=False)


def backend_entry(name: str) -> BackendEntry:
    if name not in _ENTRIES:
        raise KeyError(f"unknown backend '{name}'; registered: {', '.join(sorted(_ENTRIES))}")
    return _ENTRIES[name]


def backend_class(name: str) -> type:
    """The class registered as ``name``, imported now if it was not yet; its ``name`` is set to it."""
    if name not in _CLASSES:
        module, attribute = backend_entry(name).location.split(":")
        found = getattr(importlib.import_module(module), attribute)
        found.name = name
        _CLASSES[name] = found
    return _CLASSES[name]


def cluster_class(name: str) -> type[Cluster]:
    """The ``Cluster`` registered as ``name`` (a backend on the protocol)."""
    if not backend_entry(name).protocol:
        raise KeyError(
            f"backend '{name}' runs without the cluster protocol; clusters: {', '.join(available_clusters())}"
        )
    return backend_class(name)


def available_clusters() -> list[str]:
    """The backends on the cluster protocol, by name (what the conformance suite runs)."""
    return sorted(name for name, entry in _ENTRIES.items() if entry.protocol)


def real_backends() -> list[BackendEntry]:
    """The backends of ``gcbench run`` (wall clock), in the order registered."""
    return [entry for entry in _ENTRIES.values() if entry.clock == "wall"]
