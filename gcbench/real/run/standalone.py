"""Run a variant of a scenario for real, alone (the library's entry point): the run class that trains it, and its
blocks of iterations."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from gcbench.real.run.training_run import VariantStopped
from gcbench.real.run.variant_run import VariantRun
from gcbench.scenario.schema import Scenario, Variant
from gcbench.training.data import Dataset

__all__ = ["VariantStopped", "block_end", "run_class", "run_variant"]


def run_class(variant: Variant) -> type:
    """What trains a variant: the one master (VariantRun), or for a policy that runs without one (allreduce)
    the DDP baseline's ranks (DDPRun, torch.distributed processes) on any backend. Decided here only."""
    if not variant.policy.needs_master:
        from gcbench.real.ddp.ddp_run import DDPRun

        return DDPRun
    return VariantRun


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
    run = run_class(variant)(scenario, scenario.variants.index(variant), seed, data, checkpoint, backend)
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
