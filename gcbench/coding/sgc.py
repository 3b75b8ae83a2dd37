"""Stochastic gradient coding (Bitar, Wootters, El Rouayheb): a pair-wise balanced assignment, an unbiased sum."""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import check_int
from gcbench.coding._supports import support_layout


def sidon_offsets(n: int, d: int) -> tuple[list[int], bool]:
    """d offsets in Z_n, greedily chosen so that all their differences differ (a modular Sidon set).

    Worker i holding partitions i + offsets then shares at most one worker between any two partitions,
    the most balanced a pair-wise design with d(d-1) < n can be. When no such set is found the offsets
    are completed with the smallest unused ones, and the second value is False.
    """
    offsets, differences = [0], set()
    for candidate in range(1, n):
        if len(offsets) == d:
            break
        new = {(candidate - o) % n for o in offsets} | {(o - candidate) % n for o in offsets}
        if len(new) == 2 * len(offsets) and not new & differences:
            offsets.append(candidate)
            differences |= new
    balanced = len(offsets) == d
    offsets += [c for c in range(n) if c not in offsets][: d - len(offsets)]
    return offsets, balanced


class StochasticGradientCoding(Scheme):
    """Each partition goes to d workers, any two partitions sharing at most one; the master sums what arrives.

    - tolerates: any s (approximate: unbiased when each worker straggles with probability p = s/n)
    - load: d partitions per worker
    - upload: 1 gradient per worker
    - decoding: 1/(d(1 - p)) times the sum of the received messages, p = s/n; ``error_variance`` reports
      E||W R - T||^2 under independent stragglers
    - reference: Bitar, Wootters, El Rouayheb, "Stochastic Gradient Coding for Straggler Mitigation in
      Distributed Learning", IEEE JSAIT 2020
    """

    name = "sgc"
    reference = "Bitar, Wootters, El Rouayheb, JSAIT 2020"
    slow_every_straggler_set = True  # seconds in the conformance suite: the slow lane checks every set
    exact = False
    threshold_decodable = True
    unbiased = True
    facts = {
        "tolerates": "any s (approximate, unbiased)",
        "load": "d",
        "upload": "1",
        "decoding": "sum / (d(1-p)), p = s/n",
    }
    defaults = {"d": 2}
    hypothesis_max_n = 24

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(s, {"d": d}) for d in range(1, n + 1) for s in range(n)]

    def _check_parameters(self) -> None:
        check_int(self.name, "d", self.params["d"], 1, self.n, "the replication of each partition")

    @property
    def p(self) -> float:
        """The straggling probability the estimator assumes."""
        return self.s / self.n

    @property
    def construction(self) -> str:
        balance = "every two partitions share at most one worker" if self.balanced else "not pair-wise balanced"
        return (
            f"{self.reference}; worker i holds i + {self.offsets} (mod n), {balance}; "
            f"E||W R - T||^2 = {self.error_variance():.4g} with p = s/n"
        )

    def _layout(self) -> Layout:
        self.offsets, self.balanced = sidon_offsets(self.n, self.params["d"])
        return support_layout(self.k, [[(i + o) % self.n for o in self.offsets] for i in range(self.n)])

    def _weights(self, ids: tuple[int, ...], rows: np.ndarray) -> tuple[np.ndarray, None]:
        return np.full((1, len(ids)), 1.0 / (self.params["d"] * (1.0 - self.p))), None

    def error_variance(self) -> float:
        """E||W R - T||_F^2 when each worker straggles independently with probability p = s/n.

        Each message's weight times its presence has mean 1/d, so the error is sum_i w (X_i - (1-p)) r_i
        and its mean square is w^2 p (1-p) sum_i ||r_i||^2 = p n / ((1 - p) d).
        """
        return self.p * self.n / ((1.0 - self.p) * self.params["d"])

    def gradient_variance(self, partition_grads: np.ndarray) -> float:
        """E||decoded - g||^2 for these partition gradients (k x dim) under the same straggling."""
        messages = self.assignment_matrix().astype(np.float64) @ np.asarray(partition_grads, dtype=np.float64)
        weight = 1.0 / (self.params["d"] * (1.0 - self.p))
        return float(weight**2 * self.p * (1.0 - self.p) * (messages**2).sum())
