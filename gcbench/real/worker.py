"""A Ray worker: holds the data of its partitions, computes their gradients, encodes, sleeps injected delay.

Ray does not interrupt a running actor task, so abandonment is cooperative: the
master calls ``abandon`` in the actor's "control" concurrency group (its own
thread, so it never queues behind computes), and the running ``compute`` checks
the flag between partitions and while it sleeps. An abandoned compute still
returns its timings, so the master can show the work it stopped waiting for.

A crash the scenario's failure model draws is real: the process exits
(``os._exit``) as the job starts, and Ray restarts the actor. The master then
calls ``load`` again, which fetches the partitions' data from the object store
(the master holds those references for the whole run), and the next job brings
the current weights. The data is not a constructor argument: Ray cannot always
restore large constructor arguments on restart (ray-project/ray#53727).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import numpy as np
import torch

from gcbench.coding import make_scheme
from gcbench.training.batches import PartitionSampler
from gcbench.training.gradients import shard_gradient, share_flat_storage
from gcbench.training.models import build_model

SLEEP_SLICE = 0.005  # seconds between abandonment checks while sleeping an injected delay
CRASH_EXIT_CODE = 70  # the exit status of a worker the failure model crashes


class WorkerRestarted(RuntimeError):
    """A job reached a restarted worker before the master gave it its data back."""


class GradientWorker:
    """Wrapped with ray.remote(concurrency_groups={"control": 1}, max_restarts=-1) by the master."""

    def __init__(self, worker: int, scheme: dict, setup: dict[str, Any]) -> None:
        torch.set_num_threads(setup.get("threads", 1))
        self.worker = worker
        self.scheme = make_scheme(scheme["name"], n=scheme["n"], s=scheme["s"], **scheme["params"])
        self.shards: dict[int, tuple] | None = None  # partition -> (images, labels, shard offset), from load
        self.device = torch.device(setup["device"])
        self.model = build_model(setup["model"], setup["classes"], setup["seed"]).to(self.device)
        self.flat = share_flat_storage(self.model)  # loading weights is one copy
        self.sampler = PartitionSampler(setup["samples"], self.scheme.k, setup["batch_size"], setup["seed"])
        self.straggling = setup["straggling"]
        self.abandon_below = -1
        self.lock = threading.Lock()

    def load(self, shards: dict[int, list]) -> int:
        """Fetch the partitions' data (each reference sits in a list so Ray passes it unresolved)."""
        import ray

        self.shards = {j: ray.get(refs[0]) for j, refs in shards.items()}
        return os.getpid()

    def abandon(self, iteration: int) -> None:
        """Stop working on this iteration (and earlier ones)."""
        self.abandon_below = max(self.abandon_below, iteration + 1)

    def compute(
        self,
        iteration: int,
        weights: np.ndarray,
        straggling: bool,
        crash: bool = False,
        batch: int | None = None,
        overhead: float = 0.0,
    ) -> dict[str, Any]:
        """Gradients of this worker's partitions of mini-batch ``batch`` (default: ``iteration``), encoded.

        ``iteration`` is what ``abandon`` refers to (an asynchronous job's id);
        ``crash`` makes the process exit at once, as the failure model drew it;
        ``overhead`` is the run's compute.overhead draw for this job, slept with the straggling.
        """
        if crash:
            os._exit(CRASH_EXIT_CODE)
        if self.shards is None:
            raise WorkerRestarted(f"worker {self.worker} was restarted and has no data yet")
        with self.lock:
            return self._compute(iteration, weights, straggling, iteration if batch is None else batch, overhead)

    def _compute(
        self, iteration: int, weights: np.ndarray, straggling: bool, batch: int, overhead: float
    ) -> dict[str, Any]:
        # weights and messages travel as numpy arrays: Ray shares them without pickling
        start = time.time()
        result = {"worker": self.worker, "iteration": iteration, "compute_start": start, "abandoned": True}
        result["straggling"] = straggling
        self._load_weights(weights)
        grads, losses = {}, {}
        for j in self.scheme.partitions(self.worker):
            if self.abandon_below > iteration:
                return self._abandoned(result, 0.0)
            grads[j], losses[j] = shard_gradient(self.model, self.shards[j], self.sampler, batch, j, self.device)
        computed = time.time()
        messages = [m.cpu().numpy() for m in self.scheme.encode(self.worker, grads)]
        load = np.array([len(grads)], dtype=float)
        penalty = self.straggling.penalty(np.array([computed - start]), load, np.array([straggling]))
        delay = float(penalty[0]) + overhead  # modelled time on top of the measured compute, as in the simulator
        while time.time() < computed + delay:
            if self.abandon_below > iteration:
                return self._abandoned(result, time.time() - computed)
            time.sleep(min(SLEEP_SLICE, max(0.0, computed + delay - time.time())))
        result.update(
            abandoned=False, messages=messages, losses=losses, compute_end=computed, injected=delay, ready=time.time()
        )
        return result

    def _load_weights(self, weights: np.ndarray) -> None:
        if self.device.type == "cpu":
            self.flat.numpy()[:] = weights  # weights is a read-only view of the object store
        else:
            self.flat.copy_(torch.from_numpy(weights.copy()).to(self.device, non_blocking=True))

    @staticmethod
    def _abandoned(result: dict[str, Any], slept: float) -> dict[str, Any]:
        """The timings of work the master stopped waiting for: when it stopped, and the delay slept so far."""
        result.update(injected=slept, ready=time.time())
        return result

    def ping(self) -> int:
        return os.getpid()
