"""The synchronous engine: one decode per iteration, vectorised over workers (and iterations).

Without failures and with stale work abandoned, iterations are independent given
their draws, so whole blocks of iterations are computed at once with numpy.
Failures and ``stale_work: finish`` carry state from one iteration to the next;
then the engine steps iteration by iteration, still vectorised over workers.
"""

from __future__ import annotations

import numpy as np

from gcbench.coding import Scheme
from gcbench.errors import GcbenchError
from gcbench.models.compute import compute_times
from gcbench.models.failures import NoFailures
from gcbench.scenario.schema import DTYPE_BYTES, Scenario, Variant
from gcbench.sim.tables import RunRecorder


class SimulationStuck(GcbenchError):
    """An iteration can never finish under the variant's policy (e.g. permanent crashes)."""


def message_bytes(scenario: Scenario, scheme: Scheme) -> int:
    return -(-scenario.gradient.length // scheme.m) * DTYPE_BYTES[scenario.gradient.dtype]


def random_streams(seed: int) -> dict[str, np.random.Generator]:
    """Independent streams per purpose, so adding failures does not change compute draws."""
    names = ("compute", "straggling", "failures")
    return dict(zip(names, map(np.random.default_rng, np.random.SeedSequence(seed).spawn(3)), strict=True))


def simulate_synchronous(scenario: Scenario, variant: Variant, scheme: Scheme, seed: int) -> RunRecorder:
    n, iterations = scenario.workers, scenario.iterations
    loads = np.array([len(scheme.partitions(w)) for w in range(n)], dtype=float)
    streams = random_streams(seed)
    work = compute_times(scenario.compute, streams["compute"], iterations, loads)
    mask = scenario.straggling.draw(streams["straggling"], iterations, n)
    injected = scenario.straggling.penalty(work, loads, mask)
    rec = RunRecorder(iterations, n)
    rec.straggling[:] = mask
    rec.injected[:] = injected
    busy = work + injected
    size = message_bytes(scenario, scheme)
    if isinstance(scenario.failures, NoFailures) and scenario.stale_work == "abandon":
        _independent_iterations(rec, busy, scenario, variant, scheme, size)
    else:
        _stateful_iterations(rec, busy, scenario, variant, scheme, size, streams["failures"])
    _decoding_quality(rec, variant, scheme)
    return rec


def _independent_iterations(rec, busy, scenario, variant, scheme, size) -> None:
    arrivals = scenario.network.arrivals(busy, size)
    outcome = variant.policy.stop_times(arrivals, scheme)
    _check_progress(outcome.stop, variant, scheme)
    rec.duration[:] = outcome.stop
    rec.end[:] = np.cumsum(outcome.stop)
    rec.start[1:] = rec.end[:-1]
    rec.compute_start[:] = rec.start[:, None]
    rec.compute_end[:] = rec.start[:, None] + busy
    rec.arrival[:] = rec.start[:, None] + arrivals
    rec.used[:] = arrivals <= outcome.stop[:, None]
    rec.reason[:] = outcome.reason


def _stateful_iterations(rec, busy, scenario, variant, scheme, size, rng) -> None:
    n = scenario.workers
    failures, downtime = scenario.failures, getattr(scenario.failures, "downtime", None)
    down_until = np.zeros(n)
    free_at = np.zeros(n)  # when a worker finishes stale work it was not abandoned from
    now = 0.0
    for t in range(scenario.iterations):
        begin = np.maximum(np.maximum(now, free_at), down_until)
        crashed = np.isfinite(begin) & failures.crashes(rng, busy[t])
        recover = begin + (np.inf if downtime is None else downtime)
        down_until = np.where(crashed, recover, down_until)
        begin = np.where(crashed, recover, begin)  # a recovered worker redoes this iteration
        ready = begin + busy[t]
        arrivals = scenario.network.arrivals(ready - now, size)
        outcome = variant.policy.stop_times(arrivals[None, :], scheme)
        _check_progress(outcome.stop, variant, scheme, t)
        stop = float(outcome.stop[0])
        rec.start[t], rec.end[t], rec.duration[t] = now, now + stop, stop
        rec.compute_start[t], rec.compute_end[t] = begin, ready
        rec.arrival[t] = now + arrivals
        rec.used[t] = arrivals <= stop
        rec.failed[t] = crashed | (down_until > now)
        rec.reason[t] = outcome.reason[0]
        now += stop
        finishing = scenario.stale_work == "finish" and np.isfinite(ready)
        free_at = np.where(finishing & ~rec.used[t], ready, now)


def _check_progress(stop: np.ndarray, variant: Variant, scheme: Scheme, offset: int = 0) -> None:
    stuck = np.flatnonzero(~np.isfinite(stop))
    if stuck.size:
        raise SimulationStuck(
            f"variant '{variant.display_label()}': iteration {offset + int(stuck[0])} can never finish "
            f"(too many workers crashed for good for {scheme.name} with s={scheme.s} under "
            f"{variant.policy.name}); give failures.downtime or policy.fallback: approximate."
        )


def _decoding_quality(rec: RunRecorder, variant: Variant, scheme: Scheme) -> None:
    """Exact or approximate per iteration, with the residual of approximate decodes."""
    guaranteed = scheme.exact & np.isin(rec.reason, ["decodable", "all_arrived"]) & ~rec.failed.any(axis=1)
    rec.exact[:] = guaranteed
    for t in np.flatnonzero(~guaranteed):
        ids = np.flatnonzero(rec.used[t])
        if scheme.exact and scheme.can_decode(ids):
            rec.exact[t] = True
        else:
            rec.residual[t] = scheme.approximate_decoding(ids).residual if ids.size else np.inf
