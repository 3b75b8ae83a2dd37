"""Uncoded data parallelism: every worker must answer."""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import check_int


def one_partition_each(n: int) -> Layout:
    """Worker i holds partition i and sends its gradient unchanged."""
    eye = np.eye(n)
    return Layout(
        partitions=tuple((i,) for i in range(n)),
        coefficients=tuple((eye[i : i + 1],) for i in range(n)),
    )


class Uncoded(Scheme):
    """Plain synchronous data parallelism.

    - tolerates: no stragglers (s = 0)
    - load: 1 partition per worker
    - upload: 1 gradient per worker
    - decoding: sum of the n messages
    - reference: the synchronous SGD baseline
    """

    name = "uncoded"
    symmetric = True  # distinct unit rows: any r workers look alike
    reference = "synchronous SGD baseline"
    facts = {"tolerates": "none (s = 0)", "load": "1", "upload": "1", "decoding": "sum of all n messages"}
    hypothesis_max_n = 32

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(0, {})]

    def _check_parameters(self) -> None:
        check_int(self.name, "s", self.s, 0, 0, "uncoded training waits for every worker")

    def _layout(self) -> Layout:
        return one_partition_each(self.n)

    def _decodable_workers(self, workers: frozenset[int]) -> bool:
        return len(workers) == self.n

    def _structural_quality(self, key: tuple[int, ...]) -> tuple[bool, float]:
        # distinct unit rows: least squares takes each received gradient once and misses one unit per
        # missing partition, so no SVD of r x n (O(n^3) at n = 4096) is needed to say so
        return (True, 0.0) if len(key) == self.n else (False, float(np.sqrt(self.n - len(key))))

    def _weights(self, ids: tuple[int, ...], rows: np.ndarray) -> tuple[np.ndarray, float]:
        return np.ones((1, len(ids))), 1.0  # distinct unit rows: the least-squares weights

    def decode_times(self, arrivals: np.ndarray) -> np.ndarray:
        return np.atleast_2d(arrivals).max(axis=1)
