"""Heterogeneity-aware fractional repetition: faster groups of workers hold more partitions."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gcbench.coding._errors import bad_parameter, is_real
from gcbench.coding._supports import BlockRepetition


def apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """Integer shares of ``total``, each at least 1, as close to proportional to ``weights`` as rounding allows.

    Hamilton's method (floors, then the largest remainders), with every share raised to 1 and the excess
    taken back from the shares furthest above their quota.
    """
    quota = total * weights / weights.sum()
    counts = np.maximum(1, np.floor(quota)).astype(int)
    while counts.sum() > total:
        counts[np.argmax(np.where(counts > 1, counts - quota, -np.inf))] -= 1
    while counts.sum() < total:
        counts[np.argmax(quota - counts)] += 1
    return counts


class HeterogeneousRepetition(BlockRepetition):
    """Workers, sorted by speed, form groups of at least s+1; a group's block of partitions grows with its speed.

    - tolerates: any s stragglers (every group has at least s + 1 workers)
    - load: about n (s+1) v_i / sum(v) partitions for worker i (its group's mean speed v)
    - upload: 1 gradient per worker
    - decoding: one message per group, summed (weights 0/1: perfectly conditioned)
    - reference: Wang et al., "Heterogeneity-aware Gradient Coding for Straggler Tolerance", ICDCS 2019,
      here as fractional repetition with speed-proportional blocks
    """

    name = "heterogeneous"
    reference = "Wang et al., ICDCS 2019 (FR form)"
    slow_every_straggler_set = True  # seconds in the conformance suite: the slow lane checks every set
    facts = {
        "tolerates": "any s",
        "load": "∝ speed; n(s+1) in all",
        "upload": "1",
        "decoding": "one message per group",
    }
    defaults: dict[str, Any] = {"speeds": []}

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        uneven = [1.0 + (3 * i) % 7 for i in range(n)]  # speeds from 1 to 7, in no particular order (equal: fr)
        return [(s, {"speeds": uneven}) for s in range(n)]

    def _check_parameters(self) -> None:
        speeds = self.params["speeds"]
        valid = all(is_real(v) and math.isfinite(v) for v in speeds)
        if speeds and not (len(speeds) == self.n and valid and min(speeds) > 0):
            expected = f"empty (equal speeds) or a list of n={self.n} positive numbers"
            raise bad_parameter(self.name, "speeds", expected, speeds)

    @property
    def speeds(self) -> np.ndarray:
        return np.asarray(self.params["speeds"] or [1.0] * self.n, dtype=np.float64)

    def worker_groups(self) -> list[np.ndarray]:
        """n // (s+1) groups of consecutive workers in order of speed (fastest first), sizes differing by 1 at most."""
        order = np.argsort(-self.speeds, kind="stable")
        return np.array_split(order, self.n // (self.s + 1))

    def _blocks(self) -> tuple[list[tuple[int, ...]], np.ndarray]:
        groups = self.worker_groups()
        sizes = apportion(self.k, np.array([self.speeds[g].mean() for g in groups]))
        ends = np.cumsum(sizes)
        blocks = [tuple(range(end - size, end)) for size, end in zip(sizes, ends, strict=True)]
        block_of = np.empty(self.n, dtype=np.int64)
        for index, group in enumerate(groups):
            block_of[group] = index
        return blocks, block_of

    @property
    def construction(self) -> str:
        loads = [len(self.blocks[c]) for c in self.block_of]
        return f"{self.reference}; {len(self.blocks)} groups, loads per worker {loads}"
