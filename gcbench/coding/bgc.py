"""Bernoulli gradient code (Charles, Papailiopoulos, Ellenberg, 2017)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import check_int
from gcbench.coding._supports import support_layout


def bernoulli_supports(n: int, k: int, d: int, seed: int) -> list[list[int]]:
    """Worker i holds partition j with probability d/k, independently; an empty worker gets one random partition."""
    rng = np.random.default_rng(seed)
    held = rng.random((n, k)) < d / k
    supports = [np.flatnonzero(row).tolist() for row in held]
    for support in supports:
        if not support:  # a worker with nothing to compute would send nothing: give it one partition
            support.append(int(rng.integers(k)))
    return supports


class BernoulliGradientCode(Scheme):
    """Each worker holds each partition with probability d/n and sends their sum; least-squares decoding.

    - tolerates: any s (approximate; a partition no responder holds is lost)
    - load: about d partitions per worker (random; ``load`` is the busiest worker's)
    - upload: 1 gradient per worker
    - decoding: least squares (the optimal decoder); the residual reports the error
    - reference: Charles, Papailiopoulos, Ellenberg, "Approximate gradient coding via sparse random
      graphs", 2017 (BGC)
    """

    name = "bgc"
    reference = "Charles, Papailiopoulos, Ellenberg, 2017"
    slow_every_straggler_set = True  # seconds in the conformance suite: the slow lane checks every set
    exact = False
    threshold_decodable = True
    facts = {"tolerates": "any s (approximate)", "load": "d on average", "upload": "1", "decoding": "least squares"}
    defaults = {"d": 2, "seed": 0}
    hypothesis_ranges = {"seed": (0, 2**32)}
    hypothesis_max_n = 24

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(s, {"d": d}) for d in range(1, n + 1) for s in range(n)]

    def _check_parameters(self) -> None:
        check_int(self.name, "d", self.params["d"], 1, self.n, "the expected replication of each partition")
        check_int(self.name, "seed", self.params["seed"], 0, 2**63 - 1)

    def _layout(self) -> Layout:
        return support_layout(self.k, bernoulli_supports(self.n, self.k, self.params["d"], self.params["seed"]))
