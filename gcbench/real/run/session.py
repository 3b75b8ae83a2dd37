"""A real run's (variant, seed) runs, taking turns, with the results written as they go.

Seeds run one after another; within a seed the variants take turns, one block
of ``training.checkpoint_every`` iterations each, in the scenario's order
(round robin), so slow drift in the machine's background load falls on every
variant alike. A block ends at a checkpoint, so the turns and ``--resume``
share one state: a resumed run takes up the turns where each run's checkpoint
left it. After every block the tables are rewritten (``iterations.parquet``,
``workers.parquet``) and ``run.json`` says how far the run is, so a partial run
can be plotted.

On an emulated cluster, a scenario whose crashes take whole nodes runs its variants one after another instead: a
node's crash kills every process on it, the other variants' idle workers too, so each variant runs alone, on the
whole cluster (the nodes it lost are started again before the next).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from gcbench.cluster import backend_class
from gcbench.real.run.standalone import block_end
from gcbench.real.run.training_run import OnIteration, VariantStopped
from gcbench.results.metadata import utc_now
from gcbench.results.schema import nodes_lost
from gcbench.results.store import write_messages, write_metadata, write_tables
from gcbench.scenario.schema import Scenario


class Terminated(KeyboardInterrupt):
    """SIGTERM (what schedulers such as SLURM send), handled as Ctrl-C is."""


EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}  # 128 + the signal's number, as shells report it


class Display(Protocol):
    def begin(self, runs: list) -> None: ...
    def on_iteration(self, run) -> OnIteration: ...
    def block_done(self, run) -> None: ...
    def say(self, message: str) -> None: ...
    def close(self) -> None: ...


def build_runs(scenario: Scenario, backend: str, data, out: Path) -> list:
    """Every run of the scenario on ``backend``, as its registered class builds them (gcbench/real/backend.py);
    each picks up its checkpoint if it has one."""
    return backend_class(backend).runs(scenario, data, out)


def turns(runs: list, end_of_block: Callable[[int], int], alone: bool = False) -> Iterator[tuple[Any, int]]:
    """(run, last iteration of its block), seed by seed, the seed's unfinished runs taking turns (``alone``: each
    run's blocks to its end before the next run's)."""
    for seed in dict.fromkeys(run.seed for run in runs):
        group = [run for run in runs if run.seed == seed]
        while active := [run for run in group if not run.finished]:
            for run in active:
                while not run.finished:
                    yield run, end_of_block(run.next_iteration)
                    if not alone:
                        break


def runs_alone(scenario: Scenario) -> bool:
    """Whether the variants run one after another: on an emulated cluster, where a crash takes a whole node."""
    from gcbench.real.run.emulated import inside_emulation

    failures = scenario.failures
    takes_nodes = getattr(failures, "level", "worker") == "node" or any(
        entry.node is not None for entry in getattr(failures, "schedule", [])
    )
    return takes_nodes and inside_emulation() is not None


class Session:
    """Trains the runs in turns and keeps the results directory up to date; ``meta`` is run.json."""

    def __init__(self, scenario: Scenario, runs: list, out: Path, meta: dict[str, Any], display: Display) -> None:
        self.scenario, self.runs, self.out, self.meta, self.display = scenario, runs, out, meta, display
        self.began = time.perf_counter()
        self.stopped: list[str] = []

    def train(self) -> str:
        """Run every turn; the final status: complete, or stopped when a variant could not go on."""
        self.flush("running")
        self.display.begin(self.runs)
        try:
            for run, last in turns(self.runs, lambda first: block_end(first, self.scenario), runs_alone(self.scenario)):
                self._turn(run, last)
                self.flush("running")
        except KeyboardInterrupt:
            self.display.close()
            with signals_ignored():
                self.close(interrupted=True)
                self.flush("interrupted")
            raise
        self.display.close()
        status = "stopped" if self.stopped else "complete"
        with signals_ignored():
            self.close()
            self.flush(status)
        return status

    def _turn(self, run, last: int) -> None:
        try:
            run.run_block(last, self.display.on_iteration(run))
        except VariantStopped as error:  # keep what it finished, and go on with the other variants
            self.display.say(f"error: {error}")
            self.stopped.append(run.label)
        self.display.block_done(run)

    def tables(self) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
        frames = [(run, *run.frames()) for run in self.runs]
        iterations = [f for _, f, _ in frames if f is not None and len(f)]
        workers = [placed_nodes(run, w) for run, _, w in frames if w is not None and len(w)]
        workers = pd.concat(workers, ignore_index=True) if workers else None
        iterations = pd.concat(iterations, ignore_index=True) if iterations else None
        if workers is not None and "node" in workers:  # (none without a topology)
            if iterations is not None:
                iterations = iterations.merge(_nodes_lost(workers), on=KEYS, how="left")
                iterations["nodes_lost"] = iterations["nodes_lost"].fillna(0).astype("int64")
                iterations["lost_nodes"] = iterations["lost_nodes"].astype(object).fillna("").astype(str)
        return iterations, workers

    def messages_table(self) -> pd.DataFrame | None:
        """Every run's messages table (None: no run's workers send several messages)."""
        frames = [run.messages_frame() for run in self.runs if hasattr(run, "messages_frame")]
        frames = [frame for frame in frames if frame is not None]
        return pd.concat(frames, ignore_index=True) if frames else None

    def flush(self, status: str) -> None:
        """Write the tables so far and run.json with this status (and this part's wall time)."""
        iterations, workers = self.tables()
        if iterations is not None:
            write_tables(self.out, iterations, workers)
            write_messages(self.out, self.messages_table())
        self.meta["status"] = status
        records = [run.node_crash_records() for run in self.runs if hasattr(run, "node_crash_records")]
        crashes = [crash for record in records for crash in record]
        if crashes:
            self.meta["node_crashes"] = crashes
        self.meta["iterations_planned"] = self.scenario.iterations * len(self.runs)
        self.meta["updated"] = utc_now()
        self._wall_holder()["wall_seconds"] = round(time.perf_counter() - self.began, 3)
        write_metadata(self.out, self.meta)

    def _wall_holder(self) -> dict[str, Any]:
        """Where this part's wall time goes: the newest resume entry, or the run itself (its first part)."""
        return self.meta["resumes"][-1] if self.meta.get("resumes") else self.meta

    def close(self, interrupted: bool = False) -> None:
        for run in self.runs:
            run.close(interrupted)


class signals_ignored:
    """Ignore Ctrl-C and SIGTERM while the results are written, so a second signal does not cut a file short."""

    def __enter__(self) -> None:
        main = threading.current_thread() is threading.main_thread()  # only the main thread handles signals
        self.previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}

    def __exit__(self, *exc: object) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)


class sigterm_as_interrupt:
    """SIGTERM raises ``Terminated`` in the main thread, as Ctrl-C raises KeyboardInterrupt.

    Installed again after Ray starts (``install``): Ray's core worker sets its own
    SIGTERM handler, which prints a C++ stack dump and aborts the driver. Ray turns an exception
    raised by a signal handler during one of its waits into a KeyboardInterrupt,
    so ``terminated`` remembers that SIGTERM came.
    """

    def __enter__(self) -> sigterm_as_interrupt:
        self.terminated = False
        self.previous = signal.signal(signal.SIGTERM, self._raise)
        return self

    def install(self) -> None:
        """Put the handler back in place (Ray's start replaces it)."""
        signal.signal(signal.SIGTERM, self._raise)

    def _raise(self, signum: int, frame: object) -> None:
        self.terminated = True
        raise Terminated()

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGTERM, self.previous)


KEYS = ["variant", "point", "seed", "iteration"]


def placed_nodes(run, workers: pd.DataFrame) -> pd.DataFrame:
    """A run's workers table with each worker's node, as its variant places it (none without a topology)."""
    topology = getattr(run.scenario, "topology", None)
    if topology is None:
        return workers
    return workers.assign(node=topology.node_of(run.scenario.workers)[workers["worker"].to_numpy()])


def _nodes_lost(workers: pd.DataFrame) -> pd.DataFrame:
    """Per (variant, point, seed, iteration), how many nodes every worker of which failed and which (iterations'
    ``nodes_lost`` and ``lost_nodes``), as the simulator's tables count them (``nodes_lost``)."""
    frames = []
    for (variant, point, seed), rows in workers.groupby(KEYS[:3], observed=True, sort=False):
        failed = rows.pivot(index="iteration", columns="worker", values="failed").fillna(False)
        node_of = rows.groupby("worker")["node"].first().reindex(failed.columns).to_numpy()
        count, which = nodes_lost(failed.to_numpy(dtype=bool), node_of)
        frames.append(pd.DataFrame({"variant": variant, "point": point, "seed": seed, "iteration": failed.index,
                                    "nodes_lost": count, "lost_nodes": which.astype(str)}))  # fmt: skip
    return pd.concat(frames, ignore_index=True)
