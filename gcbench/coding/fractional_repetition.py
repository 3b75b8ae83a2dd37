"""Fractional repetition (Tandon et al., ICML 2017)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import SchemeParameterError

SMALL_GROUP = 16  # up to this group size, a minimum per member beats numpy's reduction over the group (measured)
FEW_GROUPS = 64  # up to this many groups, a maximum per group beats numpy's reduction over them
BLOCK_ELEMENTS = 1 << 17  # rows taken a block at a time: 1 MiB of arrivals, in a core's L2 cache for every member


def divisors(n: int) -> list[int]:
    """The group sizes that split n workers evenly."""
    return [g for g in range(1, n + 1) if n % g == 0]


def groups(n: int, size: int) -> list[range]:
    """Consecutive blocks of ``size`` indices covering range(n)."""
    return [range(start, start + size) for start in range(0, n, size)]


class FractionalRepetition(Scheme):
    """Workers form n/(s+1) groups of s+1; a group shares s+1 partitions and each member sends their sum.

    - tolerates: any s stragglers (needs (s+1) | n); more when they fall in different groups
    - load: s + 1 partitions per worker
    - upload: 1 gradient per worker
    - decoding: one message per group, summed (weights 0/1)
    - reference: Tandon, Lei, Dimakis, Karampatziakis, "Gradient Coding", ICML 2017
    """

    name = "fr"
    reference = "Tandon et al., ICML 2017"
    facts = {"tolerates": "any s; (s+1) | n", "load": "s + 1", "upload": "1", "decoding": "one message per group"}
    hypothesis_max_n = 32

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(g - 1, {}) for g in divisors(n)]

    def _check_parameters(self) -> None:
        if self.n % (self.s + 1):
            raise SchemeParameterError(f"fr needs (s+1) to divide n: s+1={self.s + 1} does not divide n={self.n}.")

    def _layout(self) -> Layout:
        partitions, coefficients = [], []
        for block in groups(self.n, self.s + 1):
            row = np.zeros((1, self.k))
            row[0, list(block)] = 1.0
            for _ in block:
                partitions.append(tuple(block))
                coefficients.append((row,))
        return Layout(tuple(partitions), tuple(coefficients))

    def _decodable_workers(self, workers: frozenset[int]) -> bool:
        return all(workers.intersection(block) for block in groups(self.n, self.s + 1))

    def decode_times(self, arrivals: np.ndarray) -> np.ndarray:
        """The slowest group's fastest worker."""
        arrivals = np.atleast_2d(arrivals)
        size = self.s + 1
        if size > SMALL_GROUP:
            return arrivals.reshape(len(arrivals), -1, size).min(axis=2).max(axis=1)
        rows = max(1, BLOCK_ELEMENTS // arrivals.shape[1])
        decoded = np.empty(len(arrivals), dtype=arrivals.dtype)
        for first in range(0, len(arrivals), rows):
            decoded[first : first + rows] = slowest_group(arrivals[first : first + rows], size)
        return decoded


def slowest_group(arrivals: np.ndarray, size: int) -> np.ndarray:
    """Per row, the latest of the groups' earliest arrivals (groups: consecutive columns, ``size`` each).

    numpy reduces a short inner axis several times slower than it takes the minimum of whole arrays, so the
    groups' earliest arrivals are one minimum per member over strided column slices: column g of
    ``fastest`` is the minimum of columns g * size + j over the members j."""
    fastest = arrivals[:, 0::size].copy()
    for member in range(1, size):
        np.minimum(fastest, arrivals[:, member::size], out=fastest)
    if fastest.shape[1] > FEW_GROUPS:
        return fastest.max(axis=1)
    # likewise the latest of a few groups: one maximum per group (3 groups: 14 times faster than max(axis=1))
    latest = fastest[:, 0].copy()
    for group in range(1, fastest.shape[1]):
        np.maximum(latest, fastest[:, group], out=latest)
    return latest
