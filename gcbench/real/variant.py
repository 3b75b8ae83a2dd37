"""One (variant, seed) of a real run, trained one block of iterations at a time.

Between its blocks the run's workers stay up but idle while the other
variants take their turns; its clock stops meanwhile, so its times are as if it
had run alone. Every block ends with the late timings of its abandoned work
collected and a checkpoint saved, so a block boundary is exactly the state a
``--resume`` continues from.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gcbench.errors import GcbenchError
from gcbench.real.checkpoint import load_checkpoint, save_checkpoint
from gcbench.real.master import Step
from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario
from gcbench.training.data import Dataset
from gcbench.training.device import resolve_device
from gcbench.training.evaluation import evaluate_master

# (iterations done, loss, test accuracy or NaN) after each iteration
OnIteration = Callable[[int, float, float], None]


class VariantStopped(GcbenchError):
    """A variant could not go on (e.g. its cluster is stuck); carries the tables of the iterations it finished."""

    def __init__(self, message: str, iterations: pd.DataFrame, workers: pd.DataFrame) -> None:
        super().__init__(message)
        self.iterations, self.workers = iterations, workers


def master_for(scenario: Scenario, variant, scheme, data: Dataset, seed: int):
    """The master of a variant: the synchronous one, or the asynchronous one for k-async policies."""
    from gcbench.real.asynchronous import AsyncRayMaster
    from gcbench.real.master import RayMaster

    master_class = RayMaster if variant.policy.synchronous else AsyncRayMaster
    return master_class(scenario, variant, scheme, data, seed, str(resolve_device(scenario.training.device)))


class VariantRun:
    """Variant ``index`` of the scenario with one seed: its rows, its checkpoint, and its master once started."""

    def __init__(self, scenario: Scenario, index: int, seed: int, data: Dataset, checkpoint: Path | None) -> None:
        self.scenario, self.index, self.seed, self.data = scenario, index, seed, data
        self.variant = scenario.variants[index]
        self.scheme = scheme_for(scenario, self.variant)
        self.checkpoint = checkpoint
        self.state = load_checkpoint(checkpoint, scenario, self.variant, data) if checkpoint else None
        self.rows, self.workers = (self.state["rows"], self.state["workers"]) if self.state else ([], [])
        self.resumed_at = self.next_iteration = self.state["next_iteration"] if self.state else 0
        self.checkpointed = self.resumed_at  # the iteration the newest checkpoint continues from
        self.stopped: str | None = None
        self.master = self.table = self.rng = None
        self.paused_at: float | None = None

    @property
    def label(self) -> str:
        return self.variant.display_label()

    @property
    def finished(self) -> bool:
        return self.stopped is not None or self.next_iteration >= self.scenario.iterations

    def run_block(self, last: int, on_iteration: OnIteration | None = None) -> None:
        """Iterations ``next_iteration`` to ``last`` (exclusive); then the late timings and a checkpoint."""
        master = self.master or self._start()
        self._resume_clock()
        torch.set_rng_state(self.rng)
        try:
            with torch_threads(master_threads(self.scheme.n)):
                for step in master.steps(self.next_iteration, last):
                    self._record(step, on_iteration)
            self.paused_at = time.time()  # its clock stops here: waiting for abandoned work is no iteration's
            self.table.add_late(master.finish())
        except GcbenchError as error:
            self.stopped = str(error)
            self.close()
            raise VariantStopped(str(error), *self.frames()) from None
        self.rng = torch.get_rng_state()
        if self.checkpoint:
            save_checkpoint(self.checkpoint, master.model, master.optimizer, self.next_iteration, self.rows,
                            self.workers, self.rng)  # fmt: skip
            self.checkpointed = self.next_iteration
        if self.finished:
            self.close()

    def _start(self):
        self.master = master = master_for(self.scenario, self.variant, self.scheme, self.data, self.seed)
        self.rng = torch.get_rng_state()
        if self.state is not None:
            master.model.load_state_dict(self.state["model"])
            master.optimizer.load_state_dict(self.state["optimizer"])
            self.rng = self.state["torch_rng"]
            master.origin -= self.rows[-1]["end"] if self.rows else 0.0  # the clock continues from the checkpoint
            self.state = None  # its rows live on in self.rows
        self.table = WorkerTable(self.workers, self.scheme, master.origin)
        return master

    def _resume_clock(self) -> None:
        """Shift the clock by the time other variants ran, so this one's times exclude it."""
        if self.paused_at is not None:
            paused = time.time() - self.paused_at
            self.master.origin += paused
            self.table.origin += paused

    def _record(self, step: Step, on_iteration: OnIteration | None) -> None:
        t, training, iterations = self.next_iteration, self.scenario.training, self.scenario.iterations
        accuracy = np.nan
        if (t + 1) % training.eval_every == 0 or t == iterations - 1:
            with torch_threads(EVALUATION_THREADS):
                accuracy = evaluate_master(self.master.model, self.data, training.batch_size)
        self.rows.append(_iteration_row(t, step, self.master.origin, accuracy))
        self.table.add(t, step)
        self.next_iteration = t + 1
        if on_iteration:
            on_iteration(t + 1, step.loss, accuracy)

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The iterations and workers tables of what this run has done so far."""
        keys = {"variant": self.label, "scheme": self.variant.scheme, "s": self.variant.s, "m": self.scheme.m}
        keys.update(policy=self.variant.policy.name, point=0, seed=self.seed)
        iterations = pd.DataFrame(self.rows).assign(**keys)
        return iterations, pd.DataFrame(self.workers).assign(variant=keys["variant"], point=0, seed=self.seed)

    def close(self) -> None:
        if self.master is not None:
            self.master.shutdown()
            self.master = None


EVALUATION_THREADS = torch.get_num_threads()  # the evaluation uses every core; the master's step fewer


def master_threads(workers: int) -> int:
    """Torch threads for the master's decode and step: the cores its local workers leave free.

    On a single-node cluster the workers share this machine's cores; spare
    OpenMP threads in the master would only spin against them.
    """
    import ray

    if len([node for node in ray.nodes() if node.get("Alive")]) > 1:
        return torch.get_num_threads()
    return max(1, (os.cpu_count() or 1) - workers)


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _iteration_row(t: int, step: Step, origin: float, accuracy: float) -> dict:
    return {
        "iteration": t, "start": step.start - origin, "end": step.end - origin, "duration": step.end - step.start,
        "messages_used": step.messages_used, "stop": step.reason, "exact": step.exact,
        "residual": step.residual, "staleness": step.staleness, "loss": step.loss, "accuracy": accuracy,
    }  # fmt: skip


class WorkerTable:
    """The workers table's rows (one per iteration and worker), kept in ``rows`` as they are built.

    Work the master stopped waiting for reports its timings later (``Step.late``);
    those fill in the rows of the iteration it belonged to.
    """

    def __init__(self, rows: list[dict], scheme, origin: float) -> None:
        self.rows, self.scheme, self.origin = rows, scheme, origin
        self.index = {(row["iteration"], row["worker"]): row for row in rows}

    def add(self, t: int, step: Step) -> None:
        for w in range(self.scheme.n):
            timing = step.timings.get(w)
            row = {"iteration": t, "worker": w, "partitions": len(self.scheme.partitions(w))}
            row.update(used=timing is not None, straggling=step.straggling.get(w, False), failed=w in step.failed)
            row.update(compute_start=np.nan, compute_end=np.nan, injected_delay=np.nan, arrival=np.nan)
            if timing is not None:
                row.update(
                    compute_start=timing["compute_start"] - self.origin,
                    compute_end=timing["ready"] - self.origin,
                    injected_delay=timing["injected"],
                    arrival=step.start - self.origin + step.arrivals[w],
                )
            self.rows.append(row)
            self.index[(t, w)] = row
        self.add_late(step.late)

    def add_late(self, late: list[dict]) -> None:
        for timing in late:
            row = self.index.get((timing["iteration"], timing["worker"]))
            if row is None or row["used"]:
                continue
            row.update(
                compute_start=timing["compute_start"] - self.origin,
                compute_end=timing["compute_end"] - self.origin,
                injected_delay=timing["injected"],
                arrival=timing["arrival"] - self.origin,
            )
