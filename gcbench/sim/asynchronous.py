"""The event engine for asynchronous policies, on SimPy (Dutta et al., AISTATS 2018).

Every worker is a SimPy process that computes, sends, and starts again on the
newest model: at once (``k_batch_async``, ``async``) or, for ``k_async``, when
the master's next update comes. The master takes results from a store, updates
after k of them, and records each update as one iteration. A shared ingress link
is a SimPy resource that messages queue for.
"""

from __future__ import annotations

import numpy as np
import simpy

from gcbench.coding import Scheme
from gcbench.models.compute import compute_times
from gcbench.scenario.schema import Scenario, Variant
from gcbench.sim.synchronous import message_bytes, random_streams
from gcbench.sim.tables import RunRecorder


class _Cluster:
    """Shared state of one asynchronous run."""

    def __init__(self, scenario: Scenario, variant: Variant, scheme: Scheme, seed: int) -> None:
        self.env = simpy.Environment()
        self.scenario, self.policy, self.scheme = scenario, variant.policy, scheme
        n, iterations = scenario.workers, scenario.iterations
        self.loads = np.array([len(scheme.partitions(w)) for w in range(n)], dtype=float)
        streams = random_streams(seed)
        work = compute_times(scenario.compute, streams["compute"], iterations, self.loads)
        self.mask = scenario.straggling.draw(streams["straggling"], iterations, n)
        self.injected = scenario.straggling.penalty(work, self.loads, self.mask)
        self.busy = work + self.injected
        self.failure_rng = streams["failures"]
        network = scenario.network
        self.transfer = 0.0 if network.bandwidth is None else message_bytes(scenario, scheme) / network.bandwidth
        self.link = simpy.Resource(self.env, capacity=1) if network.shared_link and self.transfer else None
        self.inbox = simpy.Store(self.env)
        self.version = 0
        self.updated = self.env.event()
        self.rec = RunRecorder(iterations, n)
        self.rec.compute_start[:] = np.nan
        self.rec.compute_end[:] = np.nan
        self.rec.arrival[:] = np.nan

    def worker(self, w: int):
        env, scenario, downtime = self.env, self.scenario, getattr(self.scenario.failures, "downtime", None)
        job = 0
        while True:
            row = job % scenario.iterations
            start, version, seconds = env.now, self.version, self.busy[row, w]
            if scenario.failures.crashes(self.failure_rng, self.busy[row : row + 1, w])[0]:
                self.rec.failed[min(self.version, scenario.iterations - 1), w] = True
                if downtime is None:
                    return
                yield env.timeout(downtime)
                continue
            yield env.timeout(seconds)
            ready = env.now
            yield env.timeout(scenario.network.latency)
            if self.link is None:
                yield env.timeout(self.transfer)
            else:
                with self.link.request() as slot:
                    yield slot
                    yield env.timeout(self.transfer)
            self.inbox.put((w, row, start, ready, env.now, version))
            job += 1
            if self.policy.distinct:
                yield self.updated

    def master(self):
        rec, k = self.rec, self.policy.batch
        previous = 0.0
        for t in range(self.scenario.iterations):
            batch = []
            while len(batch) < k:
                batch.append((yield self.inbox.get()))
            now = self.env.now
            rec.start[t], rec.end[t], rec.duration[t] = previous, now, now - previous
            rec.reason[t] = "k_results"
            rec.staleness[t] = np.mean([self.version - item[5] for item in batch])
            for w, row, start, ready, arrival, _ in batch:
                rec.used[t, w] = True
                rec.compute_start[t, w], rec.compute_end[t, w], rec.arrival[t, w] = start, ready, arrival
                rec.straggling[t, w], rec.injected[t, w] = self.mask[row, w], self.injected[row, w]
            ids = sorted({m for w, *_ in batch for m in self.scheme.messages(w)})
            decoding = self.scheme.approximate_decoding(ids)
            rec.exact[t] = self.scheme.exact and decoding.exact
            rec.residual[t] = 0.0 if rec.exact[t] else decoding.residual
            previous = now
            self.version += 1
            self.updated.succeed()
            self.updated = self.env.event()


def simulate_asynchronous(scenario: Scenario, variant: Variant, scheme: Scheme, seed: int) -> RunRecorder:
    """Simulate an asynchronous policy; each recorded iteration is one model update."""
    cluster = _Cluster(scenario, variant, scheme, seed)
    for w in range(scenario.workers):
        cluster.env.process(cluster.worker(w))
    master = cluster.env.process(cluster.master())
    cluster.env.run(until=master)
    return cluster.rec
