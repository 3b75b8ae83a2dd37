"""What the master asks of a run that trains: the weights to publish, and an update from the used results.

The master layer imports no torch; ``gcbench.training.learner.Learner`` implements this.
"""

from __future__ import annotations

from typing import Any, Protocol

from gcbench.cluster import Result


class Learner(Protocol):
    def weights(self) -> Any:
        """The current weights, as ``Cluster.publish`` takes them."""

    def update(self, results: list[Result], rescale: bool) -> float:
        """Decode these results' messages, step the model, and return the mini-batch loss they computed.

        ``rescale``: divide an approximate decode by the fraction of the mini-batch it covers (asynchronous
        updates), so every update is a mean-gradient estimate."""
