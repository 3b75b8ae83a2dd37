"""Expander-graph codes (Raviv, Tamo, Tandon, Dimakis): a d-regular graph's adjacency as the assignment."""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import SchemeParameterError, bad_parameter, check_int
from gcbench.coding._supports import support_layout

DECODERS = ("optimal", "fixed")
SWAPS_PER_EDGE = 10  # double-edge swaps per edge: enough to forget the circulant start (mixing is O(log n) per edge)


def circulant(n: int, d: int) -> np.ndarray:
    """The d-regular circulant graph: i ~ i ± 1, ..., i ± d//2, and i ~ i + n/2 when d is odd (n is then even)."""
    adjacency = np.zeros((n, n), dtype=np.int8)
    steps = list(range(1, d // 2 + 1)) + ([n // 2] if d % 2 else [])
    for i in range(n):
        for step in steps:
            adjacency[i, (i + step) % n] = adjacency[(i + step) % n, i] = 1
    return adjacency


def random_regular_graph(n: int, d: int, seed: int) -> np.ndarray:
    """A random simple d-regular graph (n d even): the circulant, shuffled by seeded double-edge swaps.

    A swap replaces edges ab, ce by ac, be (or ae, bc) unless that makes a loop or a repeated edge, so
    every step stays simple and d-regular; random regular graphs are near-Ramanujan expanders with high
    probability (Friedman). A dense graph is the complement of a sparse one, where swaps mix faster.
    """
    if 2 * d > n - 1:
        return (1 - random_regular_graph(n, n - 1 - d, seed) - np.eye(n, dtype=np.int8)).astype(np.int8)
    adjacency = circulant(n, d)
    edges = [tuple(edge) for edge in np.argwhere(np.triu(adjacency))]
    rng = np.random.default_rng(seed)
    for _ in range(SWAPS_PER_EDGE * len(edges) if len(edges) > 1 else 0):
        first, second = rng.choice(len(edges), size=2, replace=False)
        (a, b), (c, e) = edges[first], edges[second]
        if rng.random() < 0.5:
            c, e = e, c
        if len({a, b, c, e}) < 4 or adjacency[a, c] or adjacency[b, e]:
            continue
        adjacency[a, b] = adjacency[b, a] = adjacency[c, e] = adjacency[e, c] = 0
        adjacency[a, c] = adjacency[c, a] = adjacency[b, e] = adjacency[e, b] = 1
        edges[first], edges[second] = (a, c), (b, e)
    return adjacency


def second_eigenvalue(adjacency: np.ndarray) -> float:
    """lambda: the largest |eigenvalue| after the degree d (d for a disconnected or bipartite graph)."""
    values = np.sort(np.abs(np.linalg.eigvalsh(adjacency.astype(np.float64))))
    return float(values[-2]) if len(values) > 1 else 0.0


class ExpanderCode(Scheme):
    """Worker i holds the d partitions adjacent to vertex i of a random d-regular graph and sends their mean.

    - tolerates: any s (approximate; error at most (lambda/d)^2 n s/(n - s) for the fixed decoder)
    - load: d partitions per worker (needs n d even, d < n)
    - upload: 1 gradient per worker
    - decoding: least squares (``decoder: optimal``) or n/r on each of the r received (``decoder: fixed``,
      n/(n - s) at the threshold)
    - reference: Raviv, Tamo, Tandon, Dimakis, "Gradient Coding from Cyclic MDS Codes and Expander Graphs",
      ICML 2018 / IEEE Trans. IT 2020
    """

    name = "expander"
    reference = "Raviv, Tamo, Tandon, Dimakis, ICML 2018"
    slow_every_straggler_set = True  # seconds in the conformance suite: the slow lane checks every set
    exact = False
    threshold_decodable = True
    facts = {"tolerates": "any s (approximate)", "load": "d; n d even", "upload": "1", "decoding": "least squares"}
    defaults = {"d": 4, "seed": 0, "decoder": "optimal"}
    hypothesis_ranges = {"seed": (0, 2**32)}
    hypothesis_max_n = 20

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        degrees = [d for d in range(1, n) if n * d % 2 == 0]
        return [(s, {"d": d, "decoder": decoder}) for d in degrees for s in range(n) for decoder in DECODERS]

    def _check_parameters(self) -> None:
        d = check_int(self.name, "d", self.params["d"], 1, self.n - 1, "the degree of the graph")
        check_int(self.name, "seed", self.params["seed"], 0, 2**63 - 1)
        if self.params["decoder"] not in DECODERS:
            raise bad_parameter(self.name, "decoder", "optimal or fixed", self.params["decoder"])
        if self.n * d % 2:
            raise SchemeParameterError(f"expander needs n d even for a d-regular graph: n={self.n}, d={d}.")

    def _layout(self) -> Layout:
        d = self.params["d"]
        self.graph = random_regular_graph(self.n, d, self.params["seed"])
        self.spectral_gap = d - second_eigenvalue(self.graph)
        return support_layout(self.k, [np.flatnonzero(row).tolist() for row in self.graph], 1.0 / d)

    @property
    def error_bound(self) -> float:
        """Raviv et al.'s bound on ||W R - T||^2 for the fixed decoder from any n - s workers."""
        d = self.params["d"]
        return ((d - self.spectral_gap) / d) ** 2 * self.n * self.s / (self.n - self.s)

    @property
    def construction(self) -> str:
        return (
            f"{self.reference}; random {self.params['d']}-regular graph (seed {self.params['seed']}), "
            f"lambda = {self.params['d'] - self.spectral_gap:.3g}; fixed-decoder error bound {self.error_bound:.3g}"
        )

    def _weights(self, ids: tuple[int, ...], rows: np.ndarray) -> tuple[np.ndarray, float | None]:
        if self.params["decoder"] == "fixed":
            return np.full((1, len(ids)), self.n / len(ids)), None
        return super()._weights(ids, rows)
