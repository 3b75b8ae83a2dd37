"""A scheme whose workers send several messages each, for the suites that check per-message timing.

The cluster conformance suite, the engine tests and the master's tests use this one, unregistered, so they
do not depend on a registered scheme's parameters (``chunked_cr`` with m = 1 sends the same messages): worker
i computes partitions i, ..., i+s (mod n) in that order and sends each partition's gradient as soon as it is
computed, so the master can decode once every partition arrived from some worker, partial work of a slow
worker included (replication with per-partition messages; exact from any n - s workers). Tests that run it
through a scenario register it for their duration (``registered``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from gcbench.coding import Layout, Scheme, register_scheme, unregister_scheme
from gcbench.coding.cyclic_repetition import cyclic_support


class PerPartitionMessages(Scheme):
    """Cyclic replication, one message per computed partition (test support; not registered).

    - tolerates: any s (each partition is held by s + 1 workers)
    - load: s + 1 partitions per worker
    - upload: s + 1 messages of a whole gradient each
    - decoding: the first copy of each partition's gradient
    - reference: test support for per-message timing
    """

    name = "per_partition_messages"
    reference = "test support for per-message timing"

    def _layout(self) -> Layout:
        support = cyclic_support(self.n, self.s + 1)
        eye = np.eye(self.n)
        return Layout(partitions=support, coefficients=tuple(tuple(eye[[j]] for j in held) for held in support))


@contextmanager
def registered() -> Iterator[type[PerPartitionMessages]]:
    """The scheme registered under its name while the block runs (a scenario's variant can then name it)."""
    register_scheme(PerPartitionMessages)
    try:
        yield PerPartitionMessages
    finally:
        unregister_scheme(PerPartitionMessages.name)
