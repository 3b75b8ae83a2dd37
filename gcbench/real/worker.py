"""A Ray worker that trains: holds the data of its partitions, computes their gradients, encodes, sleeps the
injected delay.

Abandonment, the drawn crash and the restart check are every worker's (gcbench/real/sleeper.py): the
process exits (``os._exit``) as a crashed job starts, and Ray restarts the actor. The cluster then
calls ``load`` again, which fetches the partitions' data from the object store (the cluster holds those
references for the whole run), and the next job brings the current weights. The data is not a
constructor argument: Ray cannot always restore large constructor arguments on restart
(ray-project/ray#53727).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from gcbench.coding import make_scheme
from gcbench.real.sleeper import RayWorker
from gcbench.training.batches import PartitionSampler
from gcbench.training.gradients import shard_gradient, share_flat_storage
from gcbench.training.models import build_model


class GradientWorker(RayWorker):
    """Wrapped with ray.remote(concurrency_groups={"control": 1}, max_restarts=-1) by the cluster."""

    def __init__(self, worker: int, scheme: dict, setup: dict[str, Any]) -> None:
        super().__init__(worker)
        torch.set_num_threads(setup.get("threads", 1))
        self.scheme = make_scheme(scheme["name"], n=scheme["n"], s=scheme["s"], **scheme["params"])
        self.shards: dict[int, tuple] | None = None  # partition -> (images, labels, shard offset), from load
        self.device = torch.device(setup["device"])
        self.model = build_model(setup["model"], setup["classes"], setup["seed"]).to(self.device)
        self.flat = share_flat_storage(self.model)  # loading weights is one copy
        self.sampler = PartitionSampler(setup["samples"], self.scheme.k, setup["batch_size"], setup["seed"])
        self.straggling = setup["straggling"]

    def receive(self, shards: dict[int, list]) -> None:
        import ray

        self.shards = {j: ray.get(refs[0]) for j, refs in shards.items()}

    def has_data(self) -> bool:
        return self.shards is not None

    def compute(
        self,
        job: int,
        weights: np.ndarray,
        straggling: bool,
        crash: bool = False,
        batch: int = 0,
        overhead: float = 0.0,
    ) -> dict[str, Any]:
        """Gradients of this worker's partitions of mini-batch ``batch``, encoded.

        ``job`` is what ``abandon`` refers to; ``crash`` makes the process exit at once, as the failure
        model drew it; ``overhead`` is the run's compute.overhead draw for this job, slept with the
        straggling penalty.
        """
        if (reply := self.begin(job, crash)) is not None:
            return reply
        with self.lock:
            return self._compute(job, weights, straggling, batch, overhead)

    def _compute(self, job: int, weights: np.ndarray, straggling: bool, batch: int, overhead: float) -> dict[str, Any]:
        # weights and messages travel as numpy arrays: Ray shares them without pickling
        start = time.time()
        self._load_weights(weights)
        grads, losses = {}, {}
        for j in self.scheme.partitions(self.worker):
            if job in self.abandoned:
                return self.reply(start, time.time(), True, injected=0.0)
            grads[j], losses[j] = shard_gradient(self.model, self.shards[j], self.sampler, batch, j, self.device)
        computed = time.time()
        messages = [m.cpu().numpy() for m in self.scheme.encode(self.worker, grads)]
        load = np.array([len(grads)], dtype=float)
        penalty = self.straggling.penalty(np.array([computed - start]), load, np.array([straggling]))
        delay = float(penalty[0]) + overhead  # modelled time on top of the measured compute, as in the simulator
        if self.sleep(job, computed + delay):
            return self.reply(start, time.time(), True, injected=time.time() - computed)
        return self.reply(start, time.time(), False, messages=messages, losses=losses, injected=delay)

    def _load_weights(self, weights: np.ndarray) -> None:
        if self.device.type == "cpu":
            self.flat.numpy()[:] = weights  # weights is a read-only view of the object store
        else:
            self.flat.copy_(torch.from_numpy(weights.copy()).to(self.device, non_blocking=True))
