"""Per-worker compute times for a block of iterations, from a distribution or a trace, and the fixed overhead.

Both draw a block of rows from the generator they are given; drawn block after block from one generator, the
rows are those of one draw of them all when the distribution is ``blockwise`` (docs/architecture.md, "The
run's draws")."""

from __future__ import annotations

import numpy as np

from gcbench.models.traces import cleaned_trace


def compute_times(
    compute, rng: np.random.Generator, iterations: int, loads: np.ndarray, first: int = 0, share: float = 1.0
) -> np.ndarray:
    """Seconds each worker computes in iterations first..first+iterations-1 (iterations x workers), before
    straggling; ``first`` only says which rows a trace replays (a distribution's rows are the generator's next).
    ``loads`` count partitions, each ``share`` of an uncoded one (the scheme's partition_share).

    With ``load: scale`` the draws do not depend on the loads, so variants run
    with the same seed see the same workers being slow (common random numbers).
    """
    n = len(loads)
    if compute.trace is not None:
        table = cleaned_trace(compute.trace, n)[0]
        times = compute.trace.at_loads(table[np.arange(first, first + iterations) % len(table)], loads * share)
    elif compute.load == "scale":
        times = _scaled(compute.per_partition.sample(rng, (iterations, n)), loads * share)
    else:
        draws = compute.per_partition.sample(rng, (iterations, n, int(loads.max())))
        held = np.arange(draws.shape[2]) < loads[:, None]
        times = (draws * held).sum(axis=2)
        if share != 1.0:
            times = times * share
    if compute.speeds is not None:
        times = times / np.asarray(compute.speeds)
    return np.asarray(times, dtype=float)


def _scaled(times: np.ndarray, loads: np.ndarray) -> np.ndarray:
    """times * loads, in place where ``times`` is a fresh array of floats (no second (iterations x n) array)."""
    if isinstance(times, np.ndarray) and times.dtype == float and times.flags.owndata and times.flags.writeable:
        return np.multiply(times, loads, out=times)
    return times * loads


def fixed_times(compute, rng: np.random.Generator, iterations: int, n: int) -> np.ndarray | None:
    """Seconds of ``compute.fixed`` per iteration and worker, divided by the speeds (None without one)."""
    if compute.fixed is None:
        return None
    times = np.asarray(compute.fixed.sample(rng, (iterations, n)), dtype=float)
    return times if compute.speeds is None else times / np.asarray(compute.speeds)


def shared_factors(compute, rng: np.random.Generator, iterations: int) -> np.ndarray | None:
    """``compute.shared``'s factor per iteration (draw row), as a column to multiply every worker's compute by
    (None without one)."""
    if compute.shared is None:
        return None
    return np.asarray(compute.shared.sample(rng, (iterations,)), dtype=float)[:, None]


def overhead_times(compute, rng: np.random.Generator, iterations: int, n: int) -> np.ndarray:
    """Seconds of ``compute.overhead`` per iteration and worker (zeros without one): not scaled by load or speed."""
    if compute.overhead is None:
        return np.broadcast_to(0.0, (iterations, n))  # read-only zeros that take no memory
    return np.asarray(compute.overhead.sample(rng, (iterations, n)), dtype=float)


def blockwise(compute) -> bool:
    """Whether compute times and overhead drawn a block of rows at a time, from one generator, are the rows of
    one draw of them all (every distribution but a mixture, which draws its choices for the whole size first)."""
    overhead = compute.overhead is None or compute.overhead.blockwise
    fixed = compute.fixed is None or compute.fixed.blockwise
    shared = compute.shared is None or compute.shared.blockwise
    return overhead and fixed and shared and (compute.trace is not None or compute.per_partition.blockwise)
