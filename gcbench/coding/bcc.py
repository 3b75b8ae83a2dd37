"""Batched coupon's collector (Li, Mousavi Kalan, Avestimehr, Soltanolkotabi, 2018)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.coding._errors import check_int
from gcbench.coding._supports import BlockRepetition


def random_batches(n: int, b: int, holders: int, seed: int) -> np.ndarray:
    """Each worker's batch, drawn uniformly at random, then repaired so every batch has ``holders`` workers.

    The repair moves a random worker of the most-held batch to the least-held one until every batch has
    enough; for n well above b log b it almost never has anything to do, so the draw stays uniform.
    """
    rng = np.random.default_rng(seed)
    choice = rng.integers(b, size=n)
    counts = np.bincount(choice, minlength=b)
    while counts.min() < holders:
        short, spare = int(counts.argmin()), int(counts.argmax())
        moved = rng.choice(np.flatnonzero(choice == spare))
        choice[moved] = short
        counts[spare] -= 1
        counts[short] += 1
    return choice


class BatchedCouponCollector(BlockRepetition):
    """The partitions form b batches; each worker computes the sum of one random batch.

    - tolerates: any s stragglers (every batch keeps s + 1 workers; needs b(s+1) <= n); usually far more
    - load: ceil(n/b) partitions per worker
    - upload: 1 gradient per worker
    - decoding: one message per batch; the master waits until every batch is covered
    - reference: Li, Mousavi Kalan, Avestimehr, Soltanolkotabi, "Near-Optimal Straggler Mitigation for
      Distributed Gradient Methods", IPDPS workshops 2018
    """

    name = "bcc"
    reference = "Li et al., IPDPSW 2018"
    facts = {
        "tolerates": "any s; b(s+1) <= n",
        "load": "ceil(n/b)",
        "upload": "1",
        "decoding": "every batch covered",
    }
    defaults = {"b": 2, "seed": 0}
    hypothesis_ranges = {"seed": (0, 2**32)}
    hypothesis_max_n = 24

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(s, {"b": b}) for b in range(1, n + 1) for s in range(n // b)]

    def _check_parameters(self) -> None:
        why = f"each of b batches needs s+1={self.s + 1} of the n={self.n} workers to tolerate s stragglers"
        check_int(self.name, "b", self.params["b"], 1, self.n // (self.s + 1), why)
        check_int(self.name, "seed", self.params["seed"], 0, 2**63 - 1)

    def _blocks(self) -> tuple[list[tuple[int, ...]], np.ndarray]:
        b = self.params["b"]
        batches = [tuple(int(j) for j in batch) for batch in np.array_split(np.arange(self.k), b)]
        return batches, random_batches(self.n, b, self.s + 1, self.params["seed"])
