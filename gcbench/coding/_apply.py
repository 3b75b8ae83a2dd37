"""Weighted sums of message vectors, for numpy arrays and torch tensors alike.

Both paths accumulate in place with a fused multiply-add (BLAS axpy for numpy,
``Tensor.add_(alpha=...)`` for torch), so a weighted sum reads each message once,
like a plain sum, and torch tensors never leave their device.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.linalg import blas

_AXPY = {np.dtype(np.float32): blas.saxpy, np.dtype(np.float64): blas.daxpy}


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
    axpy = _AXPY.get(out.dtype) if out.flags.c_contiguous else None
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
