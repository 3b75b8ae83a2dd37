"""Fractional repetition used approximately (Charles, Papailiopoulos, Ellenberg; ErasureHead)."""

from __future__ import annotations

from typing import Any

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import SchemeParameterError, check_int
from gcbench.coding._supports import support_layout
from gcbench.coding.fractional_repetition import divisors, groups


class ApproximateFractionalRepetition(Scheme):
    """Groups of d workers share d partitions and send their sum; the master decodes from any n - s, optimally.

    - tolerates: any s (approximate: a group whose d workers all straggle is lost)
    - load: d partitions per worker (needs d | n)
    - upload: 1 gradient per worker
    - decoding: least squares (one message per group that answered); the residual is sqrt(d * lost groups)
    - reference: Charles, Papailiopoulos, Ellenberg, "Approximate gradient coding via sparse random
      graphs", 2017 (FRC); Wang, Charles, Papailiopoulos, "ErasureHead", 2019
    """

    name = "frc"
    reference = "Charles et al. 2017; ErasureHead (Wang et al. 2019)"
    slow_every_straggler_set = True  # seconds in the conformance suite: the slow lane checks every set
    exact = False
    threshold_decodable = True
    facts = {"tolerates": "any s (approximate)", "load": "d; d | n", "upload": "1", "decoding": "least squares"}
    defaults = {"d": 2}
    hypothesis_max_n = 24

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(s, {"d": d}) for d in divisors(n) for s in range(n)]

    def _check_parameters(self) -> None:
        d = check_int(self.name, "d", self.params["d"], 1, self.n, "the replication of each partition")
        if self.n % d:
            raise SchemeParameterError(f"frc needs d to divide n: d={d} does not divide n={self.n}.")

    def _layout(self) -> Layout:
        d = self.params["d"]
        return support_layout(self.k, [tuple(block) for block in groups(self.n, d) for _ in block])
