"""The master (parameter server) on Ray: dispatch, wait as the policy says, decode, step, publish weights once.

``RayMaster`` holds what every policy shares (model, optimizer, the run's random
draws, the workers, decoding); ``steps`` runs synchronous iterations. The
asynchronous policies run in ``gcbench.real.asynchronous``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import torch

from gcbench.coding import Scheme
from gcbench.real.cluster import ClusterStuck, Event, WorkerCluster
from gcbench.scenario.draws import draw_run
from gcbench.scenario.schema import Scenario, Variant
from gcbench.training.batches import PartitionSampler
from gcbench.training.data import Dataset
from gcbench.training.gradients import FlatModel
from gcbench.training.models import build_model

__all__ = ["ClusterStuck", "RayMaster", "Step"]

DRAIN_SECONDS = 5.0  # at the end of a run, how long to wait for abandoned work to report its timings


@dataclass
class Step:
    """One iteration (or asynchronous update) as the master saw it; times are wall-clock seconds."""

    gradient: torch.Tensor
    start: float
    end: float
    reason: str
    exact: bool
    residual: float
    loss: float
    arrivals: dict[int, float] = field(default_factory=dict)  # worker -> seconds after start
    timings: dict[int, dict] = field(default_factory=dict)  # worker -> its used result's timings
    failed: set[int] = field(default_factory=set)
    staleness: float = 0.0
    late: list[dict] = field(default_factory=list)  # timings of earlier iterations' unused work
    straggling: dict[int, bool] = field(default_factory=dict)  # worker -> slowed by the straggling model
    messages_used: int = 0


class RayMaster:
    """Drives n GradientWorker actors through the iterations of one variant."""

    def __init__(self, scenario: Scenario, variant: Variant, scheme: Scheme, data: Dataset, seed: int, device: str):
        import ray

        self.ray, self.scenario, self.variant, self.scheme = ray, scenario, variant, scheme
        training = scenario.training
        self.timeout = training.timeout
        self.model = build_model(training.model, data.classes, seed)
        self.flat = FlatModel(self.model, training)
        self.optimizer = self.flat.optimizer
        self.sampler = PartitionSampler(len(data.train_labels), scheme.k, training.batch_size, seed)
        draws = draw_run(scenario, scheme, seed)  # the simulator's streams
        self.straggling, self.crash, self.overhead = draws.straggling, draws.crash, draws.overhead
        self.d = int(sum(p.numel() for p in self.model.parameters()))
        shards = [ray.put(shard) for shard in self.sampler.shard_data(data.train_images, data.train_labels)]
        setup = {
            "device": device, "model": training.model, "classes": data.classes, "seed": seed,
            "samples": len(data.train_labels), "batch_size": training.batch_size, "straggling": scenario.straggling,
        }  # fmt: skip
        self.cluster = WorkerCluster(scheme, shards, setup, self.timeout, getattr(scenario.failures, "downtime", None))
        self.late: list[dict] = []
        self.origin = time.time()

    @property
    def actors(self) -> list:
        return self.cluster.actors

    def steps(self, first: int, last: int) -> Iterator[Step]:
        for t in range(first, last):
            yield self.step(t)

    def step(self, t: int) -> Step:
        """Run iteration t: dispatch, collect until the policy stops, decode, and update the model."""
        cluster, scheme, policy = self.cluster, self.scheme, self.variant.policy
        start = time.time()
        weights = self.ray.put(self.flat.weights())  # published once, shared by every worker
        deadline, wake = start + self.timeout, start + policy.wake_at()
        failed = {w for w in range(scheme.n) if cluster.down(w, start)}
        todo = [w for w in range(scheme.n) if w not in cluster.dead]  # workers still to send iteration t
        may_crash = set(todo)  # the failure model's draw applies to a worker's first job of the iteration
        order, received, arrivals, timings, reason = [], {}, {}, {}, None
        while reason is None:
            now = time.time()
            for w in [w for w in todo if cluster.available(w, now)]:
                crash = w in may_crash and bool(self.crash[t, w])
                may_crash.discard(w)
                todo.remove(w)
                cluster.submit(w, t, weights, bool(self.straggling[t, w]), crash, t, float(self.overhead[t, w]))
                if crash:
                    failed.add(w)
            if not (todo := [w for w in todo if w not in cluster.dead]) and not cluster.in_flight({t}):
                now = time.time()
                if now >= wake:  # the policy decides as of its wake time, once
                    reason, wake = policy.stop_now(scheme, order, wake - start, True), float("inf")
                else:
                    reason = policy.stop_now(scheme, order, now - start, True)
                if reason is None and now < wake < deadline:  # nothing more can arrive; the policy decides at wake
                    time.sleep(wake - now)
                    continue
                if reason is None:
                    raise self._stuck(t, received)
                break
            event = cluster.next_event(min(deadline, wake, cluster.next_recovery(todo)))
            now = time.time()
            if (event is None or event.at >= wake) and now >= wake:  # decide at the wake time before any later result
                reason, wake = policy.stop_now(scheme, order, wake - start, False), float("inf")
                if reason is not None:
                    if event is not None:
                        self._note_late(event)
                    break
            if event is None:
                if now >= deadline:
                    raise self._timed_out(t, received)
                continue
            if event.kind == "failed":
                failed.add(event.worker)
                if event.job is not None and event.job.job == t and event.worker not in cluster.dead:
                    todo.append(event.worker)  # it redoes iteration t once it is back
                continue
            if event.kind != "result" or event.job.job != t:
                self._note_late(event)
                continue
            w = event.worker
            received[w], arrivals[w], timings[w] = event.result["messages"], event.at - start, event.result
            order += scheme.messages(w)
            nothing_more = not todo and not cluster.in_flight({t})
            reason = policy.stop_now(scheme, order, event.at - start, nothing_more)
        if self.scenario.stale_work == "abandon":
            cluster.abandon([job for job in cluster.jobs.values() if job.job == t])
        gradient, exact, residual = self._decode(received, order)
        self.flat.step(gradient)
        end = time.time()
        if unanswered := [w for w in range(scheme.n) if w not in arrivals and w not in failed]:
            failed |= cluster.restarting(unanswered)  # died while idle: its job waits for the restart
        late, self.late = self.late, []
        loss = self._loss(timings)
        return Step(
            gradient, start, end, reason, exact, residual, loss, arrivals, timings, failed, late=late,
            straggling={w: bool(self.straggling[t, w]) for w in range(scheme.n)}, messages_used=len(order),
        )  # fmt: skip

    def _note_late(self, event: Event) -> None:
        """Keep the timings of an earlier job's result (abandoned or finished after its iteration)."""
        if event.kind != "result":
            return
        result = event.result
        arrival = float("nan") if result["abandoned"] else event.at
        self.late.append(
            {"iteration": event.job.job, "worker": event.worker, "compute_start": result["compute_start"],
             "compute_end": result["ready"], "injected": result["injected"], "arrival": arrival}
        )  # fmt: skip

    def finish(self) -> list[dict]:
        """Wait briefly for work still in flight to report its timings; return them."""
        for event in self.cluster.drain(DRAIN_SECONDS):
            self._note_late(event)
        late, self.late = self.late, []
        return late

    def _stuck(self, t: int, received: dict) -> ClusterStuck:
        scheme, variant = self.scheme, self.variant
        return ClusterStuck(
            f"variant '{variant.display_label()}': iteration {t} can never finish ({len(self.cluster.dead)} of "
            f"{scheme.n} workers crashed for good, {len(received)} answered; too many for {scheme.name} with "
            f"s={scheme.s} under {variant.policy.name}); {variant.policy.stuck_hint()}."
        )

    def _timed_out(self, t: int, received: dict) -> ClusterStuck:
        return ClusterStuck(
            f"iteration {t}: the messages received within {self.timeout:g} s do not decode "
            f"({len(received)} of {self.scheme.n} workers answered); raise training.timeout or check the cluster."
        )

    def _loss(self, timings: dict[int, dict]) -> float:
        """Mean loss over the partitions the used results computed (the mini-batch loss when all are covered)."""
        losses = {j: value for result in timings.values() for j, value in result["losses"].items()}
        return float(sum(losses.values()) * self.scheme.k / len(losses)) if losses else float("nan")

    def _decode(self, received: dict, order: list[int]) -> tuple[torch.Tensor, bool, float]:
        exact, residual = self.scheme.decode_quality(order)
        gradient = torch.from_numpy(self.scheme.decode(received, d=self.d, approximate=not exact))
        return gradient, exact, residual

    def shutdown(self) -> None:
        self.cluster.shutdown()


def coverage(scheme: Scheme, order: list[int]) -> float:
    """The fraction of the mini-batch an approximate decode represents (1 when exact): mean of W R over T."""
    decoding = scheme.approximate_decoding(order)
    target = float(scheme.m * scheme.k)
    return float(np.clip(1.0 + decoding.error_coefficients.sum() / target, 0.0, None))
