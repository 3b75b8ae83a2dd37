"""The results tables as Arrow columns: numpy arrays in, no row objects; a run's identity dictionary-encoded.

A task's identity (variant, scheme, s, m, policy, point, sweep values, seed) is
one value repeated on every row. A string becomes a dictionary of one entry with
all-zero indices: no string per row, and Parquet stores it as a run of one
index. A number is a filled int64 or float64 array (one memset): Parquet's
dictionary path for integers cost 4.9 ns a row against 1.6 ns plain, measured
here, and lz4 shrinks the plain run to almost nothing. Floats stay float64
(docs/results.md says why), integers int64 and flags bool, so a reader gets
back exactly the dtypes an earlier gcbench wrote.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

_zeros = np.zeros(0, dtype=np.int32)  # shared all-zero dictionary indices, grown as tables need more rows
_filled: dict[tuple[Any, str], np.ndarray] = {}  # a filled array per (value, dtype), grown likewise (read only)


def value_types(values: Iterable[Mapping[str, Any]]) -> dict[str, pa.DataType]:
    """One Arrow type per key over every mapping (sweep points' values), so every task's table has one schema.

    Ints and floats mixed in one swept path become float64, as pandas made of them when it joined the tasks.
    """
    collected: dict[str, list[Any]] = {}
    for mapping in values:
        for key, value in mapping.items():
            collected.setdefault(key, []).append(value)
    return {key: pa.array(found).type for key, found in collected.items()}


def constant(value: Any, rows: int, kind: pa.DataType | None = None) -> pa.Array:
    """``value`` on ``rows`` rows (``kind``: its type; inferred without one): a string as a dictionary of one
    entry, a number or flag as a filled array."""
    global _zeros
    single = pa.array([value], type=kind)
    if pa.types.is_integer(single.type) or pa.types.is_floating(single.type) or pa.types.is_boolean(single.type):
        dtype = np.dtype(single.type.to_pandas_dtype())
        filled = _filled.get((value, dtype.str))
        if filled is None or len(filled) < rows:
            if len(_filled) > 64:  # (a sweep of many values: keep the cache small)
                _filled.clear()
            filled = _filled[(value, dtype.str)] = np.full(rows, value, dtype=dtype)
            filled.flags.writeable = False
        return pa.array(filled[:rows])
    if len(_zeros) < rows:
        _zeros = np.zeros(max(rows, 2 * len(_zeros)), dtype=np.int32)
    return pa.DictionaryArray.from_arrays(_zeros[:rows], single)


def arrow_table(
    columns: Mapping[str, np.ndarray],
    keys: Mapping[str, Any],
    kinds: Mapping[str, pa.DataType] | None = None,
    encoded: Iterable[str] = (),
) -> pa.Table:
    """``keys`` (each a constant, dictionary-encoded) then ``columns``; ``encoded``: columns to dictionary-encode
    as well (few distinct values, such as the stop reason). Fields hold no nulls (NaN is a value, not a null)."""
    rows = len(next(iter(columns.values())))
    kinds = kinds or {}
    arrays = {name: constant(value, rows, kinds.get(name)) for name, value in keys.items()}
    for name, values in columns.items():
        arrays[name] = _encoded(values) if name in encoded else _array(values)
    fields = [pa.field(name, array.type, nullable=array.null_count > 0) for name, array in arrays.items()]
    return pa.Table.from_arrays(list(arrays.values()), schema=pa.schema(fields))


def _array(values: np.ndarray) -> pa.Array:
    """A numpy column as Arrow: numbers without a copy; flags packed to Arrow's bits by numpy (pyarrow's own
    conversion packs them one at a time, 2.4 ns a flag against 0.2 measured here)."""
    if isinstance(values, np.ndarray) and values.dtype == np.bool_ and values.ndim == 1:
        bits = np.packbits(values, bitorder="little")
        return pa.BooleanArray.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    return pa.array(values)


def _encoded(values: np.ndarray) -> pa.DictionaryArray:
    """A column of few distinct values (Python strings, or numpy's) as a dictionary array, hashed once each."""
    codes, uniques = pd.factorize(values)
    return pa.DictionaryArray.from_arrays(codes.astype(np.int32), pa.array(np.asarray(uniques, dtype=str)))
