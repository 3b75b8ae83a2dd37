"""Ignore stragglers: uncoded data, rescale whatever arrives (approximate)."""

from __future__ import annotations

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding.uncoded import one_partition_each


class IgnoreStragglers(Scheme):
    """Uncoded layout; the master sums the first r >= n - s gradients and scales by n / r.

    - tolerates: any s (approximately: the missing partitions are lost)
    - load: 1 partition per worker
    - upload: 1 gradient per worker
    - decoding: rescaled sum n/r; the residual reports the error
    - reference: the ignore-stragglers baseline of Tandon et al., ICML 2017
    """

    name = "ignore_stragglers"
    symmetric = True  # distinct unit rows: any r workers look alike
    reference = "Tandon et al., ICML 2017 (baseline)"
    exact = False
    threshold_decodable = True
    unbiased = True  # each worker answers with probability (n - s)/n, and n/(n - s) undoes it
    facts = {"tolerates": "any s (approximate)", "load": "1", "upload": "1", "decoding": "rescaled sum n/r"}
    hypothesis_max_n = 32

    def _layout(self) -> Layout:
        return one_partition_each(self.n)

    def _weights(self, ids: tuple[int, ...], rows: np.ndarray) -> tuple[np.ndarray, float]:
        return np.full((1, len(ids)), self.n / len(ids)), 1.0  # distinct unit rows

    def _structural_quality(self, key: tuple[int, ...]) -> tuple[bool, float]:
        # W R - T: n/r - 1 on each received partition, -1 on each missing one (no r x n product needed)
        r = len(key)
        return (True, 0.0) if r == self.n else (False, float(np.sqrt(r * (self.n / r - 1) ** 2 + self.n - r)))
