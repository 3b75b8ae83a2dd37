"""Everything random in a run, drawn up front from one seed, for both engines.

Streams are split by purpose, so adding failures (or a compute overhead) to a
scenario does not change its other draws, and variants with one seed share them
(common random numbers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gcbench.coding import Scheme
from gcbench.models.compute import compute_times, overhead_times
from gcbench.scenario.schema import DTYPE_BYTES, Scenario


@dataclass(frozen=True)
class RunDraws:
    loads: np.ndarray  # (n,) partitions per worker
    straggling: np.ndarray  # (iterations, n) bool: slowed by the straggling model
    injected: np.ndarray  # (iterations, n) seconds added to the compute: straggling's penalty plus the overhead
    busy: np.ndarray  # (iterations, n) seconds from starting a job to its message being ready
    crash: np.ndarray  # (iterations, n) bool: crashes if it works in that iteration (row)
    overhead: np.ndarray  # (iterations, n) seconds of compute.overhead (zeros without one), part of injected


def draw_run(scenario: Scenario, scheme: Scheme, seed: int) -> RunDraws:
    n, iterations = scenario.workers, scenario.iterations
    # spawned children depend only on their index, so a fourth stream leaves the first three as they were
    streams = map(np.random.default_rng, np.random.SeedSequence(seed).spawn(4))
    compute, straggling, failures, overhead_stream = streams
    loads = np.array([len(scheme.partitions(w)) for w in range(n)], dtype=float)
    work = compute_times(scenario.compute, compute, iterations, loads)
    mask = scenario.straggling.draw(straggling, iterations, n)
    overhead = overhead_times(scenario.compute, overhead_stream, iterations, n)
    injected = scenario.straggling.penalty(work, loads, mask)
    if scenario.compute.overhead is not None:  # without one, no second (iterations, n) array
        injected = injected + overhead
    busy = work + injected
    return RunDraws(loads, mask, injected, busy, scenario.failures.crashes(failures, busy), overhead)


def message_bytes(scenario: Scenario, scheme: Scheme) -> int:
    """Bytes of one message: ceil(d / m) entries of the gradient's dtype."""
    return -(-scenario.gradient.length // scheme.m) * DTYPE_BYTES[scenario.gradient.dtype]
