"""Asynchronous policies on Ray (Dutta et al., AISTATS 2018), with the simulator's semantics.

Workers compute continuously. The master updates the model after k results
(``k_batch_async`` and ``async``: any k; ``k_async``: k from distinct workers).
With ``k_async`` the k workers restart on the new model after the update; with
the others a worker restarts at once on the newest model the master has
published, so results can be stale (recorded per update as ``staleness``).

An update decodes the k results with the scheme's least-squares weights and
divides by the fraction of a mini-batch they represent (``coverage``), so every
update is a mean-gradient estimate whatever k is. When one worker contributes
two results to an update (possible with ``k_batch_async``), its messages are
averaged. Worker w's j-th job computes its partitions of mini-batch j and uses
row j (mod iterations) of the run's straggling and crash draws, as in the
simulator; a job started after recovering from a crash does not crash.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from gcbench.real.master import ClusterStuck, RayMaster, Step, coverage


class AsyncRayMaster(RayMaster):
    """The master of an asynchronous policy: each yielded Step is one model update."""

    def steps(self, first: int, last: int) -> Iterator[Step]:
        cluster, scheme, policy = self.cluster, self.scheme, self.variant.policy
        iterations = self.scenario.iterations
        jobs = [first] * scheme.n  # each worker's next mini-batch index (a resumed run does not repeat batches)
        serial = getattr(self, "next_job", 0)  # job ids, increasing over the run's blocks, for abandon
        version_of: dict[int, int] = {}  # job id -> model version it started from
        to_start = {w: True for w in range(scheme.n)}  # worker -> whether its next job may crash
        weights = self.ray.put(self.flat.weights())
        version, batch, failed = first, [], set()
        previous = progress = time.time()
        while version < last:
            now = time.time()
            for w in [w for w in to_start if cluster.available(w, now)]:
                row = jobs[w] % iterations
                crash = to_start.pop(w) and bool(self.crash[row, w])
                straggling, overhead = bool(self.straggling[row, w]), float(self.overhead[row, w])
                cluster.submit(w, serial, weights, straggling, crash, jobs[w], overhead)
                version_of[serial], jobs[w], serial = version, jobs[w] + 1, serial + 1
                self.next_job = serial
                if crash:
                    failed.add(w)
            for w in [w for w in to_start if w in cluster.dead]:
                del to_start[w]
            if not cluster.jobs and not cluster.pings and not to_start:
                left = scheme.n - len(cluster.dead)
                why = "every worker crashed for good" if not left else (
                    f"{left} worker(s) left, fewer than the {policy.batch} distinct results {policy.name} waits for"
                )  # fmt: skip
                raise ClusterStuck(
                    f"variant '{self.variant.display_label()}': update {version} can never finish ({why}); "
                    "give failures.downtime."
                )
            event = cluster.next_event(min(progress + self.timeout, cluster.next_recovery(to_start)))
            now = time.time()
            if event is None:
                if now >= progress + self.timeout:
                    raise ClusterStuck(
                        f"update {version}: no result arrived within {self.timeout:g} s; "
                        "raise training.timeout or check the cluster."
                    )
                continue
            progress = now
            if event.kind == "failed":
                failed.add(event.worker)
                if event.worker not in cluster.dead and event.job is not None:
                    to_start.setdefault(event.worker, False)  # back after its downtime; that job does not crash
                continue
            if event.kind != "result" or event.result["abandoned"] or event.job.job not in version_of:
                continue  # (a job of an earlier block, still in flight when that block ended, is not used)
            batch.append((event, version_of.pop(event.job.job)))
            if not policy.distinct:
                to_start[event.worker] = True
            if len(batch) < policy.batch:
                continue
            step = self._update(batch, version, previous, failed)
            weights = self.ray.put(self.flat.weights())
            version, failed = version + 1, set()
            if policy.distinct:
                to_start.update({event.worker: True for event, _ in batch})
            batch = []
            yield step
            previous = time.time()  # the caller's evaluation and checkpoints are not part of the next update
        cluster.abandon(list(cluster.jobs.values()))

    def _note_late(self, event) -> None:
        """Unused asynchronous results are not recorded (the workers table has the used ones, as simulated)."""

    def _update(self, batch: list, version: int, previous: float, failed: set[int]) -> Step:
        by_worker: dict[int, list] = {}
        for event, _ in batch:
            by_worker.setdefault(event.worker, []).append(event.result)
        received = {w: _average([r["messages"] for r in results]) for w, results in by_worker.items()}
        order = [i for w in received for i in self.scheme.messages(w)]
        gradient, exact, residual = self._decode(received, order)
        if not exact:
            gradient = gradient / max(coverage(self.scheme, order), 1e-12)
        self.flat.step(gradient)
        end = time.time()
        timings = {event.worker: event.result for event, _ in batch}
        arrivals = {event.worker: event.at - previous for event, _ in batch}
        staleness = version - float(np.mean([v for _, v in batch]))
        loss = self._loss(timings)
        return Step(
            gradient, previous, end, "k_results", exact, residual, loss, arrivals, timings, set(failed),
            staleness=staleness, straggling={event.worker: event.result["straggling"] for event, _ in batch},
            messages_used=len(batch) * self.scheme.messages_per_worker,
        )  # fmt: skip


def _average(message_lists: list[list[np.ndarray]]) -> list[np.ndarray]:
    if len(message_lists) == 1:
        return message_lists[0]
    return [np.mean(np.stack(parts), axis=0) for parts in zip(*message_lists, strict=True)]
