"""What the master asks of a run that trains: the weights to publish, and an update from the used results.

The master layer imports no torch; ``gcbench.training.learner.Learner`` implements this.
"""

from __future__ import annotations

from typing import Any, Protocol

from gcbench.cluster import Result


class Learner(Protocol):
    # the last update's relative error from compression: its decoded gradient against the decode of the same
    # messages uncompressed (NaN where nothing was compressed or the uncompressed messages were not kept)
    compression_error: float

    def weights(self) -> Any:
        """The current weights, as ``Cluster.publish`` takes them."""

    def update(self, results: list[Result], rescale: bool) -> float:
        """Decompress (where compressed) and decode these results' messages, step the model, and return the
        mini-batch loss they computed.

        ``rescale``: divide an approximate decode by the fraction of the mini-batch it covers (asynchronous
        updates), so every update is a mean-gradient estimate."""
