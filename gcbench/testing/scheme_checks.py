"""Checks every scheme must pass; each raises AssertionError with the evidence.

Relative errors are measured against max(||g||, max_j ||g_j||), so a sum whose
partitions happen to cancel does not turn rounding noise into a failure.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from gcbench.coding import NotDecodable, Scheme, make_scheme, scheme_class
from gcbench.coding._linear import EXACT_RTOL, least_squares_weights

FLOAT64_RTOL = 1e-8
UNIT_ROUNDOFF = {np.float32: 2.0**-24, np.float64: 2.0**-53}


def valid_parameter_sets(name: str, n: int) -> list[tuple[int, dict[str, Any]]]:
    """Every (s, extra parameters) the registered scheme ``name`` declares valid for n workers."""
    return scheme_class(name).valid_parameter_sets(n)


def partition_gradients(k: int, d: int, rng: np.random.Generator, dtype: Any = np.float64) -> np.ndarray:
    """Random partition gradients (k x d) with a common mean, like real mini-batch gradients."""
    return (rng.standard_normal(d) + rng.standard_normal((k, d))).astype(dtype)


def relative_error(estimate: np.ndarray, grads: np.ndarray) -> float:
    truth = grads.astype(np.float64).sum(axis=0)
    scale = max(np.linalg.norm(truth), np.linalg.norm(grads.astype(np.float64), axis=1).max())
    return float(np.linalg.norm(estimate.astype(np.float64) - truth) / scale)


def received_from(scheme: Scheme, responders: Any, grads: Any) -> dict[int, list[Any]]:
    return {w: scheme.encode(w, grads) for w in sorted(responders)}


def responders_without(scheme: Scheme, stragglers: Any) -> list[int]:
    return [w for w in range(scheme.n) if w not in set(stragglers)]


def check_declared_structure(scheme: Scheme, d: int = 5) -> None:
    """Load, upload and the zero pattern are what the scheme declares."""
    assert scheme.load == max(len(scheme.partitions(w)) for w in range(scheme.n))
    for w in range(scheme.n):
        held = set(scheme.partitions(w))
        for mid in scheme.messages(w):
            outside = [j for j in range(scheme.k) if j not in held]
            assert np.all(scheme.coefficients[mid][:, outside] == 0.0), f"worker {w} uses a partition it lacks"
            assert 1 <= scheme.ready_after(mid) <= len(held)
    grads = partition_gradients(scheme.k, d, np.random.default_rng(0))
    for message in scheme.encode(0, grads):
        assert message.shape == (-(-d // scheme.m),), "message length must be ceil(d/m)"
    assert scheme.upload == 1.0 / scheme.m


def check_decode_exact(scheme: Scheme, stragglers: Any, grads: np.ndarray) -> float:
    """Decoding without these (at most s) stragglers gives sum_j g_j to 1e-8 (float64)."""
    received = received_from(scheme, responders_without(scheme, stragglers), grads)
    estimate = scheme.decode(received)
    assert estimate.shape == (grads.shape[1],)
    error = relative_error(estimate, grads)
    if scheme.exact:
        assert error <= FLOAT64_RTOL, f"{scheme!r} without {sorted(stragglers)}: relative error {error:.2e}"
    return error


def float32_bound(scheme: Scheme, stragglers: Any, grads: np.ndarray) -> float:
    """The documented bound on ||decoded - g|| in float32 (docs/coding.md)."""
    decoding = scheme.decoding(received_from(scheme, responders_without(scheme, stragglers), grads))
    r = len(decoding.message_ids)
    norms = np.linalg.norm(grads.astype(np.float64), axis=1).sum()
    return (scheme.load + r + 3) * UNIT_ROUNDOFF[np.float32] * decoding.gain * norms


def check_float32_within_bound(scheme: Scheme, stragglers: Any, grads64: np.ndarray) -> None:
    """A float32 decode errs by no more than the bound that grows with the condition number."""
    grads = grads64.astype(np.float32)
    received = received_from(scheme, responders_without(scheme, stragglers), grads)
    estimate = scheme.decode(received)
    assert estimate.dtype == np.float32
    exact = grads.astype(np.float64).sum(axis=0)
    if not scheme.exact:
        decoding = scheme.decoding(received)
        exact = exact + _error_term(scheme, decoding.error_coefficients, grads.astype(np.float64))
    error = np.linalg.norm(estimate.astype(np.float64) - exact)
    bound = float32_bound(scheme, stragglers, grads64)
    assert error <= bound, f"{scheme!r} float32 error {error:.3e} > bound {bound:.3e}"


def rank_decodable(scheme: Scheme, message_ids: list[int]) -> bool:
    """Ground truth by linear algebra alone: do the received rows span the targets?"""
    if not message_ids:
        return False
    rows = scheme.rows[message_ids]
    target = np.kron(np.eye(scheme.m), np.ones((1, scheme.k)))
    weights, _ = least_squares_weights(rows, target)
    residual = np.linalg.norm(weights @ rows - target, axis=1) / np.linalg.norm(target, axis=1)
    return bool(residual.max() <= EXACT_RTOL)


def check_structural_matches_rank(scheme: Scheme, responders: Any) -> None:
    """can_decode agrees with the rank computation (exact schemes)."""
    ids = [mid for w in sorted(responders) for mid in scheme.messages(w)]
    if scheme.exact:
        truth = rank_decodable(scheme, ids)
        assert scheme.can_decode(ids) == truth, f"{scheme!r} responders {sorted(responders)}: rank says {truth}"


def check_unrecoverable_is_refused(scheme: Scheme, responders: Any, grads: np.ndarray) -> None:
    """Any responder set either decodes exactly or raises NotDecodable: never a wrong gradient."""
    received = received_from(scheme, responders, grads)
    try:
        estimate = scheme.decode(received)
    except NotDecodable:
        assert not scheme.can_decode([m for w in received for m in scheme.messages(w)])
        return
    if scheme.exact:
        error = relative_error(estimate, grads)
        assert error <= FLOAT64_RTOL, f"{scheme!r} from {sorted(responders)}: wrong gradient ({error:.2e})"


def _error_term(scheme: Scheme, error_coefficients: np.ndarray, grads: np.ndarray) -> np.ndarray:
    d = grads.shape[1]
    length = -(-d // scheme.m)
    padded = np.zeros((scheme.k, scheme.m * length))
    padded[:, :d] = grads
    slices = padded.reshape(scheme.k, scheme.m, length).transpose(1, 0, 2).reshape(scheme.m * scheme.k, length)
    return (error_coefficients @ slices).reshape(-1)[:d]


def check_approximate_residual(scheme: Scheme, responders: Any, grads: np.ndarray) -> None:
    """The reported residual is the true error: decoded = g + E applied to the partition slices."""
    received = received_from(scheme, responders, grads)
    try:
        estimate = scheme.decode(received)
    except NotDecodable:
        return
    decoding = scheme.decoding(received)
    predicted = grads.sum(axis=0) + _error_term(scheme, decoding.error_coefficients, grads)
    assert np.allclose(estimate, predicted, rtol=1e-10, atol=1e-10), "residual does not describe the error"
    assert decoding.exact == (decoding.residual <= EXACT_RTOL * np.sqrt(scheme.k * scheme.m))


def check_deterministic(name: str, n: int, s: int, params: dict[str, Any]) -> None:
    """The same parameters build the same code, coefficient for coefficient."""
    first, second = make_scheme(name, n=n, s=s, **params), make_scheme(name, n=n, s=s, **params)
    assert np.array_equal(first.coefficients, second.coefficients)
    assert all(first.partitions(w) == second.partitions(w) for w in range(n))


def check_torch_matches_numpy(scheme: Scheme, stragglers: Any, grads: np.ndarray) -> None:
    """Encoding and decoding torch tensors gives what numpy arrays give, on the tensors' device."""
    import torch

    responders = responders_without(scheme, stragglers)
    expected = scheme.decode(received_from(scheme, responders, grads))
    tensors = torch.from_numpy(grads.copy())
    received = received_from(scheme, responders, tensors)
    assert all(isinstance(v, torch.Tensor) for msgs in received.values() for v in msgs)
    result = scheme.decode(received)
    assert isinstance(result, torch.Tensor) and result.dtype == tensors.dtype
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-12, atol=1e-12)


def check_decode_times(scheme: Scheme, arrivals: np.ndarray) -> None:
    """decode_times equals the first arrival whose prefix (in time order) decodes, found by brute force.

    Exact schemes are judged by rank; approximate ones by their own can_decode.
    """
    decodes = rank_decodable if scheme.exact else (lambda sch, ids: sch.can_decode(ids))
    expected = float("inf")
    order = np.argsort(arrivals, kind="stable")
    for count in range(1, len(order) + 1):
        if np.isfinite(arrivals[order[count - 1]]) and decodes(scheme, list(order[:count])):
            expected = float(arrivals[order[count - 1]])
            break
    got = float(scheme.decode_times(arrivals[None, :])[0])
    assert got == expected, f"{scheme!r} arrivals {arrivals.tolist()}: decode time {got}, rank says {expected}"


def all_subsets(n: int, max_size: int) -> itertools.chain:
    """Every subset of range(n) with at most max_size elements."""
    return itertools.chain.from_iterable(itertools.combinations(range(n), t) for t in range(max_size + 1))
