"""Weighted sums of message vectors, for numpy arrays and torch tensors alike.

Both paths accumulate in place with a fused multiply-add (BLAS axpy for numpy,
``Tensor.add_(alpha=...)`` for torch), so a weighted sum reads each message once,
like a plain sum, and torch tensors never leave their device. ``combine_into``
forms all m decoded slices in the same single pass over the messages.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

# Columns taken at a time on a CPU: 1 MiB of each output slice and of each message (2^18 float32). Each
# message's block is read from memory once and added into the m slices' blocks while they are in cache
# (L2/L3). Measured with out= at d = 11.2M, CPU time over a plain sum: 2^18 columns 0.64 / 0.81 / 0.94 for
# m = 1 / 2 / 3; 2^17 columns 0.73 / 0.95 / 1.08 (more Python calls); m x 1 MiB blocks at m = 3 were 2.1.
BLOCK_BYTES = 1 << 20
_AXPY_NAMES = {np.dtype(np.float32): "saxpy", np.dtype(np.float64): "daxpy"}


@functools.cache
def _axpy(dtype: np.dtype):
    """BLAS axpy for float32 / float64, else None. Imported on first use: scipy.linalg costs 0.4 s of start-up
    that a simulation without training never needs."""
    if dtype not in _AXPY_NAMES:
        return None
    from scipy.linalg import blas

    return getattr(blas, _AXPY_NAMES[dtype])


def is_torch(x: object) -> bool:
    """True for a torch tensor, without importing torch."""
    return type(x).__module__.startswith("torch")


def weighted_sum_into(out, weights: Sequence[float], vectors: Sequence) -> None:
    """Set ``out`` (a 1-D array or tensor) to sum_i weights[i] * vectors[i]."""
    if is_torch(out):
        out.zero_()
        for w, v in zip(weights, vectors, strict=True):
            if w != 0.0:
                out.add_(v, alpha=float(w))
        return
    out[...] = 0
    axpy = _axpy(out.dtype) if out.flags.c_contiguous else None
    for w, v in zip(weights, vectors, strict=True):
        if w == 0.0:
            continue
        if axpy is not None and v.dtype == out.dtype and v.flags.c_contiguous:
            axpy(v, out, a=float(w))
        else:
            out += float(w) * v


def empty_like_vector(template, length: int):
    """A new 1-D vector of the template's kind, dtype and device."""
    if is_torch(template):
        dtype = template.dtype if template.is_floating_point() else None
        return template.new_empty(length, dtype=dtype)
    dtype = template.dtype if np.issubdtype(template.dtype, np.floating) else np.float64
    return np.empty(length, dtype=dtype)


def pad_to(vector, length: int):
    """The vector itself if it has this length, else a zero-padded copy."""
    if vector.shape[0] == length:
        return vector
    out = empty_like_vector(vector, length)
    out[: vector.shape[0]] = vector
    out[vector.shape[0] :] = 0
    return out


def combine_into(rows: Sequence, weights: np.ndarray, vectors: Sequence) -> None:
    """Set ``rows[u]`` (m vectors of length L) to sum_i weights[u, i] * vectors[i]: W times the r x L block.

    A row may be shorter than L: it gets the first entries of its sum (the decode's last slice, whose end is
    padding, is written straight into the caller's vector, with no spare vector and copy). One pass over
    the messages for all m rows (a separate pass per row reads every message m times).
    Messages whose weights are all zero are skipped. On a GPU it is one matrix product; on a CPU a
    sweep over cache-sized blocks of columns, in which each message's block is read once and added
    into every row's block while both are in cache.
    """
    used = np.flatnonzero(np.any(weights != 0.0, axis=0))
    if used.size == 0:
        for row in rows:
            row[...] = 0
        return
    weights, vectors = weights[:, used], [vectors[i] for i in used]
    if is_torch(rows[0]) and rows[0].device.type != "cpu":
        product_into(rows, weights, vectors)
        return
    if is_torch(rows[0]):
        views = _numpy_views([*rows, *vectors])
        if views is not None:  # CPU float tensors: numpy's path on the same memory (a torch op per block costs more)
            rows, vectors = views[: len(rows)], views[len(rows) :]
    per_row = [w.tolist() for w in weights.T]  # per message: its weight in each row, as Python floats
    torch_rows = is_torch(rows[0])
    itemsize = rows[0].element_size() if torch_rows else rows[0].itemsize
    columns = max(1024, BLOCK_BYTES // itemsize)
    axpy = None if torch_rows else _axpy_for(rows, vectors)
    if axpy is not None:
        _axpy_sweep(axpy, rows, per_row, vectors, columns)
        return
    add = _torch_block_add if torch_rows else _numpy_block_add
    for start in range(0, max(row.shape[0] for row in rows), columns):
        end = start + columns
        add([row[start:end] for row in rows], per_row, [v[start:end] for v in vectors])


def product_into(rows: Sequence, weights: np.ndarray, vectors: Sequence) -> None:
    """``combine_into`` on a GPU: one matrix product W @ block (m x L) of the messages as one r x L block, in
    the messages' dtype (torch leaves TF32 off for float32 matrix products unless told otherwise).

    Messages that already lie one after another in memory (the learner copies a step's messages to the GPU
    into one block) are that block as they are; others are stacked into one first. Rows that lie one after
    another in one vector (the decoded gradient's slices) are written by the product itself; others (a short
    last slice) are copied out of it."""
    block = _consecutive(vectors)
    if block is None:
        block = _torch_block(vectors)
    w = _torch_weights(weights, block)
    target = _consecutive(rows)
    if target is not None and target.shape[1] == block.shape[1]:
        target.addmm_(w, block, beta=0.0)  # target = W @ block, in place (beta 0: its old values are not read)
        return
    for row, value in zip(rows, (w @ block).unbind(0), strict=True):
        row.copy_(value[: row.shape[0]])


def _consecutive(vectors: Sequence):
    """The vectors as one r x L tensor sharing their memory, where they are contiguous, of one length, dtype
    and storage, each starting where the one before ends; else None."""
    first = vectors[0]
    length, size = first.shape[0], first.element_size()
    for i, v in enumerate(vectors):
        if (v.shape[0] != length or v.dtype != first.dtype or not v.is_contiguous()
                or v.data_ptr() != first.data_ptr() + i * length * size
                or v.untyped_storage().data_ptr() != first.untyped_storage().data_ptr()):  # fmt: skip
            return None
    return first.as_strided((len(vectors), length), (length, 1))


def _axpy_for(rows: list[np.ndarray], vectors: list[np.ndarray]):
    """BLAS axpy when every row and message is C-contiguous and of one float32/float64 dtype, else None."""
    dtype = rows[0].dtype
    if any(a.dtype != dtype or not a.flags.c_contiguous for a in [*rows, *vectors]):
        return None
    return _axpy(dtype)


def _axpy_sweep(axpy, rows: list[np.ndarray], per_row: list[list[float]], vectors: list, columns: int) -> None:
    """The block sweep with BLAS axpy on offsets into the whole vectors: no slice objects per call (a call
    with a slice pair and keywords cost 1.3 us against 0.4 us, and a decode makes m r d / (m columns) calls)."""
    for start in range(0, max(row.shape[0] for row in rows), columns):
        counts = [min(columns, row.shape[0] - start) for row in rows]  # a short row may end in this block
        for u, (row, count) in enumerate(zip(rows, counts, strict=True)):
            if count > 0:
                np.multiply(vectors[0][start : start + count], per_row[0][u], out=row[start : start + count])
        for w, v in zip(per_row[1:], vectors[1:], strict=True):
            for u, (row, count) in enumerate(zip(rows, counts, strict=True)):
                if w[u] != 0.0 and count > 0:
                    axpy(v, row, count, w[u], start, 1, start, 1)


def _numpy_block_add(rows: list[np.ndarray], per_row: list[list[float]], blocks: list[np.ndarray]) -> None:
    for u, row in enumerate(rows):
        np.multiply(blocks[0][: row.shape[0]], per_row[0][u], out=row)
    axpy = _axpy(rows[0].dtype) if all(row.flags.c_contiguous for row in rows) else None
    for w, v in zip(per_row[1:], blocks[1:], strict=True):
        fast = axpy is not None and v.dtype == rows[0].dtype and v.flags.c_contiguous
        for u, row in enumerate(rows):
            if w[u] == 0.0:
                continue
            if fast:
                axpy(v[: row.shape[0]], row, a=w[u])
            else:
                row += w[u] * v[: row.shape[0]]


def _numpy_views(tensors: list) -> list[np.ndarray] | None:
    """numpy arrays sharing the tensors' memory, when every one is a CPU tensor of a dtype numpy has."""
    if any(t.device.type != "cpu" or str(t.dtype) not in ("torch.float32", "torch.float64") for t in tensors):
        return None
    return [t.detach().numpy() for t in tensors]


def _torch_block_add(rows: list, per_row: list[list[float]], blocks: list) -> None:
    for u, row in enumerate(rows):
        row.copy_(blocks[0][: row.shape[0]]).mul_(per_row[0][u])  # the block is in cache: the second pass is cheap
    for w, v in zip(per_row[1:], blocks[1:], strict=True):
        for u, row in enumerate(rows):
            if w[u] != 0.0:
                row.add_(v[: row.shape[0]], alpha=w[u])


def _torch_block(vectors: list):
    block = vectors[0].new_empty((len(vectors), vectors[0].shape[0]))
    for row, v in zip(block.unbind(0), vectors, strict=True):
        row.copy_(v)
    return block


def _torch_weights(weights: np.ndarray, like):
    return like.new_tensor(weights)  # like's dtype and device
