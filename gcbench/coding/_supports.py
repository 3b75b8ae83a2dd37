"""Layouts from supports: each worker sends one weighted sum of the partitions it holds; and block codes.

Most approximate and stochastic codes are of this form (the assignment is the
code); only the decoder differs.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

import numpy as np

from gcbench.coding._base import Layout, Scheme


def support_layout(k: int, supports: Sequence[Sequence[int]], value: float = 1.0) -> Layout:
    """Worker i holds ``supports[i]`` (in that order) and sends ``value`` times the sum of those gradients."""
    coefficients = []
    for support in supports:
        row = np.zeros((1, k))
        row[0, list(support)] = value
        coefficients.append((row,))
    return Layout(tuple(tuple(int(j) for j in support) for support in supports), tuple(coefficients))


class BlockRepetition(Scheme):
    """The partitions are cut into blocks; each worker holds one block and sends its sum (BCC, heterogeneous).

    The set received decodes exactly when every block has a responder (one message per block, weight 1).
    Subclasses give ``_blocks``: the blocks and each worker's block.
    """

    @abc.abstractmethod
    def _blocks(self) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """The blocks (partitions, in order) and each worker's block index."""

    def _layout(self) -> Layout:
        self.blocks, self.block_of = self._blocks()
        return support_layout(self.k, [self.blocks[c] for c in self.block_of])

    def _decodable_workers(self, workers: frozenset[int]) -> bool:
        return len({int(self.block_of[w]) for w in workers}) == len(self.blocks)

    def decode_times(self, arrivals: np.ndarray) -> np.ndarray:
        """The latest over blocks of the block's first arrival (one message per worker: ids are workers)."""
        arrivals = np.atleast_2d(np.asarray(arrivals, dtype=float))
        firsts = [arrivals[:, self.block_of == c].min(axis=1) for c in range(len(self.blocks))]
        return np.max(firsts, axis=0)
