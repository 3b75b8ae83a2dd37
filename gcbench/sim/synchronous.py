"""The synchronous engine: one decode per iteration, vectorised over workers (and iterations).

While every worker is up and stale work is abandoned, iterations are independent
given their draws, so whole blocks of them are computed at once with numpy.
Crashes, downtime, ``stale_work: finish`` and a sequential scheme's rounds carry
state from one iteration to the next; there the engine steps iteration by
iteration, vectorised over workers.
All random draws are made up front, so both paths consume the same streams.
"""

from __future__ import annotations

import numpy as np

from gcbench.coding import Scheme
from gcbench.master.outcome import SimulationStuck, decoding_quality, scheduled_for_good, stuck_iteration
from gcbench.master.sequential import RoundCode
from gcbench.models.wire import Wire
from gcbench.results.recorder import Emit, RunRecorder
from gcbench.scenario.build import placed
from gcbench.scenario.draws import RunDraws, draw_run, message_bytes, message_delay, weights_bytes
from gcbench.scenario.schema import Scenario, Variant

__all__ = ["SimulationStuck", "decoding_quality", "simulate_synchronous"]

BLOCK_ELEMENTS = 1 << 17  # a block of 1 MiB of float64 per (rows x n) array, small enough for a core's L2 cache
CHUNK_ELEMENTS = 1 << 20  # worker rows per streamed chunk of the workers table (a Parquet row group)


def simulate_synchronous(
    scenario: Scenario,
    variant: Variant,
    scheme: Scheme,
    seed: int,
    workers: Emit | None = None,
    worker_times: bool = True,
) -> RunRecorder:
    """One (variant, seed); ``workers(rec, first, end)``, when given, takes the workers table's rows a chunk of
    iterations at a time as they are final, and the recorder keeps per-worker times for one chunk only.

    ``worker_times`` false (no workers table is written): the per-worker times are not computed at all, and the
    recorder's ``compute_start``, ``compute_end`` and ``arrival`` mean nothing (its other arrays are whole)."""
    scenario = placed(scenario, scheme)  # (topology.placement: by_code, this variant's code's)
    draws = draw_run(scenario, scheme, seed)
    n = scenario.workers
    window = max(1, CHUNK_ELEMENTS // n, BLOCK_ELEMENTS // n) if workers is not None else None
    rec = RunRecorder(scenario.iterations, n, window=window if worker_times else 1, emit=workers)
    rec.straggling, rec.injected = _shared(draws.straggling, bool, rec), _shared(draws.injected, float, rec)
    _Run(rec, draws, scenario, variant, scheme, worker_times).simulate()
    rec.flush()
    decoding_quality(rec, scheme)
    return rec


def _shared(drawn: np.ndarray, dtype: type, rec: RunRecorder) -> np.ndarray:
    """The draws' own array where it already has the table's dtype and shape (nothing changes it): no copy."""
    if drawn.dtype == dtype and drawn.shape == (rec.iterations, rec.n):
        return drawn
    return np.broadcast_to(drawn, (rec.iterations, rec.n)).astype(dtype)


class _Run:
    """Stretches where every worker is up and stale work is abandoned run as one vectorised block;
    iterations with a crash, a worker down, or stale work being finished are stepped one by one."""

    def __init__(self, rec: RunRecorder, draws: RunDraws, scenario: Scenario, variant: Variant, scheme: Scheme,
                 worker_times: bool = True):  # fmt: skip
        self.rec, self.scenario, self.variant, self.scheme = rec, scenario, variant, scheme
        self.busy, self.crash, self.worker_times = draws.busy, draws.crash, worker_times
        # network.dispatch: jobs start that long after the iteration does (None: at once), so their messages are
        # ready ``lead`` after it; master.between_iterations: the master's time after each iteration (None: none)
        # links shared fairly (a topology's, or the master's ingress); None: a link a worker, or the FIFO shared link
        self.wire = Wire.of(scenario.network, scenario.topology, scenario.workers)
        self.shares_links = self.wire is not None or scenario.network.shared_link  # (messages' times depend on others')
        # the weights' way to the workers, where it takes time: every job is sent as its iteration starts (no
        # worker is ever down here: engine_for sends crashes with a broadcast to the event engine), so each
        # worker's copy is in a fixed time after the start, before its dispatch
        self.dispatch, self.between = _with_weights(draws.dispatch, self.wire, scenario, rec), draws.between
        self.lead = draws.busy if self.dispatch is None else self.dispatch + draws.busy
        self.crashes = scenario.failures.model != "none"  # (without a failure model, no row to look for crashes in)
        compressor = variant.compressor
        self.size, self.delay = message_bytes(scenario, scheme, compressor), message_delay(scenario, scheme, compressor)
        model = getattr(scenario.failures, "downtime", None)
        # each job's downtime if it crashes (a scheduled crash has its own; inf: for good)
        self.downtime = np.inf if model is None else model
        self.downtimes = draws.downtime
        self.node_of = None if scenario.topology is None else scenario.topology.node_of(scenario.workers)
        self.scheduled_dead = scheduled_for_good(scenario)
        # a sequential scheme: each round's end depends on the rounds before it, so every round is a step
        self.rounds = RoundCode(scheme, rec.iterations) if scheme.sequential else None

    def simulate(self) -> None:
        iterations, n = self.busy.shape
        crash_rows = np.flatnonzero(self.crash.any(axis=1)) if self.crashes else np.zeros(0, dtype=np.int64)
        always_step = self.scenario.stale_work == "finish" or self.rounds is not None
        down_until, free_at = np.zeros(n), np.zeros(n)
        t, now = 0, 0.0
        while t < iterations:
            if not always_step and (down_until <= now).all():
                following = crash_rows[np.searchsorted(crash_rows, t) :]
                stop = int(following[0]) if following.size else iterations
                if stop > t:
                    now, t = self._block(t, stop, now), stop
                    continue
            now, down_until, free_at = self._step(t, now, down_until, free_at)
            t += 1

    def _block(self, a: int, b: int, origin: float) -> float:
        """Iterations a to b, a block of rows at a time: each block's arrivals stay in the cache while the
        policy reads them and the tables are written (one pass over memory each, not several)."""
        rec, rows = self.rec, max(1, BLOCK_ELEMENTS // self.busy.shape[1])
        blocks = [(first, min(first + rows, b)) for first in range(a, b, rows)]
        outcomes = [self.variant.policy.stop_times(self._arrivals(first, end), self.scheme) for first, end in blocks]
        stop = np.concatenate([outcome.stop for outcome in outcomes])
        _check_progress(stop, self.variant, self.scheme, a, lambda row: ((), self._answered(a + row)))  # all up
        if self.between is None:
            ends = origin + np.cumsum(stop)
            rec.start[a] = origin
            rec.start[a + 1 : b] = ends[:-1]
            after = float(ends[-1])
        else:  # iteration t+1 starts the master's time between_iterations[t] after t stops
            steps = np.empty(2 * (b - a))
            steps[0::2], steps[1::2] = stop, self.between[a:b]
            times = origin + np.cumsum(steps)
            ends = times[0::2]
            rec.start[a] = origin
            rec.start[a + 1 : b] = times[1:-1:2]
            after = float(times[-1])
        rec.duration[a:b], rec.end[a:b] = stop, ends
        for (first, end), outcome in zip(blocks, outcomes, strict=True):
            rec.reason[first:end] = outcome.reason
        for first, end in blocks:
            arrivals = self._arrivals(first, end)  # (again: computed in the cache, cheaper than kept in memory)
            np.less_equal(arrivals, rec.duration[first:end, None], out=rec.used[first:end])
            if self.worker_times:
                start = rec.start[first:end, None]
                compute_start, compute_end, arrival = rec.times(first, end)
                # (out=: written straight into the tables, with no temporary to allocate and copy)
                if self.dispatch is None:
                    compute_start[:] = start
                else:  # (the event engine's sums: a job starts at start + dispatch, is ready its busy time later)
                    np.add(start, self.dispatch[first:end], out=compute_start)
                np.add(compute_start, self.busy[first:end], out=compute_end)
                np.add(start, arrivals, out=arrival)
                if self.dispatch is not None:  # a job still on its way at the stop is abandoned before it began
                    never = compute_start > rec.end[first:end, None]
                    if self.shares_links and never.any():  # and sends nothing: the late messages' links are freer
                        rows = np.flatnonzero(never.any(axis=1))
                        sent = np.where(never[rows], np.inf, self.lead[first:end][rows])
                        arrival[rows] = start[rows] + self._arrive(sent, self.delay)
                    for times in (compute_start, compute_end, arrival):
                        times[never] = np.nan
            rec.rows_done(end)
        return after

    def _arrivals(self, first: int, end: int) -> np.ndarray:
        return self._arrive(self.lead[first:end], self.delay)

    def _arrive(self, ready: np.ndarray, delay: float) -> np.ndarray:
        """When messages ready at ``ready`` (rows x workers) arrive, each row's on links of its own."""
        if self.wire is not None:
            return self.wire.arrivals(ready, self.size, delay)
        return self.scenario.network.arrivals(ready, self.size, delay)

    def _answered(self, t: int) -> int:
        return int(np.isfinite(self._arrivals(t, t + 1)).sum())

    def _step(self, t: int, now: float, down_until: np.ndarray, free_at: np.ndarray):
        rec = self.rec
        # the master sends a worker's job now, or once it is back from a crash; it starts a dispatch later
        dispatch = 0.0 if self.dispatch is None else self.dispatch[t]
        sent = np.maximum(now, down_until)
        first = np.maximum(sent + dispatch, free_at)  # (adding 0.0 changes no time: times are never -0.0)
        crashed = np.isfinite(first) & self.crash[t]
        recover = first + (self.downtime if self.downtimes is None else self.downtimes[t])
        previous_down = down_until
        down_until = np.where(crashed, recover, down_until)
        # a recovered worker redoes this iteration, sent again as it is back
        begin = np.where(crashed, recover + dispatch, first)
        ready = begin + self.busy[t]
        arrivals = self._arrive((ready - now)[None, :], self.delay)[0]
        code = self.scheme if self.rounds is None else self.rounds.begin(t)
        outcome = self.variant.policy.stop_times(arrivals[None, :], code)
        who = lambda _: (np.flatnonzero(down_until == np.inf), int(np.isfinite(arrivals).sum()))  # noqa: E731
        _check_progress(outcome.stop, self.variant, self.scheme, t, who, self.node_of, self.scheduled_dead)
        stop = float(outcome.stop[0])
        if self.scenario.stale_work == "abandon":
            begin, ready, arrivals, crashed, down_until = self._not_started(
                now, stop, sent, begin, ready, arrivals, crashed, down_until, previous_down
            )
        rec.start[t], rec.end[t], rec.duration[t] = now, now + stop, stop
        if self.worker_times:
            compute_start, compute_end, arrival = rec.times(t, t + 1)
            compute_start[0], compute_end[0] = begin, ready
            arrival[0] = now + arrivals
        rec.used[t] = arrivals <= stop
        if self.rounds is not None:  # the rest of the round's results are lost; the decoded job's delay
            rec.staleness[t] = self.rounds.end(np.flatnonzero(rec.used[t]))
        rec.failed[t] = crashed | (down_until > now)
        rec.reason[t] = outcome.reason[0]
        rec.rows_done(t + 1)
        now += stop
        if self.between is not None:
            now += self.between[t]
        finishing = self.scenario.stale_work == "finish" and np.isfinite(ready)
        free_at = np.where(finishing & ~rec.used[t], ready, now)
        return now, down_until, free_at

    def _not_started(self, now, stop, sent, begin, ready, arrivals, crashed, down_until, previous_down):
        """Abandoned work that had not begun by the stop never runs: no times. A job the master never sent (its
        worker down past the stop) draws no crash either; one sent but still on its way (``network.dispatch``)
        reached its worker, and a crash drawn for it stands (the event engine's: a job crashes as it arrives).

        A worker still down when the master moves on starts the next iteration's
        job when it is back, not this one's (the event engine's semantics).
        """
        end = now + stop
        unstarted = np.isfinite(sent) & (sent > end)
        never = unstarted | (np.isfinite(begin) & (begin > end))
        if not never.any():
            return begin, ready, arrivals, crashed, down_until
        crashed = crashed & ~unstarted
        down_until = np.where(unstarted, previous_down, down_until)
        arrivals = self._arrive((np.where(never, np.inf, ready) - now)[None, :], self.delay)[0]
        arrivals = np.where(never, np.nan, arrivals)
        return np.where(never, np.nan, begin), np.where(never, np.nan, ready), arrivals, crashed, down_until


def _with_weights(dispatch: np.ndarray | None, wire: Wire | None, scenario: Scenario, rec: RunRecorder):
    """Each job's time from its iteration's start to reaching its worker: its copy of the weights (sent to
    every worker at the start, over the links they share), then its dispatch; None where both are nothing."""
    if wire is None or not wire.broadcasts:
        return dispatch
    weights = wire.weights_arrivals(np.zeros((1, scenario.workers)), weights_bytes(scenario))[0]
    if dispatch is None:
        return np.broadcast_to(weights, (rec.iterations, scenario.workers))
    return weights + dispatch


def _check_progress(stop: np.ndarray, variant: Variant, scheme: Scheme, offset: int, who, node_of=None,
                    scheduled_dead: frozenset[int] = frozenset()) -> None:  # fmt: skip
    """Raise the master's "can never finish" error for the first iteration that cannot stop; ``who(row)``: the
    workers crashed for good by then, and how many answered (computed only then); ``node_of``: each worker's
    node, where there is a topology; ``scheduled_dead``: the workers the schedule crashes for good."""
    stuck = np.flatnonzero(~np.isfinite(stop))
    if stuck.size:
        dead, answered = who(int(stuck[0]))
        t = offset + int(stuck[0])
        scheduled = bool(scheduled_dead.intersection(int(w) for w in dead))
        raise stuck_iteration(variant.display_label(), t, scheme, variant.policy, dead, answered, node_of, scheduled)
