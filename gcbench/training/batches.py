"""Which samples each data partition contributes to each iteration's mini-batch.

The training set is cut into k shards (the scheme's data partitions). Iteration t
takes batch_size / k samples from every shard, drawn from a per-shard permutation
seeded by (seed, epoch, shard), so a worker holding shard j and the master agree
on the samples of partition j without exchanging indices.
"""

from __future__ import annotations

import numpy as np

# one partition's training samples as a worker holds them: images, labels, and the shard's first sample index
Shard = tuple[np.ndarray, np.ndarray, int]


class PartitionSampler:
    def __init__(self, samples: int, partitions: int, batch_size: int, seed: int) -> None:
        self.shards = np.array_split(np.arange(samples), partitions)
        self.per_partition = max(1, batch_size // partitions)
        self.seed = seed
        self._orders: dict[int, tuple[int, np.ndarray]] = {}  # partition -> (epoch, permuted shard)

    def indices(self, iteration: int, partition: int) -> np.ndarray:
        """Sample indices of one partition's share of an iteration's mini-batch."""
        shard = self.shards[partition]
        per_epoch = max(1, len(shard) // self.per_partition)
        epoch, step = divmod(iteration, per_epoch)
        cached = self._orders.get(partition)
        if cached is None or cached[0] != epoch:
            rng = np.random.default_rng([self.seed, epoch, partition])
            cached = self._orders[partition] = (epoch, shard[rng.permutation(len(shard))])
        return cached[1][step * self.per_partition : (step + 1) * self.per_partition]

    def shard_data(self, images: np.ndarray, labels: np.ndarray) -> list[Shard]:
        """Every partition's samples, in partition order: what the workers holding it are given."""
        return [(images[shard], labels[shard], int(shard[0])) for shard in self.shards]

    def batch(self, iteration: int) -> np.ndarray:
        """The whole mini-batch: every partition's share, in partition order."""
        return np.concatenate([self.indices(iteration, j) for j in range(len(self.shards))])

    @property
    def batch_size(self) -> int:
        return self.per_partition * len(self.shards)
