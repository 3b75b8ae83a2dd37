"""Everything random in a run, from one seed, for every engine and backend.

Streams are split by purpose, so adding failures (or a compute overhead) to a
scenario does not change its other draws, and variants with one seed share them
(common random numbers). ``DrawBlocks`` draws the rows in order, a block at a
time, each stream's generator carrying on from block to block, so the rows do
not depend on how they were cut into blocks: ``draw_run`` is one block of every
row, and the asynchronous simulator draws only the rows its jobs reach
(gcbench/scenario/draw_rows.py). The layout: docs/architecture.md, "The run's draws".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gcbench.coding import Scheme
from gcbench.compression import Compressor
from gcbench.models.compute import blockwise, compute_times, fixed_times, overhead_times, shared_factors
from gcbench.models.contention import processor_sharing
from gcbench.scenario.schema import DTYPE_BYTES, Scenario


@dataclass(frozen=True)
class RunDraws:
    loads: np.ndarray  # (n,) each worker's compute, in uncoded partitions (its partitions times partition_share)
    straggling: np.ndarray  # (iterations, n) bool: slowed by the straggling model
    injected: np.ndarray  # (iterations, n) seconds added to the compute: straggling's penalty plus the overhead
    busy: np.ndarray  # (iterations, n) seconds from starting a job to its message being ready
    crash: np.ndarray  # (iterations, n) bool: crashes if it works in that iteration (row)
    overhead: np.ndarray  # (iterations, n) seconds of compute.overhead (zeros without one), part of injected
    dispatch: np.ndarray | None = None  # (iterations, n) seconds from a job's submission to its start (None: 0)
    between: np.ndarray | None = None  # (iterations,) the master's seconds after each iteration (None: 0)
    # (iterations, n) seconds a crash in that job keeps its worker down (inf: for good); None: the failure model's
    # downtime for every crash (no crash is scheduled)
    downtime: np.ndarray | None = None
    # (iterations, n) bool: the job's crash is its node's, every worker of the node crashing in that row together
    # (failures.level: node, or a scheduled node); None where no crash is a node's
    node_crash: np.ndarray | None = None


class DrawBlocks:
    """The run's draws, rows 0, 1, ... in order, ``next(rows)`` rows at a time (each block a ``RunDraws``)."""

    def __init__(self, scenario: Scenario, scheme: Scheme, seed: int) -> None:
        self.scenario, self.drawn = scenario, 0  # rows drawn so far
        # spawned children depend only on their index, so a new stream leaves the others as they were
        streams = list(map(np.random.default_rng, np.random.SeedSequence(seed).spawn(10)))
        self.compute, self.straggling, self.failures, self.overhead, self.warmup = streams[:5]
        self.dispatch, self.master, self.fixed, self.shared = streams[5:9]
        self.also = streams[9]  # straggling.also: a worker-level model on top of a node-level one
        self.also_mask: np.ndarray | None = None  # its last row drawn
        self.timings = _Timings(scenario, self.dispatch, self.master)
        self.loads = np.array([scheme.step_load(w) for w in range(scenario.workers)], dtype=float)  # partitions
        self.share = scheme.partition_share
        held = np.array([len(scheme.partitions(w)) for w in range(scenario.workers)], dtype=float)
        self.warmup_loads = held - self.loads if scheme.pipelined else None  # what step 0 computes besides
        self.mask: np.ndarray | None = None  # the last row drawn: where a Markov chain carries on from
        topology = scenario.topology  # each worker's node, where straggling or failures draw per node
        self.node_of = None if topology is None else topology.node_of(scenario.workers)
        self.whole: tuple[np.ndarray, np.ndarray] | None = None  # (work, overhead) of every row, not blockwise

    def next(self, rows: int) -> RunDraws:
        scenario, first = self.scenario, self.drawn
        work, overhead = self._times(first, rows)
        if first == 0 and rows and self.warmup_loads is not None:
            work = work.copy()
            work[0] += self._warmup_times()
        dispatch, between = self.timings.rows(first, rows)
        if scenario.compute.cores is not None:  # the iteration's jobs share the machine's cores, each from its start
            work = processor_sharing(work, scenario.compute.cores, dispatch)
        straggling = scenario.straggling
        if getattr(straggling, "level", "worker") == "node":  # a node's draw, shared by its workers
            drawn = straggling.draw(self.straggling, rows, scenario.topology.nodes, self.mask)
            mask = drawn[:, self.node_of]
        else:
            mask = drawn = straggling.draw(self.straggling, rows, scenario.workers, self.mask)
        injected = straggling.penalty(work, self.loads * self.share, mask)
        also = getattr(straggling, "also", None)
        if also is not None:  # each worker's own slowness besides its node's: the penalties add
            own = also.draw(self.also, rows, scenario.workers, self.also_mask)
            injected = injected + also.penalty(work, self.loads * self.share, own)
            self.also_mask = own[-1] if rows else self.also_mask
            mask = mask | own
        if scenario.compute.overhead is not None:  # without one, no second (rows, n) array
            injected = injected + overhead
        busy = work + injected
        crash = self._crashes(busy)
        node_crash = crash.copy() if getattr(scenario.failures, "level", "worker") == "node" else None
        crash, downtime, node_crash = self._scheduled(crash, first, rows, node_crash)
        self.drawn, self.mask = first + rows, drawn[-1] if rows else self.mask
        return RunDraws(self.loads * self.share, mask, injected, busy, crash, overhead, dispatch, between, downtime,
                        node_crash)  # fmt: skip

    def _scheduled(
        self, crash: np.ndarray, first: int, rows: int, node_crash: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """The drawn crashes with the scheduled ones of these rows added, each job's downtime where any crash
        is scheduled in the run (None: none is; every crash is down for the model's downtime), and which crashes
        are a whole node's (None: none is)."""
        failures = self.scenario.failures
        schedule = getattr(failures, "schedule", [])
        if not schedule:
            return crash, None, node_crash
        model = np.inf if failures.downtime is None else failures.downtime
        downtime = np.full(crash.shape, model)
        crash = crash.copy()
        for entry in schedule:
            if first <= entry.iteration < first + rows:
                row = entry.iteration - first
                workers = [entry.worker] if entry.worker is not None else np.flatnonzero(self.node_of == entry.node)
                crash[row, workers] = True
                downtime[row, workers] = np.inf if entry.downtime is None else entry.downtime
                if entry.node is not None:
                    node_crash = np.zeros(crash.shape, dtype=bool) if node_crash is None else node_crash
                    node_crash[row, workers] = True
        return crash, downtime, node_crash

    def _crashes(self, busy: np.ndarray) -> np.ndarray:
        """Which jobs crash: each worker's draw, or at node level its node's (a node busy as long as its busiest
        worker), shared by the node's workers."""
        failures = self.scenario.failures
        if getattr(failures, "level", "worker") != "node":
            return failures.crashes(self.failures, busy)
        nodes = self.scenario.topology.nodes
        busiest = np.zeros((len(busy), nodes))
        for k in range(nodes):
            held = self.node_of == k
            if held.any():
                busiest[:, k] = busy[:, held].max(axis=1)
        return failures.crashes(self.failures, busiest)[:, self.node_of]

    def _warmup_times(self) -> np.ndarray:
        """A pipelined scheme's step 0 fills each worker's cache: the other held partitions' compute times, from
        a stream of their own (none for a trace whose times do not scale with the load)."""
        compute = self.scenario.compute
        if compute.trace is not None and compute.trace.load_scaling == "base_compute":  # the extra load's compute
            return self.warmup_loads / self.scenario.workers * compute.trace.base_compute_seconds()
        if compute.trace is not None and compute.trace.load_scaling != "proportional":
            return np.zeros(self.scenario.workers)
        return compute_times(compute, self.warmup, 1, self.warmup_loads)[0]

    def _times(self, first: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Compute times and overhead of rows first..first+rows-1; a mixture's are drawn for every row at once
        (the first time) and sliced, since a mixture's samples depend on how many it draws together."""
        compute, n = self.scenario.compute, self.scenario.workers
        if blockwise(compute):
            work = self._with_fixed(compute_times(compute, self.compute, rows, self.loads, first, self.share), rows)
            return work, overhead_times(compute, self.overhead, rows, n)
        if self.whole is None:
            iterations = self.scenario.iterations
            work = self._with_fixed(
                compute_times(compute, self.compute, iterations, self.loads, share=self.share), iterations
            )
            self.whole = work, overhead_times(compute, self.overhead, iterations, n)
        return self.whole[0][first : first + rows], self.whole[1][first : first + rows]

    def _with_fixed(self, work: np.ndarray, rows: int) -> np.ndarray:
        """The compute times plus ``compute.fixed``'s draws, times ``compute.shared``'s factor per row (each from a
        stream of its own), where the scenario has them."""
        compute = self.scenario.compute
        fixed = fixed_times(compute, self.fixed, rows, self.scenario.workers)
        work = work if fixed is None else work + fixed
        shared = shared_factors(compute, self.shared, rows)
        return work if shared is None else work * shared


class _Timings:
    """The modelled times around the compute: ``network.dispatch`` per job (row, worker) and
    ``master.between_iterations`` per row, each from a stream of its own; None where the scenario models none.
    A distribution that is not ``blockwise`` (a mixture) is drawn for every row at once and sliced."""

    def __init__(self, scenario: Scenario, dispatch: np.random.Generator, master: np.random.Generator) -> None:
        self.iterations, self.n = scenario.iterations, scenario.workers
        self.models = (scenario.network.dispatch, scenario.master.between_iterations)
        self.streams = (dispatch, master)
        self.whole: list[np.ndarray | None] = [None, None]

    def rows(self, first: int, rows: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        dispatch = self._rows(0, (rows, self.n), first)
        between = self._rows(1, (rows,), first)
        return dispatch, between

    def _rows(self, which: int, shape: tuple[int, ...], first: int) -> np.ndarray | None:
        model = self.models[which]
        if model is None:
            return None
        if getattr(model, "blockwise", True):
            return np.asarray(model.sample(self.streams[which], shape), dtype=float)
        if self.whole[which] is None:
            self.whole[which] = np.asarray(model.sample(self.streams[which], (self.iterations, *shape[1:])), float)
        return self.whole[which][first : first + shape[0]]


def draw_run(scenario: Scenario, scheme: Scheme, seed: int) -> RunDraws:
    """Every row of the run's draws (iterations x n), as one block."""
    return DrawBlocks(scenario, scheme, seed).next(scenario.iterations)


def message_entries(scenario: Scenario, scheme: Scheme) -> int:
    """Entries of one message: ceil(d / m)."""
    return -(-scenario.gradient.length // scheme.m)


def message_bytes(scenario: Scenario, scheme: Scheme, compressor: Compressor | None = None) -> int:
    """Bytes of one message: its ceil(d / m) entries of the gradient's dtype, or the payload ``compressor`` (a
    variant's) makes of them."""
    entries, itemsize = message_entries(scenario, scheme), DTYPE_BYTES[scenario.gradient.dtype]
    return entries * itemsize if compressor is None else compressor.payload_bytes(entries, itemsize)


def weights_bytes(scenario: Scenario) -> int:
    """Bytes of the weights the master sends a worker with its job: the gradient's length, uncompressed."""
    return scenario.gradient.length * DTYPE_BYTES[scenario.gradient.dtype]


def message_delay(scenario: Scenario, scheme: Scheme, compressor: Compressor | None = None) -> float:
    """Seconds every message takes besides its transfer: the network's latency, plus compressing it on its worker
    and decompressing it on the master at the compressor's cost per entry (a constant for every message of a
    variant, so where it falls on the way does not change when a message arrives, shared link or not)."""
    latency = scenario.network.latency
    if compressor is None or not (compressor.compress_cost or compressor.decompress_cost):
        return latency
    return latency + (compressor.compress_cost + compressor.decompress_cost) * message_entries(scenario, scheme)
