"""A Ray worker: holds the data of its partitions, computes their gradients, encodes, sleeps injected straggling.

Ray does not interrupt a running actor task, so abandonment is cooperative: the
master calls ``abandon`` in the actor's "control" concurrency group (its own
thread, so it never queues behind computes), and the running ``compute`` checks
the flag between partitions and while it sleeps. Computes run one at a time in
the default group; the lock only guards against a caller that sets it otherwise.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import torch

from gcbench.coding import make_scheme
from gcbench.real.batches import PartitionSampler
from gcbench.real.gradients import load_flat_parameters, partition_gradient
from gcbench.real.models import build_model

SLEEP_SLICE = 0.005  # seconds between abandonment checks while sleeping an injected delay


class GradientWorker:
    """Wrapped with ray.remote(concurrency_groups={"control": 1}) by the master."""

    def __init__(self, worker: int, scheme: dict, shards: dict[int, tuple], setup: dict[str, Any]) -> None:
        torch.set_num_threads(setup.get("threads", 1))
        self.worker = worker
        self.scheme = make_scheme(scheme["name"], n=scheme["n"], s=scheme["s"], **scheme["params"])
        self.shards = shards  # partition -> (images, labels, offset of the shard in the training set)
        self.device = torch.device(setup["device"])
        self.model = build_model(setup["model"], setup["classes"], setup["seed"]).to(self.device)
        self.sampler = PartitionSampler(setup["samples"], self.scheme.k, setup["batch_size"], setup["seed"])
        self.straggling = setup["straggling"]
        self.abandon_below = -1
        self.lock = threading.Lock()

    def abandon(self, iteration: int) -> None:
        """Stop working on this iteration (and earlier ones)."""
        self.abandon_below = max(self.abandon_below, iteration + 1)

    def compute(self, iteration: int, weights: np.ndarray, straggling: bool) -> dict[str, Any]:
        with self.lock:
            return self._compute(iteration, weights, straggling)

    def _compute(self, iteration: int, weights: np.ndarray, straggling: bool) -> dict[str, Any]:
        # weights and messages travel as numpy arrays: Ray shares them without pickling
        start = time.time()
        result = {"worker": self.worker, "iteration": iteration, "compute_start": start, "abandoned": True}
        load_flat_parameters(self.model, torch.tensor(weights, device=self.device))
        grads, losses = {}, {}
        for j in self.scheme.partitions(self.worker):
            if self.abandon_below > iteration:
                return result
            images, labels, offset = self.shards[j]
            local = self.sampler.indices(iteration, j) - offset
            grads[j], losses[j] = partition_gradient(
                self.model, images[local], labels[local], self.sampler.batch_size, self.device
            )
        computed = time.time()
        messages = [m.cpu().numpy() for m in self.scheme.encode(self.worker, grads)]
        load = np.array([len(grads)], dtype=float)
        delay = float(self.straggling.penalty(np.array([computed - start]), load, np.array([straggling]))[0])
        while time.time() < computed + delay:
            if self.abandon_below > iteration:
                return result
            time.sleep(min(SLEEP_SLICE, max(0.0, computed + delay - time.time())))
        result.update(
            abandoned=False, messages=messages, losses=losses, compute_end=computed, injected=delay, ready=time.time()
        )
        return result

    def ping(self) -> bool:
        return True
