"""Expander-graph codes (Raviv, Tamo, Tandon, Dimakis): a d-regular graph's adjacency as the assignment."""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import SchemeParameterError, bad_parameter, check_int
from gcbench.coding._supports import support_layout

DECODERS = ("optimal", "fixed")
_ATTEMPTS = 200  # draws per cycle or matching before the graph is given up (simple graphs need d << n)


def _add_edges(adjacency: np.ndarray, order: np.ndarray, closed: bool) -> bool:
    """Add the path (a cycle if ``closed``, else a perfect matching) through ``order``; False on a repeated edge."""
    if closed:
        pairs = list(zip(order, np.roll(order, -1), strict=True))
    else:
        pairs = list(zip(order[0::2], order[1::2], strict=True))
    if any(adjacency[a, b] for a, b in pairs):
        return False
    for a, b in pairs:
        adjacency[a, b] = adjacency[b, a] = 1
    return True


def random_regular_graph(n: int, d: int, seed: int) -> np.ndarray | None:
    """A simple d-regular graph: d // 2 random Hamiltonian cycles plus a random perfect matching when d is odd.

    Random regular graphs are near-Ramanujan expanders with high probability (Friedman). None when the
    draws keep repeating edges (d too close to n).
    """
    if d == n - 1:
        return np.ones((n, n), dtype=np.int8) - np.eye(n, dtype=np.int8)
    rng = np.random.default_rng(seed)
    adjacency = np.zeros((n, n), dtype=np.int8)
    for closed in [True] * (d // 2) + [False] * (d % 2):
        if not any(_add_edges(adjacency, rng.permutation(n), closed) for _ in range(_ATTEMPTS)):
            return None
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
    exact = False
    threshold_decodable = True
    facts = {"tolerates": "any s (approximate)", "load": "d; n d even", "upload": "1", "decoding": "least squares"}
    defaults = {"d": 4, "seed": 0, "decoder": "optimal"}
    hypothesis_ranges = {"seed": (0, 2**32)}
    hypothesis_max_n = 20

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        degrees = [d for d in range(1, min(n - 1, 4) + 1) if n * d % 2 == 0 and (d == n - 1 or 2 * d < n)]
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
        if self.graph is None:
            raise SchemeParameterError(
                f"expander could not draw a simple {d}-regular graph on n={self.n} vertices; use a smaller d."
            )
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
