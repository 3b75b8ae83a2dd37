"""The results schema shared by simulated and real runs, its writer, reader and summary."""

from gcbench.results.schema import ITERATION_COLUMNS, TRAINED_COLUMNS, WORKER_COLUMNS
from gcbench.results.store import read_results, write_results
from gcbench.results.summary import summarize

__all__ = ["ITERATION_COLUMNS", "TRAINED_COLUMNS", "WORKER_COLUMNS", "read_results", "summarize", "write_results"]
