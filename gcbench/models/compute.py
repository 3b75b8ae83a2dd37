"""Per-worker compute times for a block of iterations, from a distribution or a trace, and the fixed overhead."""

from __future__ import annotations

import numpy as np

from gcbench.models.traces import cleaned_trace


def compute_times(compute, rng: np.random.Generator, iterations: int, loads: np.ndarray) -> np.ndarray:
    """Seconds each worker computes in each iteration (iterations x workers), before straggling.

    With ``load: scale`` the draws do not depend on the loads, so variants run
    with the same seed see the same workers being slow (common random numbers).
    """
    n = len(loads)
    if compute.trace is not None:
        table = cleaned_trace(compute.trace, n)[0]
        times = table[np.arange(iterations) % len(table)]
        if compute.trace.load_scaling == "proportional":
            times = times * loads
    elif compute.load == "scale":
        times = compute.per_partition.sample(rng, (iterations, n)) * loads
    else:
        draws = compute.per_partition.sample(rng, (iterations, n, int(loads.max())))
        held = np.arange(draws.shape[2]) < loads[:, None]
        times = (draws * held).sum(axis=2)
    if compute.speeds is not None:
        times = times / np.asarray(compute.speeds)
    return np.asarray(times, dtype=float)


def overhead_times(compute, rng: np.random.Generator, iterations: int, n: int) -> np.ndarray:
    """Seconds of ``compute.overhead`` per iteration and worker (zeros without one): not scaled by load or speed."""
    if compute.overhead is None:
        return np.broadcast_to(0.0, (iterations, n))  # read-only zeros that take no memory
    return np.asarray(compute.overhead.sample(rng, (iterations, n)), dtype=float)
