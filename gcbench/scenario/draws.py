"""Everything random in a run, drawn up front from one seed, for both engines.

Streams are split by purpose, so adding failures to a scenario does not change
its compute draws, and variants with one seed share them (common random numbers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gcbench.coding import Scheme
from gcbench.models.compute import compute_times
from gcbench.scenario.schema import DTYPE_BYTES, Scenario


@dataclass(frozen=True)
class RunDraws:
    loads: np.ndarray  # (n,) partitions per worker
    straggling: np.ndarray  # (iterations, n) bool: slowed by the straggling model
    injected: np.ndarray  # (iterations, n) seconds added by straggling
    busy: np.ndarray  # (iterations, n) seconds of compute including straggling
    crash: np.ndarray  # (iterations, n) bool: crashes if it works in that iteration (row)


def draw_run(scenario: Scenario, scheme: Scheme, seed: int) -> RunDraws:
    n, iterations = scenario.workers, scenario.iterations
    compute, straggling, failures = map(np.random.default_rng, np.random.SeedSequence(seed).spawn(3))
    loads = np.array([len(scheme.partitions(w)) for w in range(n)], dtype=float)
    work = compute_times(scenario.compute, compute, iterations, loads)
    mask = scenario.straggling.draw(straggling, iterations, n)
    injected = scenario.straggling.penalty(work, loads, mask)
    busy = work + injected
    return RunDraws(loads, mask, injected, busy, scenario.failures.crashes(failures, busy))


def message_bytes(scenario: Scenario, scheme: Scheme) -> int:
    """Bytes of one message: ceil(d / m) entries of the gradient's dtype."""
    return -(-scenario.gradient.length // scheme.m) * DTYPE_BYTES[scenario.gradient.dtype]
