"""Run a scenario for real: every variant and seed on Ray (or the local backend); results in the shared schema."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from gcbench.errors import GcbenchError
from gcbench.real.data import DEFAULT_CACHE, Dataset, cifar10, synthetic
from gcbench.real.local import train_local
from gcbench.real.models import resolve_device
from gcbench.real.variant import VariantRun, VariantStopped, evaluate_master
from gcbench.scenario.schema import Scenario, Variant

__all__ = ["VariantStopped", "evaluate_master", "load_data", "run_local", "run_variant", "start_ray"]


def load_data(scenario: Scenario) -> Dataset:
    training = scenario.training
    if training.dataset == "synthetic":
        return synthetic()
    cache = Path(training.cache_dir) if training.cache_dir else DEFAULT_CACHE
    return cifar10(Path(training.data_dir) if training.data_dir else None, cache)


def start_ray(address: str | None) -> None:
    """Join the cluster at ``address``, or start a local instance on this machine (no dashboard).

    Token authentication stays on: Ray 2.60 turns it on for a new local instance,
    but a client given an explicit address only uses it when ``RAY_AUTH_MODE``
    says so, so gcbench sets ``RAY_AUTH_MODE=token`` unless the user set it.
    The token is the cluster's (``~/.ray/auth_token`` by default). Ray reads the
    mode when it is imported, so it is set before the import.
    """
    if address:
        os.environ.setdefault("RAY_AUTH_MODE", "token")
    import ray

    if ray.is_initialized():
        return
    try:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(include_dashboard=False, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as error:
        hint = (
            "; check the address, and that ~/.ray/auth_token holds the cluster's token (ray get-auth-token)"
            if address
            else ""
        )
        raise GcbenchError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {error}{hint}.") from None


def run_variant(
    scenario: Scenario,
    variant: Variant,
    data: Dataset,
    seed: int,
    progress: Callable[[int], None] | None = None,
    checkpoint: Path | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train one variant for the scenario's iterations, alone; its iterations and workers tables.

    With ``checkpoint``, the run saves every ``training.checkpoint_every`` iterations
    and, if a checkpoint exists, continues from it (times continue from where it stopped).
    """
    run = VariantRun(scenario, scenario.variants.index(variant), seed, data, checkpoint)
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
