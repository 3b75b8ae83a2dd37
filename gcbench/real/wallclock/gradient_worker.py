"""The worker that trains, on every wall-clock backend: holds the data of its partitions, computes their
gradients, encodes, sleeps the injected delay.

Abandonment, the drawn crash and the restart check are every worker's (gcbench/real/wallclock/job_worker.py): the
process exits (``os._exit``) as a crashed job starts, and the backend starts it again (Ray restarts the
actor; the torch cluster a replacement process). The backend then gives it its partitions' data again
(``load``), and the next job brings the current weights. Under a pipelined scheme the worker keeps its
latest gradient of each partition it holds (gcbench/training/cache.py) across jobs and computes one
partition a step; a restarted worker has lost that cache and says so (``refilled`` in its reply, which the
cluster logs as a warning), and its next job computes every held partition again. The data is not a
constructor argument: Ray cannot always restore large constructor arguments on restart
(ray-project/ray#53727).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from gcbench.coding import make_scheme
from gcbench.compression import MessageCompressor, compressor_from
from gcbench.real.wallclock.job_worker import JobWorker
from gcbench.real.wallclock.threads import limit_process_threads
from gcbench.training.batches import PartitionSampler
from gcbench.training.cache import PartitionCache
from gcbench.training.device import synchronize, to_host, worker_device
from gcbench.training.gradients import shard_gradient, share_flat_storage, warm_up_on_shard
from gcbench.training.models import build_model


class GradientWorker(JobWorker):
    """One worker's model, scheme and data; ``compute`` (or ``compute_messages``) runs a job."""

    def __init__(self, worker: int, scheme: dict, setup: dict[str, Any]) -> None:
        super().__init__(worker)
        limit_process_threads(setup.get("threads", 1))
        self.scheme = make_scheme(scheme["name"], n=scheme["n"], s=scheme["s"], **scheme["params"])
        self.shards: dict[int, tuple] | None = None  # partition -> (images, labels, shard offset), from load
        self.device = torch.device(worker_device(setup["device"], worker))  # several workers may share a GPU
        self.model = build_model(setup["model"], setup["classes"], setup["seed"]).to(self.device)
        self.flat = share_flat_storage(self.model)  # loading weights is one copy
        self.sampler = PartitionSampler(setup["samples"], self.scheme.k, setup["batch_size"], setup["seed"])
        self.straggling = setup["straggling"]
        # a fresh process (the first, or one the backend started again) starts with an empty cache
        self.cache = PartitionCache(self.scheme, worker) if self.scheme.pipelined else None
        self.said_lost = False
        # the variant's compressor, with this process's error-feedback memory (a restarted one starts empty)
        compression = setup.get("compression")
        self.sender = (
            None if compression is None else MessageCompressor(compressor_from(compression), setup["seed"], worker)
        )
        self.said_memory_lost = False

    def receive(self, shards: dict[int, tuple]) -> None:
        """Keep the partitions' data, and warm the model up on one of them before the worker says it is ready
        (a process's first pass is slow, and is no job's)."""
        self.shards = dict(shards)
        if self.shards:
            partition = min(self.shards)
            warm_up_on_shard(self.model, self.shards[partition], self.sampler, partition, self.device)

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
        version: int = 0,
    ) -> dict[str, Any]:
        """Gradients of this worker's partitions of mini-batch ``batch``, encoded.

        ``job`` is what ``abandon`` refers to; ``crash`` makes the process exit at once, as the failure
        model drew it; ``overhead`` is the run's compute.overhead draw for this job, slept with the
        straggling penalty; ``version``: the master's step whose weights these are (a pipelined worker's cache
        records it per partition).
        """
        if (reply := self.begin(job, crash)) is not None:
            return reply
        with self.lock:
            return self._compute(job, weights, straggling, batch, overhead, version)

    def _compute(self, job: int, weights: np.ndarray, straggling: bool, batch: int, overhead: float,
                 version: int) -> dict[str, Any]:  # fmt: skip
        # weights and messages travel as numpy arrays: Ray shares them without pickling
        start = time.time()
        self._load_weights(weights)
        grads, losses, extra = {}, {}, {}
        due = self.scheme.partitions(self.worker) if self.cache is None else self._due(batch, extra)
        for j in due:
            if job in self.abandoned:  # (a refill it began still says the cache was lost)
                return self.reply(start, time.time(), True, injected=0.0, **extra)
            grads[j], losses[j] = shard_gradient(self.model, self.shards[j], self.sampler, batch, j, self.device)
            if self.cache is not None:
                self.cache.store(j, grads[j], losses[j], version)
        synchronize(self.device)  # the GPU's queued backward is part of the compute
        computed = time.time()
        if self.cache is not None:
            extra["versions"] = self.cache.versions()
        encoded = grads if self.cache is None else self.cache.gradients()
        vectors = dict(enumerate(to_host(m) for m in self.scheme.encode(self.worker, encoded)))
        sent = self._compressed(batch, vectors, extra)
        messages = [sent[i] for i in sorted(sent)]
        load = np.array([len(grads)], dtype=float)
        penalty = self.straggling.penalty(np.array([computed - start]), load, np.array([straggling]))
        delay = float(penalty[0]) + overhead  # modelled time on top of the measured compute, as in the simulator
        if self.sleep(job, computed + delay):
            return self.reply(start, time.time(), True, injected=time.time() - computed, **extra)
        return self.reply(start, time.time(), False, messages=messages, losses=losses, injected=delay, **extra)

    def compute_tasks(
        self, job: int, straggling: bool, crash: bool, overhead: float, tasks: tuple, *weights: np.ndarray
    ) -> dict[str, Any]:
        """A multiplexed job (M-SGC): each mini-task, (job, index among this worker's messages), computes that
        message on its job's ``weights`` (in the tasks' order) and mini-batch. One reply: the messages in the
        tasks' order, and each mini-task's partition losses (``task_losses``)."""
        if (reply := self.begin(job, crash)) is not None:
            return reply
        with self.lock:
            return self._compute_tasks(job, straggling, overhead, tasks, weights)

    def _compute_tasks(self, job: int, straggling: bool, overhead: float, tasks: tuple, weights: tuple) -> dict:
        start, extra = time.time(), {}
        vectors, task_losses, computed_partitions = [], [], 0
        for (task_job, index), task_weights in zip(tasks, weights, strict=True):
            self._load_weights(task_weights)
            grads, losses = {}, {}
            for j in self.scheme.message_partitions(self.worker, index):
                if job in self.abandoned:
                    return self.reply(start, time.time(), True, injected=0.0)
                grads[j], losses[j] = shard_gradient(self.model, self.shards[j], self.sampler, task_job, j, self.device)
            vector = self.scheme.encode_message(self.worker, index, {j: to_host(g) for j, g in grads.items()})
            vectors.append(self._compressed(task_job, {index: vector}, extra)[index])
            task_losses.append(losses)
            computed_partitions += len(grads)
        synchronize(self.device)
        computed = time.time()
        load = np.array([computed_partitions * self.scheme.partition_share])  # (in uncoded partitions)
        penalty = self.straggling.penalty(np.array([computed - start]), load, np.array([straggling]))
        delay = float(penalty[0]) + overhead
        if self.sleep(job, computed + delay):
            return self.reply(start, time.time(), True, injected=time.time() - computed, **extra)
        return self.reply(start, time.time(), False, messages=vectors, task_losses=task_losses, injected=delay, **extra)

    def _due(self, step: int, extra: dict[str, Any]) -> list[int]:
        """A pipelined step's partitions; a cache lost with a restarted process is refilled, and said so."""
        missing = self.cache.missing()
        if missing and step > 0 and not self.said_lost:
            extra["refilled"], self.said_lost = missing, True  # once per process; the cluster logs it
        return self.cache.due(step)

    def compute_messages(
        self, job: int, weights: np.ndarray, straggling: bool, crash: bool, batch: int, overhead: float
    ):
        """``compute`` for a worker with several messages: one reply per message, each sent once the partitions
        it uses are computed (``Scheme.ready_after``) and its share of the injected delay slept: the job's
        penalty (from its compute so far, extrapolated to its load) and overhead, split evenly per partition,
        as the simulator splits a job's time. Every reply says whether it is the job's ``final`` one."""
        if (reply := self.begin(job, crash)) is not None:
            yield {**reply, "final": True}
            return
        with self.lock:
            yield from self._messages(job, weights, straggling, batch, overhead)

    def _messages(self, job: int, weights: np.ndarray, straggling: bool, batch: int, overhead: float):
        start, slept = time.time(), 0.0
        self._load_weights(weights)
        parts, own = self.scheme.partitions(self.worker), self.scheme.messages(self.worker)
        ready = [self.scheme.ready_after(mid) for mid in own]
        grads, losses, left = {}, {}, len(own)
        for done, j in enumerate(parts, start=1):
            if job in self.abandoned:
                yield self.reply(start, time.time(), True, injected=slept, final=True)
                return
            grads[j], losses[j] = shard_gradient(self.model, self.shards[j], self.sampler, batch, j, self.device)
            due = [i for i, after in enumerate(ready) if after == done]
            if not due:
                continue
            synchronize(self.device)
            computed = time.time()
            delay = self._share(computed - start - slept, done, len(parts), straggling, overhead) - slept
            messages = self._compressed(batch, self._encode_some(grads, due))
            if self.sleep(job, computed + max(delay, 0.0)):
                yield self.reply(start, time.time(), True, injected=time.time() - computed + slept, final=True)
                return
            slept += max(delay, 0.0)
            for i in due:
                left -= 1
                computed_losses = {p: losses[p] for p in parts[:done]}
                yield self.reply(start, time.time(), False, messages=[messages[i]], losses=computed_losses,
                                 injected=slept, message=i, final=left == 0)  # fmt: skip

    def _compressed(self, batch: int, messages: dict[int, np.ndarray], extra: dict | None = None) -> dict:
        """The messages (by index among this worker's) as the variant sends them: compressed with this process's
        error-feedback memory, keyed by the mini-batch (every worker of an iteration shares it, so random-k's
        indices agree). A memory lost with a restarted process is said once (``memory_lost``)."""
        if self.sender is None:
            return messages
        if extra is not None and self.sender.compressor.feedback and batch > 0 and not self.sender.states:
            if not self.said_memory_lost:
                extra["memory_lost"], self.said_memory_lost = True, True
        return {i: self.sender.compress(i, vector, batch) for i, vector in messages.items()}

    def _share(self, work: float, done: int, load: int, straggling: bool, overhead: float) -> float:
        """The injected delay due once ``done`` of ``load`` partitions are computed in ``work`` seconds."""
        whole = work * load / done  # the job's compute, extrapolated from its partitions so far
        penalty = self.straggling.penalty(np.array([whole]), np.array([float(load)]), np.array([straggling]))
        return (float(penalty[0]) + overhead) * done / load

    def _encode_some(self, grads: dict, due: list[int]) -> dict[int, np.ndarray]:
        """The messages ``due`` (indices among the worker's) from the partitions computed so far: the others'
        coefficients are zero in them, so any computed gradient stands in for those not computed yet."""
        spare = next(iter(grads.values()))
        full = {j: grads.get(j, spare) for j in self.scheme.partitions(self.worker)}
        encoded = self.scheme.encode(self.worker, full)
        return {i: to_host(encoded[i]) for i in due}

    def _load_weights(self, weights: np.ndarray) -> None:
        if self.device.type == "cpu":
            self.flat.numpy()[:] = weights  # weights is a read-only view of the object store
        else:
            self.flat.copy_(torch.from_numpy(weights.copy()).to(self.device, non_blocking=True))
