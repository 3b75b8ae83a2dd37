"""Compressors that send a few entries: the largest (top-k), or a random set every worker shares (random-k)."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from gcbench.compression._base import KEY_BYTES, NO_KEY, Compressor, Key, Payload, as_vector
from gcbench.compression._registry import register_compressor

Ratio = Annotated[float, Field(gt=0, le=1)]


def kept(length: int, ratio: float) -> int:
    """Entries a sparsifier keeps of ``length``: ceil(ratio * length), at least one."""
    return max(1, min(length, math.ceil(ratio * length)))


def index_bytes(length: int) -> int:
    return 4 if length <= np.iinfo(np.int32).max else 8


@register_compressor
class TopK(Compressor):
    """The ``ratio`` of entries largest in magnitude, with their indices; error feedback (on by default) carries
    the rest to the worker's next message (Stich et al. 2018; Aji and Heafield 2017). Biased; not linear (each
    worker picks its own entries)."""

    name: Literal["topk"] = "topk"
    ratio: Ratio = 0.01
    error_feedback: bool = True

    reference: ClassVar[str] = "Aji and Heafield, EMNLP 2017; Stich et al., NeurIPS 2018"
    examples: ClassVar[tuple] = ({"ratio": 0.1, "error_feedback": False}, {"ratio": 1.0})

    def payload_bytes(self, length: int, itemsize: int = 4) -> int:
        return kept(length, self.ratio) * (index_bytes(length) + 4)

    def error_bound(self, length: int) -> float:
        # the k largest keep at least k/d of the squared norm
        return math.sqrt(1.0 - kept(length, self.ratio) / length)

    def compress(self, vector: Any, key: Key = NO_KEY, state: dict | None = None) -> Payload:
        x = as_vector(vector)
        k = kept(len(x), self.ratio)
        # the k largest in magnitude (introselect: no floating-point kernel, so the same entries on every machine)
        indices = np.sort(np.argpartition(-np.abs(x), k - 1)[:k]) if k < len(x) else np.arange(len(x))
        dtype = np.int32 if index_bytes(len(x)) == 4 else np.int64
        return Payload(self.name, len(x), {"indices": indices.astype(dtype), "values": x[indices].astype(np.float32)})

    def decompress(self, payload: Payload) -> np.ndarray:
        out = np.zeros(payload.length, dtype=np.float32)
        out[payload.arrays["indices"]] = payload.arrays["values"]
        return out


@register_compressor
class RandomK(Compressor):
    """The ``ratio`` of entries at indices drawn from the iteration's shared seed, so every worker of an iteration
    keeps the same ones and only their values travel: it commutes with a linear decode. Without error feedback the
    values are scaled by d / k (unbiased); with it they are not (Stich et al. 2018's memory)."""

    name: Literal["randomk"] = "randomk"
    ratio: Ratio = 0.01
    error_feedback: bool = False

    reference: ClassVar[str] = "Stich et al., NeurIPS 2018; Wangni et al., NeurIPS 2018"
    examples: ClassVar[tuple] = ({"ratio": 0.1, "error_feedback": True}, {"ratio": 1.0})

    @property
    def random(self) -> bool:
        return self.ratio < 1  # (every entry kept: nothing drawn)

    claims_linear: ClassVar[bool] = True

    @property
    def unbiased(self) -> bool:
        return not self.error_feedback  # scaled by d / k only without feedback

    def payload_bytes(self, length: int, itemsize: int = 4) -> int:
        return kept(length, self.ratio) * 4 + KEY_BYTES

    def error_bound(self, length: int) -> float:
        k = kept(length, self.ratio)
        # scaled: E||x_hat - x||^2 = (d/k - 1)||x||^2; unscaled: (1 - k/d)||x||^2
        return math.sqrt(length / k - 1.0) if self.unbiased else math.sqrt(1.0 - k / length)

    def indices(self, length: int, key: Key) -> np.ndarray:
        """The iteration's indices: the same for every worker and message of it."""
        k = kept(length, self.ratio)
        if k == length:
            return np.arange(length)
        return np.sort(key.shared().choice(length, size=k, replace=False))

    def compress(self, vector: Any, key: Key = NO_KEY, state: dict | None = None) -> Payload:
        x = as_vector(vector)
        scale = len(x) / kept(len(x), self.ratio) if self.unbiased else 1.0
        values = (x[self.indices(len(x), key)] * scale).astype(np.float32)
        return Payload(self.name, len(x), {"values": values}, key=key)

    def decompress(self, payload: Payload) -> np.ndarray:
        out = np.zeros(payload.length, dtype=np.float32)
        out[self.indices(payload.length, payload.key)] = payload.arrays["values"]
        return out
