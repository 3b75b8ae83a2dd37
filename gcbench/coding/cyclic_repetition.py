"""Cyclic repetition, randomized construction (Tandon et al., ICML 2017)."""

from __future__ import annotations

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import check_int


def cyclic_support(n: int, width: int) -> tuple[tuple[int, ...], ...]:
    """Worker i holds partitions i, i+1, ..., i+width-1 (mod n)."""
    return tuple(tuple((i + t) % n for t in range(width)) for i in range(n))


def random_null_space_rows(n: int, s: int, seed: int) -> np.ndarray:
    """B (n x n): row i supported on i..i+s, every row in null(H) for a random H with H 1 = 0."""
    rng = np.random.default_rng(seed)
    h = rng.standard_normal((s, n))
    h[:, -1] = -h[:, :-1].sum(axis=1)
    b = np.zeros((n, n))
    for i, support in enumerate(cyclic_support(n, s + 1)):
        b[i, support[0]] = 1.0
        if s:
            b[i, list(support[1:])] = np.linalg.solve(h[:, list(support[1:])], -h[:, support[0]])
    return b


def rows_as_layout(b: np.ndarray, width: int) -> Layout:
    """Layout with one message per worker whose coefficients are the rows of b (scaled to max 1)."""
    n = b.shape[0]
    scaled = b / np.abs(b).max(axis=1, keepdims=True)
    return Layout(cyclic_support(n, width), tuple((scaled[i : i + 1],) for i in range(n)))


class CyclicRepetition(Scheme):
    """Worker i holds partitions i..i+s (mod n) and sends one random combination of them.

    - tolerates: any s stragglers
    - load: s + 1 partitions per worker
    - upload: 1 gradient per worker
    - decoding: solve for n - s weights; conditioning degrades quickly with n, so
      ill-conditioned (n, s, seed) are refused
    - reference: Tandon et al., ICML 2017, randomized construction (Algorithm 2)
    """

    name = "cr"
    reference = "Tandon et al., ICML 2017"
    facts = {"tolerates": "any s", "load": "s + 1", "upload": "1", "decoding": "n - s weights (random, seeded)"}
    defaults = {"seed": 0}
    hypothesis_ranges = {"seed": (0, 2**32)}
    checks_conditioning = True
    threshold_decodable = True

    def _check_parameters(self) -> None:
        check_int(self.name, "seed", self.params["seed"], 0, 2**63 - 1)

    @property
    def alternatives(self) -> str:
        return "try another seed, cyclic_mds, or fr / cce_fr, which are always well conditioned"

    def _layout(self) -> Layout:
        return rows_as_layout(random_null_space_rows(self.n, self.s, self.params["seed"]), self.s + 1)
