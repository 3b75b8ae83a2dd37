"""Compressors that keep every entry at a lower precision: none (the message as it is), fp16, bf16."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np

from gcbench.compression._base import NO_KEY, Compressor, Key, Payload, as_vector
from gcbench.compression._registry import register_compressor


@register_compressor
class NoCompression(Compressor):
    """The message as it is: every entry at the gradient's own precision."""

    name: Literal["none"] = "none"
    reference: ClassVar[str] = "-"

    claims_unbiased: ClassVar[bool] = True
    claims_linear: ClassVar[bool] = True

    def payload_bytes(self, length: int, itemsize: int = 4) -> int:
        return length * itemsize

    def error_bound(self, length: int) -> float:
        return 0.0

    def compress(self, vector: Any, key: Key = NO_KEY, state: dict | None = None) -> Payload:
        return Payload(self.name, len(vector), {"values": as_vector(vector)})

    def decompress(self, payload: Payload) -> np.ndarray:
        return payload.arrays["values"]


@register_compressor
class Float16(Compressor):
    """Every entry rounded to IEEE half precision (as PyTorch's fp16 communication hook): 16 bits a parameter.

    Linear up to rounding; an entry beyond 65504 in magnitude overflows (the error bound is for entries in
    half precision's normal range, 6.1e-5 to 65504 in magnitude)."""

    name: Literal["fp16"] = "fp16"
    reference: ClassVar[str] = "IEEE 754 binary16; PyTorch DDP fp16_compress_hook"

    claims_linear: ClassVar[bool] = True  # up to rounding

    def payload_bytes(self, length: int, itemsize: int = 4) -> int:
        return 2 * length

    def error_bound(self, length: int) -> float:
        return 2.0**-11  # half an ulp, relative, for every entry in the normal range

    def compress(self, vector: Any, key: Key = NO_KEY, state: dict | None = None) -> Payload:
        return Payload(self.name, len(vector), {"values": as_vector(vector).astype(np.float16)})

    def decompress(self, payload: Payload) -> np.ndarray:
        return payload.arrays["values"].astype(np.float32)


@register_compressor
class BFloat16(Compressor):
    """Every entry rounded to bfloat16 (float32's exponent, 8 bits of mantissa; rounding to nearest, ties to even),
    as PyTorch's bf16 communication hook: 16 bits a parameter, no overflow where float32 has none."""

    name: Literal["bf16"] = "bf16"
    reference: ClassVar[str] = "Kalamkar et al. 2019; PyTorch DDP bf16_compress_hook"

    claims_linear: ClassVar[bool] = True  # up to rounding

    def payload_bytes(self, length: int, itemsize: int = 4) -> int:
        return 2 * length

    def error_bound(self, length: int) -> float:
        return 2.0**-8  # half an ulp of an 8-bit significand, relative

    def compress(self, vector: Any, key: Key = NO_KEY, state: dict | None = None) -> Payload:
        bits = np.ascontiguousarray(as_vector(vector), dtype=np.float32).view(np.uint32)
        rounded = (bits.astype(np.uint64) + 0x7FFF + ((bits >> 16) & 1)) >> 16  # to nearest, ties to even
        return Payload(self.name, len(bits), {"values": rounded.astype(np.uint16)})

    def decompress(self, payload: Payload) -> np.ndarray:
        return (payload.arrays["values"].astype(np.uint32) << 16).view(np.float32)
