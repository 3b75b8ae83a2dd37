"""Fixed-width packing (QSGD's levels): every width round-trips at every length, in the stated bytes, and the
bytewise path of widths dividing 8 gives the 64-bit word path's bytes."""

from __future__ import annotations

import numpy as np
import pytest

from gcbench.compression._bits import _pack_words, _unpack_words, pack, packed_bytes, unpack


@pytest.mark.parametrize("width", range(1, 9))
@pytest.mark.parametrize("count", [0, 1, 7, 8, 9, 15, 16, 17, 1001])
def test_values_round_trip_in_the_stated_bytes(width, count):
    values = np.random.default_rng(width * 1000 + count).integers(0, 1 << width, count).astype(np.uint8)
    data = pack(values, width)
    assert data.dtype == np.uint8 and len(data) == packed_bytes(count, width)
    np.testing.assert_array_equal(unpack(data, width, count), values)
    # every width's bytes are the 64-bit word path's (the bytewise one serves 1, 2, 4 and 8)
    np.testing.assert_array_equal(data, _pack_words(values, width))
    np.testing.assert_array_equal(_unpack_words(data, width, count), values)


def test_the_first_value_takes_the_most_significant_bits():
    assert pack(np.array([1, 2, 3], np.uint8), 4).tolist() == [0x12, 0x30]
    assert pack(np.array([1, 0, 1], np.uint8), 1).tolist() == [0b10100000]
