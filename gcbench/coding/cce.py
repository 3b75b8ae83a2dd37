"""Communication-computation efficient gradient coding (Ye & Abbe, ICML 2018)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import SchemeParameterError, check_int
from gcbench.coding._polynomial import chebyshev_mds, top_coefficient_code
from gcbench.coding.cyclic_repetition import cyclic_support
from gcbench.coding.fractional_repetition import divisors, groups


def _normalised(c: np.ndarray) -> np.ndarray:
    return c / np.abs(c).max()


class CCECyclic(Scheme):
    """Worker i holds partitions i..i+s+m-1 (mod n) and sends one vector of length d/m.

    - tolerates: any s stragglers (needs s + m <= n)
    - load: s + m partitions per worker
    - upload: 1/m of a gradient per worker
    - decoding: interpolate the top m coefficients from n - s evaluations; refused when ill-conditioned
    - reference: Ye & Abbe, "Communication-Computation Efficient Gradient Coding", ICML 2018
    """

    name = "cce_cr"
    reference = "Ye & Abbe, ICML 2018"
    slow_every_straggler_set = True  # seconds in the conformance suite: the slow lane checks every set
    facts = {"tolerates": "any s; s + m <= n", "load": "s + m", "upload": "1/m", "decoding": "interpolation"}
    defaults = {"m": 2}
    hypothesis_max_n = 13
    checks_conditioning = True
    threshold_decodable = True

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(s, {"m": m}) for s in range(n) for m in range(1, n - s + 1)]

    def _check_parameters(self) -> None:
        check_int(self.name, "m", self.m, 1, self.n - self.s, f"s + m must be at most n={self.n}")

    def _layout(self) -> Layout:
        code = top_coefficient_code(self.n, self.s, self.m)
        return Layout(cyclic_support(self.n, self.s + self.m), tuple((_normalised(c),) for c in code))


class CCEFractional(Scheme):
    """Groups of s+m workers share s+m partitions; each sends one MDS-coded slice of the group's sum.

    - tolerates: any s stragglers (needs (s+m) | n); any m workers of a group decode it
    - load: s + m partitions per worker
    - upload: 1/m of a gradient per worker
    - decoding: an m x m solve per group
    - reference: the fractional-repetition form of Ye & Abbe, ICML 2018
    """

    name = "cce_fr"
    reference = "Ye & Abbe, ICML 2018 (fractional form)"
    slow_every_straggler_set = True  # seconds in the conformance suite: the slow lane checks every set
    facts = {"tolerates": "any s; (s+m) | n", "load": "s + m", "upload": "1/m", "decoding": "m x m solve per group"}
    defaults = {"m": 2}
    hypothesis_max_n = 24

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(g - m, {"m": m}) for g in divisors(n) for m in range(1, g + 1)]

    def _check_parameters(self) -> None:
        check_int(self.name, "m", self.m, 1, self.n - self.s, f"s + m must be at most n={self.n}")
        if self.n % (self.s + self.m):
            raise SchemeParameterError(
                f"cce_fr needs (s+m) to divide n: s+m={self.s + self.m} does not divide n={self.n}."
            )

    def _groups(self) -> list[range]:
        return groups(self.n, self.s + self.m)

    def _layout(self) -> Layout:
        mds = chebyshev_mds(self.s + self.m, self.m)
        partitions, coefficients = [], []
        for block in self._groups():
            for position, _ in enumerate(block):
                c = np.zeros((self.m, self.k))
                c[:, list(block)] = mds[position][:, None]
                partitions.append(tuple(block))
                coefficients.append((_normalised(c),))
        return Layout(tuple(partitions), tuple(coefficients))

    def _decodable_workers(self, workers: frozenset[int]) -> bool:
        return all(len(workers.intersection(block)) >= self.m for block in self._groups())

    def decode_times(self, arrivals: np.ndarray) -> np.ndarray:
        """The slowest group's m-th fastest worker."""
        arrivals = np.atleast_2d(arrivals)
        grouped = arrivals.reshape(len(arrivals), -1, self.s + self.m)
        return np.partition(grouped, self.m - 1, axis=2)[:, :, self.m - 1].max(axis=1)
