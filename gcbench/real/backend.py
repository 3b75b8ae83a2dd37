"""What ``gcbench run`` asks of a backend, declared on the class its registry entry names (gcbench/cluster):
the Ray and torch clusters (through ``WallClockCluster``) and the local backend.

Every decision of a real run that depends on the backend is one of these, so a new backend states its own
answers beside its code and no run code compares backend names. A backend's class is imported when a run
asks it something; nothing here imports torch or ray.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar


class RealBackend:
    """The defaults: a run per (variant, seed) on the one master (or a variant's own run: ``run_class``),
    nothing to start first, workers that share this machine's cores and keep no caches between jobs."""

    name: ClassVar[str]  # set by the registry
    keeps_caches: ClassVar[bool] = False  # its workers keep a pipelined scheme's cached gradients between jobs
    # a job may compute on weights published before the latest (a sequential scheme's repeated task: its job's)
    computes_earlier_weights: ClassVar[bool] = False
    # inside an emulated cluster (gcbench run --emulate) it starts each worker on its node, across the links
    places_on_nodes: ClassVar[bool] = False

    @classmethod
    def runs(cls, scenario, data, out: Path) -> list[Any]:
        """Every (variant, seed) run, seed by seed, each picking up its checkpoint under ``out`` if it has one."""
        from gcbench.real.run.standalone import run_class

        folder = out / "checkpoints"
        return [
            run_class(scenario.variants[index])(
                scenario, index, seed, data, folder / f"variant{index}-seed{seed}.pt", cls.name
            )
            for seed in scenario.seeds
            for index in range(len(scenario.variants))
        ]

    @classmethod
    def planned(cls, scenario) -> int:
        """How many iterations the whole run trains."""
        return scenario.iterations * len(scenario.seeds) * len(scenario.variants)

    @classmethod
    def serve_helper(cls) -> bool:
        """Where this process was launched as one of the run's helpers rather than its driver (a worker rank
        under torchrun): serve until the run is over, then True. Otherwise False at once."""
        return False

    @classmethod
    @contextmanager
    def driving(cls, scenario) -> Iterator[None]:
        """Around the driver's whole run: what the launch must fit, and what to end with it."""
        yield

    @classmethod
    def prepare(cls, runs: list, address: str | None) -> None:
        """Before the first block of training: start what the runs need (``address``: a cluster to join)."""

    @classmethod
    def single_node(cls) -> bool:
        """Whether its workers share this machine's cores with the master (whose decode and step then use
        only the cores they leave free)."""
        return True
