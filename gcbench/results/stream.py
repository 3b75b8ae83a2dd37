"""Write a run's tables to Parquet as its tasks finish, so memory holds one chunk of one task, never the run.

Each table goes to a hidden ``.<name>.partial`` beside its final name and is
renamed into place when the run is done (a reader never sees half a file, and a
run that fails leaves none). Every call appends one row group: a task's
iterations, or a chunk of a task's workers rows. The files carry no Arrow
schema of their own, so pandas reads the dictionary-encoded identity columns
back as plain strings and integers, as before the tables were streamed.

Tasks that run in other processes write parts (``part_writer``) that the parent
appends in task order (``append_part``), a row group at a time.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from gcbench.results.schema import ITERATION_COLUMNS, WORKER_COLUMNS

TABLES = {"iterations": ITERATION_COLUMNS, "workers": WORKER_COLUMNS}
ENCODED = ("stop",)  # columns besides the identity that have few distinct values: dictionary-encoded
STATISTICS = ("variant", "scheme", "policy", "point", "seed", "iteration")  # min/max kept: a reader can filter
# How: floats are written plainly (random times do not compress, and a dictionary of them costs more than it
# saves); lz4 still shrinks the runs (a start time repeated on an iteration's n rows, the iteration index).
OPTIONS = {"compression": "lz4", "write_batch_size": 1 << 16}


class TableFile:
    """One table's Parquet file, opened with the schema of its first row group."""

    def __init__(self, path: Path, table: str, store_schema: bool = False) -> None:
        self.path, self.table, self.store_schema = path, table, store_schema
        self.partial = path.with_name(f".{path.name}.partial")
        self.writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table) -> None:
        if self.writer is None:
            missing = [c for c in TABLES[self.table] if c not in table.column_names]
            if missing:
                raise ValueError(f"the {self.table} table lacks the schema's columns {missing}")
            self.writer = self._open(table.schema)
        elif table.schema != self.writer.schema:
            table = table.cast(self.writer.schema)
        self.writer.write_table(table, row_group_size=len(table) or 1)

    def _open(self, schema: pa.Schema) -> pq.ParquetWriter:
        dictionaries = [f.name for f in schema if pa.types.is_dictionary(f.type)]
        statistics = [name for name in schema.names if name in STATISTICS]
        return pq.ParquetWriter(
            self.partial, schema, use_dictionary=dictionaries or False, write_statistics=statistics or False,
            store_schema=self.store_schema, **OPTIONS,
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


class ResultsWriter:
    """iterations.parquet and, unless ``with_workers`` is false, workers.parquet in ``directory``."""

    def __init__(self, directory: Path, with_workers: bool, store_schema: bool = False) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory, self.with_workers = directory, with_workers
        names = ("iterations", "workers") if with_workers else ("iterations",)
        self.files = {name: TableFile(directory / f"{name}.parquet", name, store_schema) for name in names}
        self.iteration_rows = 0

    def iterations(self, table: pa.Table) -> None:
        self.files["iterations"].write(table)
        self.iteration_rows += len(table)

    def workers(self, table: pa.Table) -> None:
        self.files["workers"].write(table)

    def append_part(self, part: Path) -> pa.Table:
        """Append a part written by ``part_writer``, a row group at a time; returns its iterations table."""
        iterations = pq.read_table(part / "iterations.parquet")
        self.iterations(iterations)
        workers = part / "workers.parquet"
        if self.with_workers and workers.is_file():
            source = pq.ParquetFile(workers)
            for group in range(source.num_row_groups):
                self.workers(source.read_row_group(group))
        return iterations

    def close(self) -> None:
        for file in self.files.values():
            file.close()
        if not self.with_workers:  # never leave an earlier run's workers table beside this run's iterations
            (self.directory / "workers.parquet").unlink(missing_ok=True)

    def abort(self) -> None:
        for file in self.files.values():
            file.abort()


def part_writer(directory: Path, with_workers: bool) -> ResultsWriter:
    """A task's tables in a folder of their own, with their Arrow schema, for ``append_part`` to read back."""
    return ResultsWriter(directory, with_workers, store_schema=True)
