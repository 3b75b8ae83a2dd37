"""Training inside the simulator: the SimPy cluster's workers compute real gradients, in process.

A scenario with ``training.in_simulator`` runs the one master with a learner
(gcbench.training.learner) on a ``TrainingCluster``: how long each job takes
still comes from the models (the same draws, so the tables' times equal an
untrained run's), and what it computes is what a real worker computes
(gcbench/real/wallclock/gradient_worker.py): ``shard_gradient`` per partition of its load on the
weights published before the job was submitted, then ``scheme.encode``.

A job computes only when its result is delivered, so an abandoned job costs
nothing; partition gradients are cached per (weights version, mini-batch,
partition), so a partition that several workers hold is computed once per
version. Under a pipelined scheme each worker also keeps its own cache of its
latest gradient per held partition (gcbench/training/cache.py): a job computes
the step's scheduled partition (all of them when the cache is empty: the first
job, or the first after a crash, which loses it), late work included, and
encodes from the cache. torch is imported by gcbench.training, which only this module (and
only a run that trains) imports.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from gcbench.cluster import Failure, Job, Result
from gcbench.compression import MessageCompressor
from gcbench.master import decoding_quality, master_for
from gcbench.results.recorder import RunRecorder
from gcbench.scenario.build import placed
from gcbench.scenario.draws import draw_run
from gcbench.sim.cluster import SimPyCluster
from gcbench.sim.event import draws_for
from gcbench.training.batches import PartitionSampler
from gcbench.training.cache import PartitionCache
from gcbench.training.data import Dataset, load_data
from gcbench.training.device import resolve_device, to_host
from gcbench.training.evaluation import evaluate_master
from gcbench.training.gradients import shard_gradient, share_flat_storage
from gcbench.training.learner import Learner
from gcbench.training.models import build_model

if TYPE_CHECKING:
    from gcbench.coding import Scheme
    from gcbench.scenario.schema import Scenario, Variant


class TrainingCluster(SimPyCluster):
    """The SimPy cluster whose results carry real messages and losses once ``start(data)`` gave it the data.

    ``synchronous``: the master uses only results computed on the weights it published last (a synchronous
    master publishes as each iteration starts), so older work is delivered with its timings but not computed.
    """

    def __init__(self, scenario, scheme, draws, link_per_job: bool = False, seed: int = 0, compressor=None) -> None:
        super().__init__(scenario, scheme, draws, link_per_job, compressor)
        # ``compressor``: the variant's (Variant.sent_compressed; None: uncompressed); per worker, its compressing
        # end, error-feedback memory included
        self.compressor = compressor
        self.senders = None if compressor is None else [MessageCompressor(compressor, seed, w) for w in range(scheme.n)]
        self.scheme, self.training, self.seed, self.synchronous = scheme, scenario.training, seed, link_per_job
        self.version = -1  # of the weights published last
        self.published: dict[int, np.ndarray] = {}  # version -> weights, while a job may still compute on them
        self.work: dict[Job, tuple[int, int]] = {}  # job -> (weights version, mini-batch)
        self.tasks: dict[Job, tuple[tuple[int, int], ...]] = {}  # a multiplexed job -> its (job, message index) each
        self.gradients: dict[tuple[int, int, int], tuple] = {}  # (version, batch, partition) -> (gradient, loss)
        self.computed = 0  # partition gradients computed (the cache's hits are not)
        self.shards = None
        self.caches = [PartitionCache(scheme, w) for w in range(scheme.n)] if scheme.pipelined else None
        self.refills: list[tuple[int, int]] = []  # (worker, step) of each job that refilled a lost cache
        # the versions before the latest kept for jobs not yet submitted: a sequential scheme repeats a task of
        # the job B rounds back, on that job's weights
        self.keep = scheme.delay

    @classmethod
    def from_scenario(cls, scenario, scheme, seed: int, synchronous: bool = True) -> TrainingCluster:
        return cls(scenario, scheme, draw_run(scenario, scheme, seed), link_per_job=synchronous, seed=seed)

    def start(self, data: Dataset | None = None) -> None:
        """Hold every partition's shard (the Ray workers each hold their own) and one worker model."""
        if data is None:
            return
        training = self.training
        self.sampler = PartitionSampler(len(data.train_labels), self.scheme.k, training.batch_size, self.seed)
        self.shards = self.sampler.shard_data(data.train_images, data.train_labels)
        self.model = build_model(training.model, data.classes, self.seed).to(resolve_device(training.device))
        self.flat = share_flat_storage(self.model)  # loading a version's weights is one copy
        self.loaded: int | None = None

    def publish(self, weights) -> None:
        """Keep a copy (the learner steps its weights in place) for the jobs submitted from now on."""
        self.version += 1
        self.published[self.version] = np.array(weights, copy=True)
        self._forget()

    def submit(
        self, worker: int, job: int, row: int, crash: bool, batch: int | None = None, version: int | None = None,
        tasks: tuple[tuple[int, int], ...] | None = None,
    ) -> Job:  # fmt: skip
        handle = super().submit(worker, job, row, crash, batch)
        # (a job whose weights are on their way will run too, unless it crashes)
        will_run = handle in self.jobs or (handle in self.receiving and not crash)
        if will_run and self.shards is not None and self.version >= 0:  # it will deliver a result
            self.work[handle] = (self.version if version is None else version, row if batch is None else batch)
            if tasks is not None:
                self.tasks[handle] = tasks
        return handle

    def next_event(self, until: float):
        event = super().next_event(until)
        if type(event) is Result:
            # (a job's earlier messages leave its work for the later ones)
            version, batch = (self.work.pop if event.final else self.work.get)(event.job, (None, None))
            # a pipelined worker's late work still refreshes its cache
            # (and a sequential scheme's task may compute an earlier job on its weights)
            usable = not self.synchronous or version == self.version or self.caches is not None or self.keep
            if version is not None and usable and not event.abandoned:
                self._compute(event, version, batch)
        elif type(event) is Failure:  # its process is gone, and its cache and compression memory with it
            if self.caches is not None:
                self.caches[event.worker].clear()
            if self.senders is not None:
                self.senders[event.worker] = MessageCompressor(self.compressor, self.seed, event.worker)
        return event

    def _compute(self, result: Result, version: int, batch: int) -> None:
        """What the Ray worker computes: each partition's gradient and loss, then the scheme's messages."""
        if self.caches is not None:
            return self._compute_pipelined(result, version, batch)
        if result.job in self.tasks:
            return self._compute_tasks(result, self.tasks.pop(result.job))
        worker, gradients, losses = result.job.worker, {}, {}
        for j in self.scheme.partitions(worker):
            gradients[j], losses[j] = self._gradient(version, batch, j)
        messages = [to_host(m) for m in self.scheme.encode(worker, gradients)]
        if result.message is None:
            self._send(result, list(range(len(messages))), messages, batch)
            result.losses = losses
            return
        # one message of several: the losses of the partitions computed by the time it was sent
        mid = self.scheme.messages(worker)[result.message]
        done = self.scheme.partitions(worker)[: self.scheme.ready_after(mid)]
        self._send(result, [result.message], [messages[result.message]], batch)
        result.losses = {j: losses[j] for j in done}

    def _send(self, result: Result, indices: list[int], messages: list[np.ndarray], batch: int) -> None:
        """The result carries these messages (by index among its worker's), compressed where the variant says
        (keyed by the mini-batch, as a real worker's), then with the uncompressed ones beside them (``exact``:
        what compression_error is measured against)."""
        if self.senders is None:
            result.messages = messages
            return
        sender = self.senders[result.job.worker]
        result.messages = [sender.compress(i, message, batch) for i, message in zip(indices, messages, strict=True)]
        result.exact = messages

    def _compute_tasks(self, result: Result, tasks: tuple[tuple[int, int], ...]) -> None:
        """A multiplexed job: each mini-task's message, on its job's weights and mini-batch (M-SGC)."""
        worker, vectors, exact, result.task_losses = result.job.worker, [], [], []
        for job, index in tasks:
            gradients, losses = {}, {}
            for j in self.scheme.message_partitions(worker, index):
                gradients[j], losses[j] = self._gradient(job, job, j)
            message = self.scheme.encode_message(worker, index, {j: to_host(g) for j, g in gradients.items()})
            self._send(result, [index], [message], job)
            vectors += result.messages
            exact += result.exact or [None]
            result.task_losses.append(losses)
        result.messages, result.exact = vectors, exact if self.senders is not None else None

    def _compute_pipelined(self, result: Result, version: int, batch: int) -> None:
        """The step's partition (every held one the cache lacks) on the job's weights, then encode from the cache."""
        worker, step = result.job.worker, result.job.row
        cache, losses = self.caches[worker], {}
        if cache.missing() and step > 0:
            self.refills.append((worker, step))
        for j in cache.due(step):
            gradient, losses[j] = self._gradient(version, batch, j)
            cache.store(j, gradient, losses[j], version)
        messages = [to_host(m) for m in self.scheme.encode(worker, cache.gradients())]
        self._send(result, list(range(len(messages))), messages, batch)
        result.losses, result.versions = losses, cache.versions()

    def _gradient(self, version: int, batch: int, j: int) -> tuple:
        """Partition j's gradient and loss on mini-batch ``batch`` and weights ``version``, computed once."""
        key = (version, batch, j)
        if key not in self.gradients:
            self._load(version)
            self.gradients[key] = shard_gradient(self.model, self.shards[j], self.sampler, batch, j, self.flat.device)
            self.computed += 1
        return self.gradients[key]

    def _load(self, version: int) -> None:
        if self.loaded != version:
            import torch

            self.flat.copy_(torch.from_numpy(self.published[version]))  # (to the GPU, where the model is one)
            self.loaded = version

    def _forget(self) -> None:
        """Drop the weights and cached gradients of versions no job can compute on any more."""
        queued = {event.job for event in self.events if type(event) is Result}
        self.work = {job: vb for job, vb in self.work.items() if job in self.jobs or job in queued}
        self.tasks = {job: tasks for job, tasks in self.tasks.items() if job in self.work}
        live = {version for version, _ in self.work.values()} | set(range(self.version - self.keep, self.version + 1))
        self.published = {v: w for v, w in self.published.items() if v in live}
        self.gradients = {key: g for key, g in self.gradients.items() if key[0] in live}

    def shutdown(self, interrupted: bool = False) -> None:
        super().shutdown(interrupted)
        self.work.clear()
        self.tasks.clear()
        self.gradients.clear()
        for cache in self.caches or ():
            cache.clear()
        self.published.clear()


def simulate_training(
    scenario: Scenario, variant: Variant, scheme: Scheme, seed: int, data: Dataset | None = None
) -> RunRecorder:
    """The event engine with a learner: loss per iteration (update), test accuracy every ``eval_every``."""
    scenario = placed(scenario, scheme)  # (topology.placement: by_code, this variant's code's)
    training = scenario.training
    data = data if data is not None else cached_data(scenario)
    draws = draws_for(scenario, variant, scheme, seed)
    synchronous = variant.policy.synchronous
    compressor = variant.sent_compressed
    cluster = TrainingCluster(scenario, scheme, draws, link_per_job=synchronous, seed=seed, compressor=compressor)
    rec = RunRecorder(scenario.iterations, scenario.workers)
    with one_torch_thread():
        learner = Learner(scheme, training, data.classes, seed, compressor, resolve_device(training.device))
        cluster.start(data)
        master = master_for(cluster, scenario, variant, scheme, draws, rec, learner)
        try:
            for t in master.steps(0, scenario.iterations):
                if (t + 1) % training.eval_every == 0 or t == scenario.iterations - 1:
                    rec.accuracy[t] = evaluate_master(learner.model, data, training.batch_size)
            if synchronous:
                master.finish()
        finally:
            cluster.shutdown()
    decoding_quality(rec, scheme)
    return rec


_DATA: dict[tuple, Dataset] = {}  # the last dataset loaded in this process, by the training fields naming it


def cached_data(scenario: Scenario) -> Dataset:
    """The scenario's dataset, loaded once per process (every task of a sweep trains on the same one)."""
    training = scenario.training
    key = (training.dataset, training.data_dir, training.cache_dir)
    if key not in _DATA:
        _DATA.clear()
        _DATA[key] = load_data(scenario)
    return _DATA[key]


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Each simulated task trains on one thread (torch's, and the BLAS's, which decodes): tasks run in parallel
    processes, one per core, and the vectors are small enough that a second thread only waits to be woken.

    Measured on the shared 2-core machine: with OpenBLAS's default two threads, decoding a 30,730-long
    gradient from 10 messages (ten saxpy calls) took 13 ms, each call waiting for the second thread to be
    scheduled; on one thread CR s=2 trained at 17 to 20 ms of CPU per iteration, not 37 to 78."""
    import torch
    from threadpoolctl import threadpool_limits

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(previous)
