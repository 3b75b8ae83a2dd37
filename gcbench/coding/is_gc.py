"""Ignore-straggler gradient coding: sum a largest set of responders whose partitions do not overlap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import check_int
from gcbench.coding._supports import support_layout
from gcbench.coding.cyclic_repetition import cyclic_support


def disjoint_from(start: int, responders: Sequence[int], n: int, width: int) -> list[int]:
    """Greedy non-overlapping arcs [i, i + width) on the n-cycle, beginning with ``start``.

    Cutting the cycle at ``start`` leaves an interval problem with equal lengths, where taking the
    earliest arc that fits is optimal: this is a largest disjoint set containing ``start``.
    """
    chosen, end = [start], start + width
    for worker in sorted((w - start) % n + start for w in responders if w != start):
        if worker >= end and worker + width <= start + n:
            chosen.append(worker % n)
            end = worker + width
    return chosen


def largest_disjoint_sets(responders: Sequence[int], n: int, width: int) -> list[list[int]]:
    """The greedy set from every responder, kept where it is largest (rotating the responders rotates them)."""
    found = [disjoint_from(start, responders, n, width) for start in responders]
    most = max(len(chosen) for chosen in found)
    return [chosen for chosen in found if len(chosen) == most]


class IgnoreStragglerGC(Scheme):
    """Worker i holds partitions i..i+d-1 (mod n) and sends their sum; the master keeps responders that do not overlap.

    - tolerates: any s (approximate: partitions outside the chosen responders are lost)
    - load: d partitions per worker
    - upload: 1 gradient per worker
    - decoding: a largest set of responders with disjoint partitions, scaled by k / (partitions covered),
      averaged over the largest sets found from each responder; unbiased under cyclically symmetric straggling
    - reference: "On Arbitrary Ignorance of Stragglers with Gradient Coding" (IS-GC; its cyclic form
      IS-CR, code at github.com/IS-GC/IS-GC), over Tandon et al.'s cyclic assignment
    """

    name = "is_gc"
    reference = "IS-GC, cyclic form (On Arbitrary Ignorance of Stragglers)"
    slow_every_straggler_set = True  # seconds in the conformance suite: the slow lane checks every set
    exact = False
    threshold_decodable = True
    unbiased = True
    facts = {
        "tolerates": "any s (approximate)",
        "load": "d",
        "upload": "1",
        "decoding": "disjoint responders, rescaled",
    }
    defaults = {"d": 2}
    hypothesis_max_n = 24

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(s, {"d": d}) for d in range(1, n + 1) for s in range(n)]

    def _check_parameters(self) -> None:
        check_int(self.name, "d", self.params["d"], 1, self.n, "the partitions each worker holds")

    def _layout(self) -> Layout:
        return support_layout(self.k, cyclic_support(self.n, self.params["d"]))

    def _weights(self, ids: tuple[int, ...], rows: np.ndarray) -> tuple[np.ndarray, None]:
        workers = [int(self.message_owner[i]) for i in ids]
        width = self.params["d"]
        chosen = largest_disjoint_sets(workers, self.n, width)
        scale = self.k / (width * len(chosen[0]) * len(chosen))
        position = {w: i for i, w in enumerate(workers)}
        weights = np.zeros((1, len(ids)))
        for found in chosen:
            weights[0, [position[w] for w in found]] += scale
        return weights, None
