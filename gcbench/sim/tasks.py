"""One task of a simulation: a (sweep point, variant, seed) simulated on its engine into a results writer.

The runner (runner.py) runs the tasks in turn, in worker processes or as Ray tasks (ray_tasks.py); a task
run elsewhere writes its tables as a part of its own, appended to the run's files in task order.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from gcbench.results.arrow import arrow_table, value_types
from gcbench.results.rows import chunks, identity, worker_keys
from gcbench.results.schema import nodes_lost
from gcbench.results.stream import ENCODED, ResultsWriter, part_writer
from gcbench.results.summary import RunningSummary
from gcbench.scenario.build import placed, scheme_for
from gcbench.scenario.draws import message_bytes
from gcbench.scenario.loading import SweepPoint

CHUNK_ELEMENTS = 1 << 20  # worker rows per row group of the workers table, for engines that keep every row


@dataclass(frozen=True)
class Task:
    point: int
    variant: int
    seed: int


@dataclass(frozen=True)
class Tables:
    """What every task's tables share: the sweep values' Arrow types and whether to add loss and accuracy."""

    kinds: dict[str, pa.DataType]
    trained: bool
    with_workers: bool
    with_messages: bool = False  # some variant's workers send several messages: the messages table too


def write_task(
    point: SweepPoint, index: int, task: Task, tables: Tables, writer: ResultsWriter
) -> tuple[dict, dict[str, np.ndarray]]:
    """Simulate one variant at one sweep point with one seed into ``writer``; returns its identity and its
    iterations table's columns.

    The vectorised engine hands over the workers rows a chunk at a time as they are final; the event engine
    keeps them all (one task's) and they are written a chunk at a time after it.
    """
    from gcbench.sim.engines import engine_for, simulate_with
    from gcbench.sim.synchronous import simulate_synchronous

    scenario = point.scenario
    variant = scenario.variants[task.variant]
    scheme = scheme_for(scenario, variant)
    keys = identity(variant.display_label(), variant.scheme, variant.s, scheme.m, variant.policy.name, task.seed,
                    point=index, values=point.values)  # fmt: skip
    loads = np.array([scheme.step_load(w) for w in range(scenario.workers)])
    repeated = worker_keys(keys)
    # with a topology, each worker's node (the variant's own under by_code) and each iteration's nodes lost
    node_of = None if scenario.topology is None else placed(scenario, scheme).topology.node_of(scenario.workers)

    def emit(rec, first: int, end: int) -> None:
        columns = rec.worker_rows(loads, first, end)
        if node_of is not None:
            columns["node"] = node_of[columns["worker"]]
        writer.workers(arrow_table(columns, repeated, tables.kinds))

    engine = engine_for(scenario, variant)
    if engine == "vectorised":
        # (without the table no per-worker time is computed at all)
        with_workers = tables.with_workers
        rec = simulate_synchronous(scenario, variant, scheme, task.seed, emit if with_workers else None, with_workers)
    else:
        rec = simulate_with(engine, scenario, variant, scheme, task.seed)
        for first, end in chunks(rec.iterations, rec.n, CHUNK_ELEMENTS) if tables.with_workers else ():
            emit(rec, first, end)
        if tables.with_messages and rec.messages is not None:
            writer.messages(arrow_table(rec.messages.columns(), repeated, tables.kinds))
    if variant.policy.needs_master:  # (an all-reduce has no master to receive messages)
        rec.message_bytes = message_bytes(scenario, scheme, variant.compressor)
    columns = rec.iteration_columns(tables.trained, stop_text=False)
    if node_of is not None:
        columns["nodes_lost"], columns["lost_nodes"] = nodes_lost(rec.failed, node_of)
    writer.iterations(arrow_table(columns, keys, tables.kinds, encoded=ENCODED))
    return keys, columns


def run_task(
    point: SweepPoint, index: int, task: Task, with_workers: bool
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """One task's tables as columns, as ``write_task`` streams them to Parquet and pandas reads them back
    (tests compare engines with it)."""
    with tempfile.TemporaryDirectory(prefix="gcbench-") as folder:
        writer = ResultsWriter(Path(folder), with_workers)
        tables = Tables(value_types([point.values]), point.scenario.training.in_simulator, with_workers)
        write_all(point, index, task, tables, writer)
        frames = [pd.read_parquet(Path(folder) / f"{name}.parquet") for name in writer.files]
    columns = [{name: frame[name].to_numpy() for name in frame.columns} for frame in frames]
    return columns[0], columns[1] if with_workers else None


def run_part(point: SweepPoint, index: int, task: Task, tables: Tables, folder: Path) -> Path:
    """``write_task`` in another process, into a part of its own for the parent to append."""
    write_all(point, index, task, tables, part_writer(folder, tables.with_workers, tables.with_messages))
    return folder


def write_all(point: SweepPoint, index: int, task: Task, tables: Tables, writer) -> None:
    """``write_task``, then close the writer; on any failure abort it, so that no partial file is left."""
    try:
        write_task(point, index, task, tables, writer)
    except BaseException:
        writer.abort()
        raise
    writer.close()


def append_part(writer: ResultsWriter, running: RunningSummary, part: Path) -> None:
    """A task's part (``run_part``) appended to the run's files and its summary, then removed."""
    running.add(_plain(writer.append_part(part)))
    shutil.rmtree(part)


def _plain(table: pa.Table) -> pd.DataFrame:
    """A table as pandas reads its file: dictionary-encoded columns as their values."""
    columns = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns]
    return pa.table(columns, names=table.column_names).to_pandas()
