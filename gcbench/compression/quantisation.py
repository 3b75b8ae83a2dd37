"""Compressors that keep a few bits an entry and one scale a message: QSGD's stochastic levels, scaled sign."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from gcbench.compression._base import NO_KEY, Compressor, Key, Payload, as_vector
from gcbench.compression._bits import pack, packed_bytes, unpack
from gcbench.compression._registry import register_compressor


@register_compressor
class QSGD(Compressor):
    """Each entry stochastically rounded to one of ``levels`` equal steps of the message's norm, with its sign:
    unbiased; ceil(log2(2 levels + 1)) bits an entry, packed, and the norm.

    Alistarh et al. 2017's quantiser Q_s with s = levels and the 2-norm, sent at a fixed width (no Elias coding,
    so the size is known before the message exists)."""

    name: Literal["qsgd"] = "qsgd"
    levels: Annotated[int, Field(ge=1, le=127)] = 7
    error_feedback: bool = False

    reference: ClassVar[str] = "Alistarh et al., NeurIPS 2017"
    examples: ClassVar[tuple] = ({"levels": 1}, {"levels": 127}, {"levels": 3, "error_feedback": True})

    @property
    def random(self) -> bool:
        return True

    claims_unbiased: ClassVar[bool] = True

    @property
    def width(self) -> int:
        """Bits an entry: the level with its sign, level + levels in [0, 2 levels]."""
        return math.ceil(math.log2(2 * self.levels + 1))

    def payload_bytes(self, length: int, itemsize: int = 4) -> int:
        return packed_bytes(length, self.width) + 4

    def error_bound(self, length: int) -> float:
        # Alistarh et al., Lemma 3.1: E||Q(x) - x||^2 <= min(d / s^2, sqrt(d) / s) ||x||^2
        s = self.levels
        return math.sqrt(min(length / s**2, math.sqrt(length) / s))

    def compress(self, vector: Any, key: Key = NO_KEY, state: dict | None = None) -> Payload:
        x = as_vector(vector).astype(np.float64)
        norm = float(np.linalg.norm(x))
        if norm == 0.0 or not math.isfinite(norm):  # (a diverged gradient decompresses to NaN, as it was)
            norm = norm if norm == 0.0 else float("nan")
            shifted = np.full(len(x), self.levels, dtype=np.uint8)
        else:  # (in place, in this order: |x| / norm * levels, rounded up with probability its fraction)
            scaled = np.abs(x)
            scaled /= norm
            scaled *= self.levels
            level = np.floor(scaled)
            scaled -= level  # the fraction
            level += key.own().random(len(x)) < scaled
            np.negative(level, out=level, where=x < 0)
            level += self.levels  # a signed level in [-levels, levels] sent as level + levels
            shifted = level.astype(np.uint8)
        packed = pack(shifted, self.width)
        return Payload(self.name, len(x), {"levels": packed, "norm": np.array([norm], dtype=np.float32)})

    def decompress(self, payload: Payload) -> np.ndarray:
        levels = unpack(payload.arrays["levels"], self.width, payload.length).astype(np.float32) - self.levels
        return levels * (payload.arrays["norm"][0] / self.levels)


@register_compressor
class ScaledSign(Compressor):
    """Each entry's sign, one bit, times one scale per message (the mean absolute entry), with error feedback:
    EF-SignSGD's compressor (Karimireddy et al. 2019). Biased; the feedback carries what it drops."""

    name: Literal["sign"] = "sign"
    error_feedback: bool = True

    reference: ClassVar[str] = "Karimireddy et al., ICML 2019"
    examples: ClassVar[tuple] = ({"error_feedback": False},)

    def payload_bytes(self, length: int, itemsize: int = 4) -> int:
        return packed_bytes(length, 1) + 4

    def error_bound(self, length: int) -> float:
        # ||x - (|x|_1 / d) sign(x)||^2 = ||x||^2 - |x|_1^2 / d <= (1 - 1/d) ||x||^2
        return math.sqrt(1.0 - 1.0 / length)

    def compress(self, vector: Any, key: Key = NO_KEY, state: dict | None = None) -> Payload:
        x = as_vector(vector)
        scale = float(np.mean(np.abs(x, dtype=np.float64))) if len(x) else 0.0
        return Payload(self.name, len(x), {"signs": np.packbits(x >= 0), "scale": np.array([scale], np.float32)})

    def decompress(self, payload: Payload) -> np.ndarray:
        signs = np.unpackbits(payload.arrays["signs"])[: payload.length].astype(np.float32) * 2.0 - 1.0
        return signs * payload.arrays["scale"][0]
