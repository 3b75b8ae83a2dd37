"""The cyclic garbage collector's youngest generation sized for a simulation: jobs die young, and stay there.

A run makes a few tracked objects per job (its ``Job``, ``Result``, events, callback lists) that live until
the job's result is taken, about n events later. With CPython's default threshold (a young collection every
700 allocations) they outlive two collections, are promoted to the oldest generation and die there, so full
collections, each a walk over every object in the process (the imported modules' tens of thousands), come
every few thousand jobs: 37 % of k_async at n = 4096 (1.45 of 3.87 s, timed with ``gc.callbacks``; 0.12 s
with the threshold below). Nothing a run makes is cyclic garbage (the collections during a run collect
nothing), so collecting less often keeps no memory; the thresholds are restored after the run.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 100_000  # allocations between young collections: above what a run keeps in flight (n <~ 10^4)


@contextmanager
def young_jobs_collected_young() -> Iterator[None]:
    """Raise the youngest generation's threshold (never lower it) for the duration, then restore them all."""
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
