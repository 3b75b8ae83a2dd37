"""A stand-in for the Ray cluster, so the real run's driver (turns, checkpoints, resume, run.json, signals) is
tested in one process in a second, without Ray. It implements the cluster protocol in wall time and sends
encoded constant gradients, so the one master and the learner run as on Ray and checkpoints are real ones.

``FakeCluster.log`` records (variant label, seed, iteration) in the order they ran; ``FakeCluster.events`` maps
(label, seed, iteration) to what happens at that iteration: "interrupt" (Ctrl-C), "sigterm", or "stuck".
The last worker is slow: the FR variant stops without it and its abandoned work reports late, as a straggler's.
"""

from __future__ import annotations

import heapq
import os
import signal
import time

import numpy as np
import pytest
import torch

from gcbench.cluster import Cluster, Job, Result
from gcbench.master import RunStuck
from gcbench.training.data import synthetic

DATA = synthetic(train=256, test=64)

SCENARIO = """\
name: fake
workers: 4
iterations: 6
compute: {per_partition: {distribution: deterministic, value: 0.01}}
variants: [{label: uncoded, scheme: uncoded, policy: wait_all}, {label: FR s=1, scheme: fr, s: 1}]
training: {dataset: synthetic, batch_size: 32, eval_every: 100, checkpoint_every: 2, device: cpu}
"""

FAST, SLOW = 0.001, 0.02  # seconds a job takes: every worker's, and the last one's


class FakeCluster(Cluster):
    log: list[tuple[str, int, int]] = []
    events: dict[tuple[str, int, int], str] = {}

    def __init__(self, scenario, variant, scheme, seed, draws, clock, backend: str = "ray") -> None:
        self.n, self.scheme, self.label, self.seed, self.clock = scheme.n, scheme, variant.display_label(), seed, clock
        self.timeout = 60.0
        self.queue: list[tuple[float, int, Result]] = []
        self.abandoned: set[int] = set()
        self.weights = None

    @property
    def now(self) -> float:
        return self.clock.now()

    @property
    def dead(self) -> set[int]:
        return set()

    def publish(self, weights) -> None:
        self.weights = np.array(weights)

    def submit(self, worker: int, job: int, row: int, crash: bool, batch: int | None = None) -> Job:
        if worker == 0:
            self._happen(job)
        now, batch = self.clock.now(), row if batch is None else batch
        delay = SLOW if worker == self.n - 1 else FAST
        partitions = self.scheme.partitions(worker)
        grads = {j: torch.full((len(self.weights),), 1e-3 * (batch + 1)) for j in partitions}
        messages = [m.numpy() for m in self.scheme.encode(worker, grads)]
        handle = Job(worker, job, row, now, crash)
        losses = {j: 2.0 / (batch + 1) / self.scheme.k for j in partitions}
        result = Result(handle, now + delay, now, now + delay / 2, messages, losses=losses, injected=delay / 2)
        heapq.heappush(self.queue, (result.at, id(result), result))
        return handle

    def _happen(self, t: int) -> None:
        event = self.events.get((self.label, self.seed, t))
        if event == "interrupt":
            raise KeyboardInterrupt
        if event == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises here
        if event == "stuck":
            raise RunStuck(f"variant '{self.label}': iteration {t} can never finish (fake).")
        self.log.append((self.label, self.seed, t))

    def next_event(self, until: float):
        if not self.queue or self.queue[0][0] > until:
            if until < float("inf"):
                time.sleep(max(0.0, until - self.clock.now()))
            return None
        at, _, result = heapq.heappop(self.queue)
        time.sleep(max(0.0, at - self.clock.now()))
        result.abandoned = result.job.id in self.abandoned and result.job.worker == self.n - 1
        return result

    def abandon(self, jobs) -> None:
        self.abandoned.update(job.id for job in jobs)

    def down(self, worker: int) -> bool:
        return False

    def running(self, job_ids):
        ids = set(job_ids)
        return [result.job for _, _, result in self.queue if result.job.id in ids]

    def pending(self) -> bool:
        return bool(self.queue)

    def drain(self, seconds: float):
        until, events = self.clock.now() + seconds, []
        while (event := self.next_event(until)) is not None:
            events.append(event)
        return events

    def shutdown(self, interrupted: bool = False) -> None:
        self.queue.clear()

    def leftovers(self) -> list[str]:
        return [f"{len(self.queue)} jobs in flight"] if self.queue else []


def patch_ray(monkeypatch: pytest.MonkeyPatch) -> type[FakeCluster]:
    """Put FakeCluster in Ray's place (and small synthetic data in the scenario's)."""
    import gcbench.real.ray.start as ray_start
    import gcbench.real.run.variant_run as variant
    import gcbench.training.data as data

    FakeCluster.log, FakeCluster.events = [], {}
    monkeypatch.setattr(variant, "cluster_for", FakeCluster)
    monkeypatch.setattr(variant, "master_threads", lambda workers, backend="ray": 1)
    monkeypatch.setattr(ray_start, "start_ray", lambda address: None)
    monkeypatch.setattr(data, "load_data", lambda scenario, say=None: DATA)
    return FakeCluster


@pytest.fixture
def fake_ray(monkeypatch):
    """The real run's driver with FakeCluster instead of Ray; yields FakeCluster (its log and events)."""
    yield patch_ray(monkeypatch)
