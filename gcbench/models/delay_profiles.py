"""Delay profiles of Sequential-Gradient-Coding-2 (Krishnan, Ebrahimi and Khisti, ICLR 2023; the public repository
mamaj/Sequential-Gradient-Coding-2): per round, every serverless worker's start and finish time, pickled. Read here
without running anything they name.

A profile (``w{workers}-n{rounds}-l{load}-b{batch}-c{computation}-{region}.pkl``) is a list of rounds, each a dict
with ``round``, ``started``, ``finished`` and ``results``: per worker a dict with ``worker_id``, ``started`` and
``finished`` (seconds), and in the repository's files the invocation's ``response`` and ``payload`` too. A worker's
delay in a round is ``finished − started``. ``base_comp.pkl`` beside the profiles maps a region to the line
[slope, intercept] of the mean delay against the normalised load; the slope is the base compute, the seconds one
whole data set's gradient adds (the repository's load model: docs/scenarios.md, "trace").

The unpickler admits what those files hold: lists, dicts, strings, numbers, numpy's dtypes and numeric scalars.
Any other class a pickle names (one that could run code when called) is refused, in one sentence, before it is
called.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from gcbench.errors import GcbenchError

_SCALAR_MODULES = ("numpy.core.multiarray", "numpy._core.multiarray")  # numpy 1's pickles and numpy 2's


class _Refused(Exception):
    pass


def _scalar(dtype: np.dtype, data: bytes = b""):
    """numpy's scalar constructor, for numbers only (an object scalar could hold anything)."""
    if not isinstance(dtype, np.dtype) or dtype.kind not in "biufc" or not isinstance(data, bytes):
        raise _Refused(f"a numpy scalar of dtype {dtype!r}")
    return np.frombuffer(data, dtype=dtype, count=1)[0]


class _DataOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) == ("numpy", "dtype"):
            return np.dtype
        if module in _SCALAR_MODULES and name == "scalar":
            return _scalar
        raise _Refused(f"{module}.{name}")


def load_data(path: Path, what: str):
    """The data a pickle holds, refused in one sentence where it names anything but data (or is damaged)."""
    try:
        with open(path, "rb") as file:
            return _DataOnly(file).load()
    except FileNotFoundError:
        raise GcbenchError(f"{what}: no such file: {path}") from None
    except _Refused as refused:
        raise GcbenchError(
            f"{what}: {path} names {refused}, and a delay profile holds only lists, dicts, numbers and numpy "
            "scalars; it was not loaded (a pickle can run code)."
        ) from None
    except Exception as error:  # a truncated or foreign file raises many kinds
        raise GcbenchError(f"{what}: {path} is not a readable pickle ({error.__class__.__name__}: {error}).") from None


def read_profile(path: Path, what: str = "compute.trace.path") -> np.ndarray:
    """Every worker's delay per round (rounds x workers, seconds, workers by ``worker_id``)."""
    rounds = load_data(path, what)
    if not isinstance(rounds, list) or not rounds:
        raise GcbenchError(f"{what}: {path} holds no list of rounds, so it is not a delay profile.")
    table = []
    for index, entry in enumerate(rounds):
        results = entry.get("results") if isinstance(entry, dict) else None
        if not isinstance(results, list) or not results:
            raise GcbenchError(f"{what}: {path}: round {index} has no list of results.")
        try:
            ids = [int(result["worker_id"]) for result in results]
            delays = [float(result["finished"]) - float(result["started"]) for result in results]
        except (KeyError, TypeError, ValueError):
            raise GcbenchError(
                f"{what}: {path}: a result of round {index} lacks a numeric worker_id, started or finished."
            ) from None
        table.append(np.asarray(delays)[np.argsort(ids, kind="stable")])
    widths = {len(row) for row in table}
    if len(widths) > 1:
        raise GcbenchError(f"{what}: {path}: its rounds hold {min(widths)} to {max(widths)} workers, not one number.")
    return np.vstack(table)


def read_base_compute(path: Path, region: str, what: str = "compute.trace.base_compute") -> float:
    """The slope of ``base_comp.pkl``'s line for ``region``: seconds per unit of normalised load."""
    lines = load_data(path, what)
    if not isinstance(lines, dict) or region not in lines:
        have = ", ".join(map(str, lines)) if isinstance(lines, dict) else "no regions"
        raise GcbenchError(f"{what}: {path} has no line for region '{region}' (it has {have}).")
    try:
        return float(lines[region][0])
    except (TypeError, ValueError, IndexError, KeyError):
        raise GcbenchError(f"{what}: {path}: region '{region}' holds no [slope, intercept].") from None


def at_load(base: np.ndarray, normalised_load: np.ndarray, base_load: float, base_compute: float) -> np.ndarray:
    """The repository's load model: a delay at a load is the delay measured at ``base_load`` plus the extra load
    times the base compute (``normalised_load``: the share of the data set each worker computes, per column)."""
    return base + (np.asarray(normalised_load) - base_load) * base_compute
