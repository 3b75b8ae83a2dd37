"""Write a run's tables to Parquet as its tasks finish, so memory holds one chunk of one task, never the run.

Each table goes to a hidden ``.<name>.partial`` beside its final name and is
renamed into place when the run is done (a reader never sees half a file, and a
run that fails leaves none). Every call appends one row group: a task's
iterations, or a chunk of a task's workers rows. The files carry no Arrow
schema of their own, so pandas reads the dictionary-encoded identity columns
back as plain strings and integers, as before the tables were streamed.

Tasks that run in other processes write parts (``part_writer``) that the parent
appends in task order (``append_part``), a row group at a time.

The Parquet encoding (most of a streamed run's cost beyond the simulation) runs
in one writer thread, which takes the tables in the order given while the caller
builds the next: pyarrow encodes without the GIL. One table waits at most, so
memory holds three chunks at most (being built, waiting, being written). A table
handed over must not change afterwards (the recorder gives each chunk new arrays).
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from gcbench.results.schema import ITERATION_COLUMNS, MESSAGE_COLUMNS, WORKER_COLUMNS

TABLES = {"iterations": ITERATION_COLUMNS, "workers": WORKER_COLUMNS, "messages": MESSAGE_COLUMNS}
ENCODED = ("stop", "lost_nodes")  # columns besides the identity that have few distinct values: dictionary-encoded
STATISTICS = ("variant", "scheme", "policy", "point", "seed", "iteration")  # min/max kept: a reader can filter
# How (measured on a chunk of 1M workers rows: 42 ns a row, 18 bytes): floats plain (a dictionary of random
# times costs more than it saves), lz4 for the runs (a start time repeated on an iteration's n rows, the
# iteration index, the identity), nothing for the times that never repeat; batches of 64k values (the default
# 1,024 cost 16% more).
UNCOMPRESSED = ("compute_end", "arrival")
OPTIONS = {"write_batch_size": 1 << 16}


class TableFile:
    """One table's Parquet file, opened with the schema of its first row group."""

    def __init__(self, path: Path, table: str, store_schema: bool = False) -> None:
        self.path, self.table, self.store_schema = path, table, store_schema
        self.partial = path.with_name(f".{path.name}.partial")
        self.writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table) -> None:
        if self.writer is None:
            self.writer = self._open(table.schema)
        elif table.schema != self.writer.schema:
            table = table.cast(self.writer.schema)
        self.writer.write_table(table, row_group_size=len(table) or 1)

    def _open(self, schema: pa.Schema) -> pq.ParquetWriter:
        dictionaries = [f.name for f in schema if pa.types.is_dictionary(f.type)]
        statistics = [name for name in schema.names if name in STATISTICS]
        compression = {name: "none" if name in UNCOMPRESSED else "lz4" for name in schema.names}
        return pq.ParquetWriter(
            self.partial, schema, use_dictionary=dictionaries or False, write_statistics=statistics or False,
            compression=compression, store_schema=self.store_schema, **OPTIONS,
        )  # fmt: skip

    def close(self) -> None:
        """Finish the file and put it in place (nothing is written for a table that got no rows)."""
        if self.writer is not None:
            self.writer.close()
            os.replace(self.partial, self.path)

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.partial.unlink(missing_ok=True)


class Background:
    """Runs calls in order in one thread; an error in one is raised by the next ``call`` or by ``finish``."""

    def __init__(self) -> None:
        self.calls: queue.Queue[Callable[[], None] | None] = queue.Queue(maxsize=1)
        self.error: BaseException | None = None
        # started by the first call: a run's task processes are forked before it (no thread to fork with)
        self.thread = threading.Thread(target=self._run, name="gcbench-parquet-writer", daemon=True)

    def _run(self) -> None:
        while (call := self.calls.get()) is not None:
            if self.error is None:
                try:
                    call()
                except BaseException as error:  # noqa: BLE001 (handed to the caller's thread)
                    self.error = error

    def call(self, call: Callable[[], None]) -> None:
        self._raise()
        if not self.thread.is_alive() and self.thread.ident is None:
            self.thread.start()
        self.calls.put(call)

    def finish(self) -> None:
        """Wait for every call; raise the first error."""
        if self.thread.is_alive():
            self.calls.put(None)
            self.thread.join()
        self._raise()

    def _raise(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error


class ResultsWriter:
    """iterations.parquet and, unless ``with_workers`` is false, workers.parquet in ``directory``; with
    ``with_messages`` (and the workers table) also messages.parquet (gcbench/results/messages.py)."""

    def __init__(
        self, directory: Path, with_workers: bool, store_schema: bool = False, with_messages: bool = False
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory, self.with_workers = directory, with_workers
        self.with_messages = with_workers and with_messages
        names = ("iterations", "workers") if with_workers else ("iterations",)
        names += ("messages",) if self.with_messages else ()
        self.files = {name: TableFile(directory / f"{name}.parquet", name, store_schema) for name in names}
        self.iteration_rows = 0
        self.background = Background()

    def iterations(self, table: pa.Table) -> None:
        _check(table, "iterations")
        self.background.call(lambda: self.files["iterations"].write(table))
        self.iteration_rows += len(table)

    def workers(self, table: pa.Table) -> None:
        _check(table, "workers")
        self.background.call(lambda: self.files["workers"].write(table))

    def messages(self, table: pa.Table) -> None:
        _check(table, "messages")
        self.background.call(lambda: self.files["messages"].write(table))

    def append_part(self, part: Path) -> pa.Table:
        """Append a part written by ``part_writer``, a row group at a time; returns its iterations table."""
        iterations = pq.read_table(part / "iterations.parquet")
        self.iterations(iterations)
        workers = part / "workers.parquet"
        if self.with_workers and workers.is_file():
            source = pq.ParquetFile(workers)
            for group in range(source.num_row_groups):
                self.workers(source.read_row_group(group))
        messages = part / "messages.parquet"
        if self.with_messages and messages.is_file():
            self.messages(pq.read_table(messages))
        return iterations

    def close(self) -> None:
        try:
            self.background.finish()
        except BaseException:
            self.abort()
            raise
        for file in self.files.values():
            file.close()
        # never leave an earlier run's workers or messages table beside this run's iterations
        for name in ("workers", "messages"):
            if name not in self.files:
                (self.directory / f"{name}.parquet").unlink(missing_ok=True)

    def abort(self) -> None:
        try:
            self.background.finish()
        except BaseException:  # noqa: BLE001, S110 (the run failed already: that error is the one to raise)
            pass
        for file in self.files.values():
            file.abort()


def _check(table: pa.Table, name: str) -> None:
    """Refuse, in the caller's thread, a table that lacks the schema's columns."""
    missing = [c for c in TABLES[name] if c not in table.column_names]
    if missing:
        raise ValueError(f"the {name} table lacks the schema's columns {missing}")


def part_writer(directory: Path, with_workers: bool, with_messages: bool = False) -> ResultsWriter:
    """A task's tables in a folder of their own, with their Arrow schema, for ``append_part`` to read back."""
    return ResultsWriter(directory, with_workers, store_schema=True, with_messages=with_messages)
