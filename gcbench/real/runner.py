"""Run a scenario for real: every variant and seed on Ray (or the local backend); results in the shared schema."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from gcbench.real.local.train import train_local
from gcbench.real.ray.start import DEATH_INFO_WAIT, LOOPBACK_ONLY, METRICS, local_ray_options, start_ray
from gcbench.real.variant import VariantRun, VariantStopped
from gcbench.scenario.schema import Scenario, Variant
from gcbench.training.data import Dataset
from gcbench.training.device import resolve_device

__all__ = [
    "DEATH_INFO_WAIT",
    "LOOPBACK_ONLY",
    "METRICS",
    "VariantStopped",
    "local_ray_options",
    "run_local",
    "run_variant",
    "start_ray",
]


def run_variant(
    scenario: Scenario,
    variant: Variant,
    data: Dataset,
    seed: int,
    progress: Callable[[int], None] | None = None,
    checkpoint: Path | None = None,
    backend: str = "ray",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train one variant for the scenario's iterations, alone, on ``backend`` (ray or torch); its iterations
    and workers tables.

    With ``checkpoint``, the run saves every ``training.checkpoint_every`` iterations
    and, if a checkpoint exists, continues from it (times continue from where it stopped). An allreduce
    variant trains the DDP baseline (its ranks, no master), as ``gcbench run`` does.
    """
    from gcbench.real.ddp.run import DDPRun

    kind = DDPRun if variant.policy.name == "allreduce" else VariantRun
    run = kind(scenario, scenario.variants.index(variant), seed, data, checkpoint, backend)
    on_iteration = (lambda done, loss, accuracy: progress(done)) if progress else None
    try:
        while not run.finished:
            run.run_block(block_end(run.next_iteration, scenario), on_iteration)
    finally:
        run.close()
    return run.frames()


def block_end(first: int, scenario: Scenario) -> int:
    """Where the block of iterations that starts at ``first`` ends: the next checkpoint, or the last iteration."""
    every = scenario.training.checkpoint_every
    return min((first // every + 1) * every, scenario.iterations)


def run_local(scenario: Scenario, data: Dataset, seed: int, progress=None) -> tuple[pd.DataFrame, None]:
    """The single-process baseline on the same mini-batches (k = workers partitions).

    ``progress(done, loss, accuracy)`` is called after each iteration.
    """
    device = resolve_device(scenario.training.device)
    frame = train_local(data, scenario.training, scenario.workers, scenario.iterations, seed, device, progress)
    return frame, None
