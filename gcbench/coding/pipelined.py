"""Pipelined CR and FR (Su and Li, "Pipelined Gradient Coding", 2026): one partition computed a step.

A worker holds the s + 1 partitions of ``cr`` or ``fr`` but computes only one of them per step, round robin
on the step's (newest) weights, and encodes from its cache: its latest gradient of each partition it holds,
some computed at earlier steps. ``pipelined_fr`` keeps FR's code (0/1 weights: each partition's gradient
enters the decode once, from one cache); ``pipelined_cr`` sends the plain sum of the cached gradients and
decodes with fixed weights, as the authors' code does, since CR's exact random code, whose weights are large
and of both signs, amplifies the differences between partition gradients of different ages (measured:
docs/coding.md, "Pipelined schemes"). The caches live with the workers (gcbench/training/cache.py); the
schedule and the ages are here, so the simulator and real mode share them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import SchemeParameterError, check_int
from gcbench.coding._supports import support_layout
from gcbench.coding.cyclic_repetition import cyclic_support
from gcbench.coding.fractional_repetition import FractionalRepetition


class PipelinedMixin:
    """What a pipelined scheme changes in the timing of the scheme it pipelines: one partition's work a step."""

    pipelined = True

    @property
    def load(self) -> int:
        """Partitions a worker computes per step (it holds s + 1: ``held``)."""
        return 1

    @property
    def held(self) -> int:
        """Partitions a worker holds and keeps a cached gradient of."""
        return max(len(p) for p in self._partitions)

    def step_load(self, worker: int) -> int:
        return 1

    def ready_after(self, message_id: int) -> int:
        """A message is sent once the step's one partition is computed (the others come from the cache)."""
        return 1

    def computes(self, worker: int, step: int) -> tuple[int, ...]:
        """The partition a worker computes at ``step``: position step mod (s + 1) of its ordered partitions.

        Every worker follows one global schedule, so in CR each partition is computed fresh by exactly one
        worker every step, and a partition's gradient is refreshed every s + 1 steps."""
        order = self.partitions(worker)
        return (order[self._step(step) % len(order)],)

    def scheduled_ages(self, worker: int, step: int) -> dict[int, int]:
        """Steps by which each cached partition gradient is old at ``step`` when every job completed (warm-up at
        step 0): the schedule the recorded staleness follows; at most min(step, s)."""
        order, step = self.partitions(worker), self._step(step)
        return {j: min(step, (step - position) % len(order)) for position, j in enumerate(order)}

    def _step(self, step: int) -> int:
        return check_int(self.name, "step", step, 0, 2**63 - 1)


def due_partitions(scheme, worker: int, step: int, cached) -> list[int]:
    """What a pipelined worker's job of ``step`` computes: the scheduled partition, and every held one its cache
    (``cached``: the partitions it holds a gradient of) lacks, so the first job, or the first after a crash,
    fills the cache."""
    held = scheme.partitions(worker)
    return list(dict.fromkeys([*scheme.computes(worker, step), *(j for j in held if j not in cached)]))


class CachedVersions:
    """Each worker's cache as versions only: partition -> the step whose weights computed its cached gradient.

    What the training workers' caches (gcbench/training/cache.py) report with each result, kept by the master
    from the timing alone when the run computes no gradients, so the recorded staleness is the same."""

    def __init__(self, scheme) -> None:
        self.scheme = scheme
        self.entries: list[dict[int, int]] = [{} for _ in range(scheme.n)]

    def computed(self, worker: int, step: int, version: int) -> dict[int, int]:
        """A job of ``step`` on the weights of ``version`` delivered its result: the cache's versions after it."""
        entries = self.entries[worker]
        for j in due_partitions(self.scheme, worker, step, entries):
            entries[j] = version
        return dict(entries)

    def lost(self, worker: int) -> None:
        """The worker's process is gone, and its cache with it."""
        self.entries[worker].clear()


def used_staleness(scheme, results, step: int) -> float:
    """The largest age, in steps, of the partition gradients that enter the decoded gradient at ``step``.

    ``results``: the used results, each with ``versions`` (partition -> the step whose weights computed its
    cached gradient). A partition enters when a message with a nonzero decoding weight has a nonzero
    coefficient on it (FR's duplicates of a group do not enter)."""
    versions: dict[int, Mapping[int, int]] = {r.job.worker: r.versions for r in results if r.versions}
    if not versions:
        return 0.0
    order = [i for w in versions for i in scheme.messages(w)]
    exact, _ = scheme.decode_quality(order)
    decoding = scheme.decoding(order) if exact else scheme.approximate_decoding(order)
    oldest = step
    for column, message_id in enumerate(decoding.message_ids):
        if not decoding.weights[:, column].any():
            continue
        used = scheme.coefficients[message_id].any(axis=0)
        held = versions[int(scheme.message_owner[message_id])]
        oldest = min([oldest, *(v for j, v in held.items() if used[j])])
    return float(step - oldest)


class PipelinedCyclicRepetition(PipelinedMixin, Scheme):
    """CR's placement (worker i holds i..i+s), one partition computed per step round robin, the plain sum of the
    cached gradients sent, and the sum of the r received scaled by n / (r (s + 1)) (the authors' code).

    - tolerates: any s stragglers (approximate, unbiased; partition gradients up to s steps stale)
    - load: 1 partition per step per worker (it holds s + 1)
    - upload: 1 gradient per worker
    - decoding: n / (r (s + 1)) on each of the r received (fixed; exact when all n answer)
    - reference: Su and Li, "Pipelined Gradient Coding", 2026 (pipelined GC-CR), as in their code
    """

    name = "pipelined_cr"
    reference = "Su & Li 2026 (pipelined GC-CR)"
    exact = False
    threshold_decodable = True
    unbiased = True
    facts = {"tolerates": "any s (approximate); stale up to s", "load": "1 (holds s + 1)", "upload": "1",
             "decoding": "n/(r(s+1)) on each of r"}  # fmt: skip

    def _layout(self) -> Layout:
        support = cyclic_support(self.n, self.s + 1)
        return support_layout(self.k, [list(parts) for parts in support], 1.0)

    def _weights(self, ids: tuple[int, ...], rows: np.ndarray) -> tuple[np.ndarray, float | None]:
        return np.full((1, len(ids)), self.n / (len(ids) * (self.s + 1))), None


class PipelinedFractionalRepetition(PipelinedMixin, FractionalRepetition):
    """FR's groups of s + 1, each member computing one of the group's partitions per step, the rest cached.

    - tolerates: any s stragglers (needs (s+1) | n; partition gradients up to s steps stale)
    - load: 1 partition per step per worker (it holds s + 1)
    - upload: 1 gradient per worker
    - decoding: one message per group, summed
    - reference: Su and Li, "Pipelined Gradient Coding", 2026 (pipelined GC-FR), on Tandon et al.'s FR
    """

    name = "pipelined_fr"
    reference = "Su & Li 2026 (pipelined GC-FR)"
    facts = {"tolerates": "any s; (s+1) | n; stale up to s", "load": "1 (holds s + 1)", "upload": "1",
             "decoding": "one message per group"}  # fmt: skip

    def _check_parameters(self) -> None:
        if self.n % (self.s + 1):
            raise SchemeParameterError(
                f"pipelined_fr needs (s+1) to divide n: s+1={self.s + 1} does not divide n={self.n}."
            )
