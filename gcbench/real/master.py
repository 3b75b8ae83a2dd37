"""The master (parameter server) on Ray: dispatch, wait as the policy says, decode, step, publish weights once."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from gcbench.coding import Scheme
from gcbench.errors import GcbenchError
from gcbench.models.draws import draw_run
from gcbench.real.batches import PartitionSampler
from gcbench.real.data import Dataset
from gcbench.real.gradients import apply_gradient, flat_parameters
from gcbench.real.local import make_optimizer
from gcbench.real.models import build_model
from gcbench.real.worker import GradientWorker
from gcbench.scenario.schema import Scenario, Variant


class ClusterStuck(GcbenchError):
    """No decodable set of messages arrived within the timeout."""


@dataclass
class Step:
    """One iteration as the master saw it (times are seconds since the run's origin)."""

    gradient: torch.Tensor
    start: float
    end: float
    reason: str
    exact: bool
    residual: float
    loss: float
    arrivals: dict[int, float] = field(default_factory=dict)
    timings: dict[int, dict] = field(default_factory=dict)


class RayMaster:
    """Drives n GradientWorker actors through synchronous iterations of one variant."""

    def __init__(self, scenario: Scenario, variant: Variant, scheme: Scheme, data: Dataset, seed: int, device: str):
        import ray

        self.ray, self.scenario, self.variant, self.scheme = ray, scenario, variant, scheme
        training = scenario.training
        self.timeout = training.timeout
        self.model = build_model(training.model, data.classes, seed)
        self.optimizer = make_optimizer(self.model, training)
        self.sampler = PartitionSampler(len(data.train_labels), scheme.k, training.batch_size, seed)
        self.straggling = draw_run(scenario, scheme, seed).straggling  # the simulator's streams
        self.d = int(sum(p.numel() for p in self.model.parameters()))
        shards = []
        for shard in self.sampler.shards:
            shards.append(ray.put((data.train_images[shard], data.train_labels[shard], int(shard[0]))))
        setup = {
            "device": device, "model": training.model, "classes": data.classes, "seed": seed,
            "samples": len(data.train_labels), "batch_size": training.batch_size, "straggling": scenario.straggling,
        }  # fmt: skip
        spec = {"name": scheme.name, "n": scheme.n, "s": scheme.s, "params": dict(scheme.params)}
        # abandon runs in its own thread ("control"), so it never waits behind queued computes
        actor = ray.remote(concurrency_groups={"control": 1}, num_cpus=0)(GradientWorker)
        self.actors = []
        for w in range(scheme.n):
            held = {j: ray.get(shards[j]) for j in scheme.partitions(w)}
            self.actors.append(actor.remote(w, spec, held, setup))
        self._wait_ready()
        self.origin = time.time()

    def _wait_ready(self) -> None:
        pings = [a.ping.remote() for a in self.actors]
        ready, _ = self.ray.wait(pings, num_returns=len(pings), timeout=self.timeout)
        if len(ready) < len(pings):
            raise ClusterStuck(f"only {len(ready)} of {len(pings)} workers started within {self.timeout:g} s.")

    def step(self, t: int) -> Step:
        """Run iteration t: dispatch, collect until the policy stops, decode, and update the model."""
        ray, scheme, policy = self.ray, self.scheme, self.variant.policy
        weights = ray.put(flat_parameters(self.model).numpy())  # published once, shared by every worker
        start = time.time()
        futures = {a.compute.remote(t, weights, bool(self.straggling[t, w])): w for w, a in enumerate(self.actors)}
        pending, received, order, arrivals, timings = list(futures), {}, [], {}, {}
        wake, reason = policy.wake_at(), None
        while reason is None:
            elapsed = time.time() - start
            budget = min(self.timeout, wake) - elapsed
            done, pending = ray.wait(pending, num_returns=1, timeout=max(0.0, budget)) if pending else ([], [])
            elapsed = time.time() - start
            if not done:
                if elapsed >= wake:
                    reason, wake = policy.stop_now(scheme, order, elapsed, not pending), float("inf")
                    continue
                raise ClusterStuck(
                    f"iteration {t}: the messages received within {self.timeout:g} s do not decode "
                    f"({len(received)} of {scheme.n} workers answered); raise training.timeout or check the cluster."
                )
            result = ray.get(done[0])
            if result["abandoned"]:
                continue
            w = futures[done[0]]
            received[w], arrivals[w], timings[w] = result["messages"], elapsed, result
            order += scheme.messages(w)
            reason = policy.stop_now(scheme, order, elapsed, not pending)
        if self.scenario.stale_work == "abandon":
            for ref in pending:
                self.actors[futures[ref]].abandon.options(concurrency_group="control").remote(t)
        gradient, exact, residual = self._decode(received, order)
        apply_gradient(self.model, self.optimizer, gradient)
        end = time.time()
        loss = self._loss(timings)
        return Step(gradient, start - self.origin, end - self.origin, reason, exact, residual, loss, arrivals, timings)

    def _loss(self, timings: dict[int, dict]) -> float:
        """Mini-batch loss from the partitions the used workers computed (NaN if some partition is missing)."""
        losses = {j: value for result in timings.values() for j, value in result["losses"].items()}
        return float(sum(losses.values())) if len(losses) == self.scheme.k else float("nan")

    def _decode(self, received: dict, order: list[int]) -> tuple[torch.Tensor, bool, float]:
        exact = self.scheme.exact and self.scheme.can_decode(order)
        gradient = torch.from_numpy(self.scheme.decode(received, d=self.d, approximate=not exact))
        residual = 0.0 if exact else self.scheme.approximate_decoding(order).residual
        return gradient, exact, residual

    def shutdown(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
