"""The compressor conformance suite: what every registered compressor must satisfy, whatever it does.

tests/test_compressors.py runs every check on every registered compressor, with its defaults and each parameter
set it lists in ``examples``; a new compressor needs no test of its own to be held to them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.compression import COMPRESSORS, Compressor, Key, MessageCompressor

LENGTHS = (1, 2, 7, 64, 1001, 4096)
DRAWS = 400  # keys per statistical check
# float32 storage of a compressed value: what "equal up to rounding" allows beyond a cast's own rounding
FLOAT32_ROUNDING = 1e-5


def parameter_sets() -> list[tuple[str, dict[str, Any]]]:
    """(name, parameters) for every registered compressor: its defaults, then each of its ``examples``."""
    return [(name, params) for name in COMPRESSORS.names() for params in ({}, *COMPRESSORS.get(name).examples)]


def make(name: str, params: dict[str, Any]) -> Compressor:
    return COMPRESSORS.get(name)(**params)


def vector(length: int, seed: int = 0) -> np.ndarray:
    """A gradient-like float32 vector: normal entries, a few larger ones, none outside fp16's normal range."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(length) * np.where(rng.random(length) < 0.05, 30.0, 1.0)
    x = np.where(np.abs(x) < 1e-3, 1e-3, x)
    return x.astype(np.float32)


def relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(a, float) - b) / max(np.linalg.norm(np.asarray(b, float)), 1e-300))


def check_stated_size(compressor: Compressor) -> None:
    """The payload is as many bytes as ``payload_bytes`` states, at every length."""
    for length in LENGTHS:
        payload = compressor.compress(vector(length), Key(iteration=3))
        assert payload.nbytes == compressor.payload_bytes(length), (length, payload.nbytes)
        assert payload.length == length
        assert np.isclose(compressor.bits_per_parameter(length), 8 * payload.nbytes / length)


def check_round_trip_within_bound(compressor: Compressor, length: int = 1001) -> None:
    """One round trip's relative error is within ``error_bound``: on every vector for a deterministic compressor,
    in mean square over keys for a random one (its bound is one), within four standard errors of that mean (a bound
    that is an equality in expectation, as random-k's, is met only so)."""
    x = vector(length)
    if not compressor.random:
        assert relative(compressor.round_trip(x, Key()), x) <= compressor.error_bound(length) * (1 + 1e-6)
        return
    squared = np.square([relative(compressor.round_trip(x, Key(iteration=i, worker=i)), x) for i in range(DRAWS)])
    assert squared.mean() <= compressor.error_bound(length) ** 2 + 4 * squared.std() / np.sqrt(DRAWS)


def check_unbiased_where_claimed(compressor: Compressor, length: int = 257) -> None:
    """Where ``unbiased``: the mean of many round trips approaches x as the error bound over sqrt(draws) says
    (a fixed set of keys; the tolerance is four standard errors of that bound)."""
    if not compressor.unbiased:
        return
    x = vector(length)
    if not compressor.random:
        np.testing.assert_array_equal(compressor.round_trip(x), x)
        return
    mean = np.mean([compressor.round_trip(x, Key(iteration=i, worker=i)) for i in range(DRAWS)], axis=0)
    assert relative(mean, x) <= 4 * compressor.error_bound(length) / np.sqrt(DRAWS)


def check_linear_where_claimed(compressor: Compressor, length: int = 1001) -> None:
    """Where ``linear``: compressing a combination of an iteration's messages equals combining their
    compressions, up to rounding (a cast's own, or float32's)."""
    if not compressor.linear:
        return
    rng = np.random.default_rng(5)
    xs = [vector(length, seed) for seed in range(4)]
    weights = rng.standard_normal(4)
    key = Key(seed=1, iteration=9)
    combined = sum(w * x.astype(np.float64) for w, x in zip(weights, xs, strict=True)).astype(np.float32)
    whole = compressor.round_trip(combined, key)
    parts = sum(
        w * compressor.round_trip(x, Key(1, 9, worker)) for worker, (w, x) in enumerate(zip(weights, xs, strict=True))
    )
    rounding = max(compressor.error_bound(length), FLOAT32_ROUNDING) if not compressor.random else FLOAT32_ROUNDING
    scale = sum(abs(w) * np.linalg.norm(x) for w, x in zip(weights, xs, strict=True))
    assert np.linalg.norm(whole - parts) <= 4 * rounding * scale


def check_memory_carries_the_residual(compressor: Compressor, length: int = 513, messages: int = 6) -> None:
    """With error feedback, what was sent plus what is remembered is what was given: sum_t decompress(p_t) +
    residual_T = sum_t x_t (up to float32 rounding), and each payload compresses its message plus the last
    residual. Without it, a sender keeps no residual."""
    sender = MessageCompressor(compressor, seed=0, worker=1)
    xs = [vector(length, seed) for seed in range(messages)]
    sent = [compressor.decompress(sender.compress(0, x, iteration)) for iteration, x in enumerate(xs)]
    if not compressor.feedback:
        assert not sender.remembers
        return
    residual = sender.states[0]["residual"]
    total = np.sum(xs, axis=0, dtype=np.float64)
    assert np.linalg.norm(
        np.sum(sent, axis=0, dtype=np.float64) + residual - total
    ) <= 1e-5 * messages * np.linalg.norm(total)
    fresh = MessageCompressor(compressor, seed=0, worker=1)
    assert relative(compressor.decompress(fresh.compress(0, xs[0], 0)), sent[0]) == 0.0


def check_deterministic(compressor: Compressor, length: int = 1001) -> None:
    """The same key gives the same payload, bit for bit; a random compressor's differs across iterations."""
    x = vector(length)
    a, b = compressor.compress(x, Key(2, 5, 1, 0), {}), compressor.compress(x, Key(2, 5, 1, 0), {})
    assert a.arrays.keys() == b.arrays.keys()
    for name in a.arrays:
        np.testing.assert_array_equal(a.arrays[name], b.arrays[name])
    if compressor.random:
        c = compressor.compress(x, Key(2, 6, 1, 0), {})
        assert any(not np.array_equal(a.arrays[name], c.arrays[name]) for name in a.arrays)


def check_torch_matches_numpy(compressor: Compressor, length: int = 1001) -> None:
    """A torch tensor compresses to the payload its numpy array does."""
    import torch

    x = vector(length)
    a = compressor.compress(x, Key(0, 4, 2, 0), {})
    b = compressor.compress(torch.from_numpy(x.copy()), Key(0, 4, 2, 0), {})
    for name in a.arrays:
        np.testing.assert_array_equal(a.arrays[name], b.arrays[name])


CHECKS = (
    check_stated_size,
    check_round_trip_within_bound,
    check_unbiased_where_claimed,
    check_linear_where_claimed,
    check_memory_carries_the_residual,
    check_deterministic,
)


def check_pickles_whole(compressor: Compressor, length: int = 1001) -> None:
    """A payload pickled (as Ray and the torch channel send it) and read back decompresses to the same vector,
    and its framing beyond the payload's bytes is a small constant (``PICKLE_FRAMING`` at most)."""
    import pickle

    payload = compressor.compress(vector(length), Key(1, 2, 3, 0), {})
    data = pickle.dumps(payload, protocol=5)
    back = pickle.loads(data)
    np.testing.assert_array_equal(compressor.decompress(back), compressor.decompress(payload))
    assert back.nbytes == payload.nbytes and len(data) - payload.nbytes <= PICKLE_FRAMING, len(data) - payload.nbytes


PICKLE_FRAMING = 200  # bytes a pickled payload may take beyond its stated size (names, shapes, the key)
CHECKS = (*CHECKS, check_pickles_whole)
