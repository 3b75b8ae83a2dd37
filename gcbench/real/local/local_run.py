"""One seed of the local backend, run as the session runs every (variant, seed): one block, the whole run."""

from __future__ import annotations

import pandas as pd

from gcbench.real.local.train import train_local
from gcbench.real.run.training_run import OnIteration, TrainingRun
from gcbench.scenario.schema import Scenario
from gcbench.training.data import Dataset
from gcbench.training.device import resolve_device


class LocalRun(TrainingRun):
    """One seed of the local backend (one process, no checkpoints): the whole run is one block."""

    index, checkpoint, label = None, None, "local"
    keeps_checkpoints = False  # one block, nothing saved: an interrupted local run is run again from iteration 0
    needs_cluster = False  # it trains in this process

    def __init__(self, scenario: Scenario, seed: int, data) -> None:
        self.scenario, self.seed, self.data = scenario, seed, data
        self.resumed_at = self.next_iteration = self.checkpointed = 0
        self.stopped, self.frame = None, None

    @property
    def finished(self) -> bool:
        return self.frame is not None

    def run_block(self, last: int, on_iteration: OnIteration | None = None) -> None:
        self.frame, _ = run_local(self.scenario, self.data, self.seed, on_iteration)
        self.next_iteration = self.scenario.iterations

    def frames(self) -> tuple[pd.DataFrame | None, None]:
        return self.frame, None

    def close(self, interrupted: bool = False) -> None:
        pass

    def describe(self) -> str:
        return f"local, seed {self.seed}"


def run_local(scenario: Scenario, data: Dataset, seed: int, progress=None) -> tuple[pd.DataFrame, None]:
    """The single-process baseline on the same mini-batches (k = workers partitions).

    ``progress(done, loss, accuracy)`` is called after each iteration.
    """
    device = resolve_device(scenario.training.device)
    frame = train_local(data, scenario.training, scenario.workers, scenario.iterations, seed, device, progress)
    return frame, None
