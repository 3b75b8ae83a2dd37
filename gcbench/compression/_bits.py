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
    count = len(values)
    groups = -(-count // 8)
    padded = np.zeros(groups * 8, dtype=np.uint64)
    padded[:count] = values
    words = np.bitwise_or.reduce(padded.reshape(groups, 8) << _shifts(width), axis=1)
    data = words.astype(">u8").view(np.uint8).reshape(groups, 8)[:, 8 - width :]
    return np.ascontiguousarray(data).ravel()[: packed_bytes(count, width)]


def unpack(data: np.ndarray, width: int, count: int) -> np.ndarray:
    """The ``count`` values ``pack`` packed, as uint8."""
    groups = -(-count // 8)
    padded = np.zeros((groups, 8), dtype=np.uint8)
    padded[:, 8 - width :] = np.concatenate([data, np.zeros(groups * width - len(data), np.uint8)]).reshape(
        groups, width
    )
    words = padded.view(">u8").astype(np.uint64)  # (groups, 1)
    fields = (words >> _shifts(width)) & np.uint64((1 << width) - 1)
    return fields.ravel()[:count].astype(np.uint8)
