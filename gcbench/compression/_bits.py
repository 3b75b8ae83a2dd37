"""Fixed-width unsigned integers packed into bytes, most significant bit first: QSGD's levels.

Eight values of ``width`` bits are ``width`` bytes: each group of eight is put together in one 64-bit word by
shifts (integer arithmetic only), and the word's low ``width`` bytes are kept.
"""

from __future__ import annotations

import numpy as np


def packed_bytes(count: int, width: int) -> int:
    """Bytes of ``count`` values of ``width`` bits, packed."""
    return -(-count * width // 8)


def _shifts(width: int) -> np.ndarray:
    return np.arange(7, -1, -1, dtype=np.uint64) * np.uint64(width)


def pack(values: np.ndarray, width: int) -> np.ndarray:
    """Values in [0, 2**width) (1 <= width <= 8) as packed uint8 bytes."""
    return _pack_bytewise(values, width) if 8 % width == 0 else _pack_words(values, width)


def _pack_words(values: np.ndarray, width: int) -> np.ndarray:
    count = len(values)
    groups = -(-count // 8)
    padded = np.zeros(groups * 8, dtype=np.uint64)
    padded[:count] = values
    words = np.bitwise_or.reduce(padded.reshape(groups, 8) << _shifts(width), axis=1)
    data = words.astype(">u8").view(np.uint8).reshape(groups, 8)[:, 8 - width :]
    return np.ascontiguousarray(data).ravel()[: packed_bytes(count, width)]


def unpack(data: np.ndarray, width: int, count: int) -> np.ndarray:
    """The ``count`` values ``pack`` packed, as uint8."""
    return _unpack_bytewise(data, width, count) if 8 % width == 0 else _unpack_words(data, width, count)


def _unpack_words(data: np.ndarray, width: int, count: int) -> np.ndarray:
    groups = -(-count // 8)
    padded = np.zeros((groups, 8), dtype=np.uint8)
    padded[:, 8 - width :] = np.concatenate([data, np.zeros(groups * width - len(data), np.uint8)]).reshape(
        groups, width
    )
    words = padded.view(">u8").astype(np.uint64)  # (groups, 1)
    fields = (words >> _shifts(width)) & np.uint64((1 << width) - 1)
    return fields.ravel()[:count].astype(np.uint8)


# A width that divides 8 (1, 2, 4, 8: QSGD's default 7 levels take 4 bits) packs whole values into each byte, so
# the bytes come from uint8 shifts of strided slices, one per value a byte holds, without the 64-bit words: the
# same bytes, at a fraction of the time (width 4 at 188,810 values: 0.08 ms against 0.6 to pack, 0.34 to unpack).


def _pack_bytewise(values: np.ndarray, width: int) -> np.ndarray:
    per, count = 8 // width, len(values)
    padded = np.zeros(-(-count // per) * per, dtype=np.uint8)
    padded[:count] = values
    packed = np.zeros(len(padded) // per, dtype=np.uint8)
    for i in range(per):  # the first value of a byte takes its most significant bits
        packed |= padded[i::per] << np.uint8(width * (per - 1 - i))
    return packed


def _unpack_bytewise(data: np.ndarray, width: int, count: int) -> np.ndarray:
    per, mask = 8 // width, np.uint8((1 << width) - 1)
    data = np.asarray(data, dtype=np.uint8)
    values = np.empty(len(data) * per, dtype=np.uint8)
    for i in range(per):
        np.bitwise_and(data >> np.uint8(width * (per - 1 - i)), mask, out=values[i::per])
    return values[:count]
