"""What a session asks of one run of a (variant, seed): the interface VariantRun (the one master on a cluster),
DDPRun (the DDP baseline's ranks) and LocalRun (the single-process baseline) each declare by subclassing it. A
backend's registry entry makes its runs (``RealBackend.runs``), so which class trains what is decided there."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import pandas as pd

from gcbench.errors import GcbenchError


class VariantStopped(GcbenchError):
    """A variant could not go on (e.g. its cluster is stuck); carries the tables of the iterations it finished."""

    def __init__(self, message: str, iterations: pd.DataFrame, workers: pd.DataFrame) -> None:
        super().__init__(message)
        self.iterations, self.workers = iterations, workers


OnIteration = Callable[[int, float, float], None]  # (iterations done, the latest loss, the latest test accuracy)


class TrainingRun(ABC):
    """One (variant, seed) of a real run, trained a block of iterations at a time (blocks end at checkpoints, so the
    variants of a session take turns)."""

    keeps_checkpoints: ClassVar[bool] = True  # it saves a checkpoint at each block's end, and resumes from it
    needs_cluster: ClassVar[bool] = True  # it trains on the backend's cluster (Ray started first, where that is)

    scenario: Any
    seed: int
    label: str  # the variant's label ("local" for the single-process baseline)
    index: int | None  # the variant's index in the scenario (None: the run trains no variant of it)
    resumed_at: int  # the iteration it continued from (0: a new run)
    next_iteration: int  # the first iteration it has not trained
    checkpointed: int  # the iteration its newest checkpoint continues from (0: none yet)
    stopped: str | None  # why it stopped early, where it did

    @property
    @abstractmethod
    def finished(self) -> bool:
        """Trained every iteration, or stopped early."""

    @abstractmethod
    def run_block(self, last: int, on_iteration: OnIteration | None = None) -> None:
        """Train up to iteration ``last`` (exclusive), saying each iteration to ``on_iteration``."""

    @abstractmethod
    def frames(self) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
        """Its iterations and workers tables so far (None where it has none)."""

    @abstractmethod
    def close(self, interrupted: bool = False) -> None:
        """Stop what it started (its workers, its ranks); ``interrupted``: the run is being cut short."""

    def describe(self) -> str:
        """'variant 2 (CR s=1), seed 0', as a resume and an interruption name it."""
        return f"variant {self.index} ({self.label}), seed {self.seed}"

    def continues(self) -> str:
        """What a resume does with it: 'from iteration 100', 'complete (300 iterations), not run again'."""
        if not self.keeps_checkpoints:
            return "from iteration 0 (it keeps no checkpoints)"
        if self.finished:
            return f"complete ({self.next_iteration} iterations), not run again"
        return f"from iteration {self.resumed_at}" + ("" if self.resumed_at else " (it had no checkpoint)")
