"""Checks every scheme must pass; each raises AssertionError with the evidence.

Relative errors are measured against max(||g||, max_j ||g_j||), so a sum whose
partitions happen to cancel does not turn rounding noise into a failure.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from gcbench.coding import EXACT_RTOL, NotDecodable, Scheme, least_squares_weights, make_scheme, scheme_class

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


def received_from(scheme: Scheme, responders: Any, grads: Any, encoded: Any = None) -> dict[int, list[Any]]:
    """The responders' messages; ``encoded``: every worker's, encoded once beforehand (``encode_all``), so an
    exhaustive check over many sets does not encode them again for each."""
    if encoded is not None:
        return {w: encoded[w] for w in sorted(responders)}
    return {w: scheme.encode(w, grads) for w in sorted(responders)}


def encode_all(scheme: Scheme, grads: Any) -> list[list[Any]]:
    """Every worker's messages, for ``encoded=`` of the checks that take it."""
    return [scheme.encode(w, grads) for w in range(scheme.n)]


def responders_without(scheme: Scheme, stragglers: Any) -> list[int]:
    return [w for w in range(scheme.n) if w not in set(stragglers)]


def check_declared_structure(scheme: Scheme, d: int = 5) -> None:
    """Load, upload and the zero pattern are what the scheme declares; a pipelined scheme's schedule too."""
    assert scheme.load == max(scheme.step_load(w) for w in range(scheme.n))
    if scheme.pipelined:
        check_pipelined_schedule(scheme)
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


def check_pipelined_schedule(scheme: Scheme, steps: int = 12) -> None:
    """One partition a step, each held one computed once in every s + 1 consecutive steps, every message ready
    after it, and the scheduled ages (warm-up at step 0) those of the last computation: at most min(step, s)."""
    for w in range(scheme.n):
        order = scheme.partitions(w)
        assert scheme.step_load(w) == 1 and all(scheme.ready_after(mid) == 1 for mid in scheme.messages(w))
        last = dict.fromkeys(order, 0)  # step 0 fills the cache
        for step in range(steps):
            (fresh,) = scheme.computes(w, step)
            assert fresh in order
            window = {scheme.computes(w, t)[0] for t in range(step, step + len(order))}
            assert window == set(order), f"worker {w} does not cycle through {order} from step {step}"
            last[fresh] = step
            ages = {j: step - v for j, v in last.items()}
            assert ages == scheme.scheduled_ages(w, step), f"worker {w} at step {step}: {ages}"
            assert max(ages.values()) <= min(step, scheme.s)


def check_decode_exact(scheme: Scheme, stragglers: Any, grads: np.ndarray, encoded: Any = None) -> float:
    """Decoding without these (at most s) stragglers gives sum_j g_j to 1e-8 (float64); ``encoded``: see
    ``received_from``."""
    received = received_from(scheme, responders_without(scheme, stragglers), grads, encoded)
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
    held = max(len(scheme.partitions(w)) for w in range(scheme.n))  # what one message sums (L in the bound)
    return (held + r + 3) * UNIT_ROUNDOFF[np.float32] * decoding.gain * norms


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


def check_approximate_residual(scheme: Scheme, responders: Any, grads: np.ndarray, encoded: Any = None) -> None:
    """The reported residual is the true error: decoded = g + E applied to the partition slices."""
    received = received_from(scheme, responders, grads, encoded)
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


def check_device_decode_matches_cpu(scheme: Scheme, stragglers: Any, grads: np.ndarray, device: str) -> None:
    """The messages a CPU master receives (numpy arrays), decoded on ``device`` as tensors, give the CPU decode
    to rounding: each entry within 2 r u sum_i |w_i| |v_i| of it (u: the dtype's unit roundoff; r messages),
    the textbook bound on a dot product's rounding error, which holds for any order of summation."""
    import torch

    received = received_from(scheme, responders_without(scheme, stragglers), grads)
    expected = scheme.decode(received, approximate=True)
    on_device = {w: [torch.from_numpy(v).to(device) for v in vectors] for w, vectors in received.items()}
    result = scheme.decode(on_device, approximate=True)
    assert result.device.type == torch.device(device).type and result.dtype == torch.from_numpy(grads).dtype
    ids = [mid for w, vectors in received.items() for mid, _ in zip(scheme.messages(w), vectors, strict=False)]
    decoding = scheme.approximate_decoding(ids)
    vectors = {mid: v for w, msgs in received.items() for mid, v in zip(scheme.messages(w), msgs, strict=False)}
    block = np.abs(np.stack([vectors[mid] for mid in decoding.message_ids]).astype(np.float64))
    bound = (np.abs(decoding.weights) @ block).reshape(-1)[: expected.shape[0]]
    unit = np.finfo(grads.dtype).eps / 2
    error = np.abs(result.cpu().numpy().astype(np.float64) - expected.astype(np.float64))
    allowed = 2 * len(decoding.message_ids) * unit * bound + np.finfo(grads.dtype).tiny
    assert np.all(error <= allowed), f"{scheme!r}: worst error {error.max():.3g} where {allowed[error.argmax()]:.3g}"


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


# -- approximate and stochastic schemes: the claims about their error over random stragglers --------------
STANDARD_ERRORS = 5.0  # a statistical check allows this many standard errors (per coefficient, fixed seed)


def random_straggler_sets(n: int, s: int, samples: int, seed: int) -> tuple[list[tuple[int, ...]], bool]:
    """Every s-set of the n workers when there are at most ``samples``, else that many uniform draws (seeded)."""
    if math.comb(n, s) <= samples:
        return list(itertools.combinations(range(n), s)), True
    rng = np.random.default_rng(seed)
    return [tuple(rng.choice(n, size=s, replace=False).tolist()) for _ in range(samples)], False


def error_without(scheme: Scheme, stragglers: Any) -> np.ndarray:
    """W R - T, flattened, for the decode without these stragglers (-T when nobody answered)."""
    ids = [mid for w in responders_without(scheme, stragglers) for mid in scheme.messages(w)]
    if not ids:
        return -np.kron(np.eye(scheme.m), np.ones((1, scheme.k))).reshape(-1)
    return scheme.approximate_decoding(ids).error_coefficients.reshape(-1)


def assert_mean_zero(samples: np.ndarray, exhaustive: bool, what: str) -> None:
    """Exactly zero (1e-9) for an enumeration; else within STANDARD_ERRORS of zero per coordinate."""
    mean = samples.mean(axis=0)
    if exhaustive:
        assert np.abs(mean).max() <= 1e-9, f"{what}: mean error {np.abs(mean).max():.3e} over every straggler set"
        return
    allowed = STANDARD_ERRORS * samples.std(axis=0, ddof=1) / math.sqrt(len(samples)) + 1e-9
    worst = float((np.abs(mean) / allowed).max())
    assert worst <= 1.0, f"{what}: mean error {worst * STANDARD_ERRORS:.1f} standard errors from zero"


def check_unbiased(scheme: Scheme, samples: int = 2000, seed: int = 0) -> None:
    """A scheme claiming ``unbiased``: E[W R - T] = 0 over a uniformly random set of s stragglers.

    By linearity this is E[decoded] = g for every set of partition gradients. Exhaustive when there are at
    most ``samples`` sets, else a seeded sample judged within STANDARD_ERRORS per coefficient.
    """
    sets, exhaustive = random_straggler_sets(scheme.n, scheme.s, samples, seed)
    errors = np.array([error_without(scheme, stragglers) for stragglers in sets])
    assert_mean_zero(errors, exhaustive, f"{scheme!r} (uniform straggler sets)")


def check_reported_variance(scheme: Scheme, samples: int = 4000, seed: int = 0, d: int = 3) -> None:
    """A scheme reporting ``error_variance`` under independent stragglers with probability ``scheme.p``.

    Draws the stragglers (seeded), and checks: the mean squared residual ||W R - T||^2 against
    ``error_variance()``, the mean squared error of decoded gradients against ``gradient_variance``, and
    the decoded gradients' mean against the truth, each within STANDARD_ERRORS.
    """
    rng = np.random.default_rng(seed)
    grads = partition_gradients(scheme.k, d, rng)
    received = received_from(scheme, range(scheme.n), grads)
    truth = grads.sum(axis=0)
    squared, deviations = [], []
    for _ in range(samples):
        present = np.flatnonzero(rng.random(scheme.n) >= scheme.p).tolist()
        squared.append(float((error_without(scheme, set(range(scheme.n)) - set(present)) ** 2).sum()))
        decoded = scheme.decode({w: received[w] for w in present}, approximate=True) if len(present) else 0.0
        deviations.append(decoded - truth)
    deviations = np.array(deviations) + np.zeros((samples, d))
    for what, values, expected in (
        ("mean squared residual", np.array(squared), scheme.error_variance()),
        ("mean squared gradient error", (deviations**2).sum(axis=1), scheme.gradient_variance(grads)),
    ):
        allowed = STANDARD_ERRORS * values.std(ddof=1) / math.sqrt(samples) + 1e-9
        found = values.mean()
        assert abs(found - expected) <= allowed, f"{scheme!r}: {what} {found:.4g}, reported {expected:.4g}"
    assert_mean_zero(deviations, False, f"{scheme!r} (independent stragglers)")


# -- several messages per worker: the sets partial work produces --------------------------------------------
def prefix_sets(scheme: Scheme) -> itertools.product:
    """Every received set in which each worker sent the first p of its messages (p = 0 .. all): what a run
    whose workers stop part-way through their jobs delivers."""
    return itertools.product(*(range(len(scheme.messages(w)) + 1) for w in range(scheme.n)))


def check_prefix_set(scheme: Scheme, lengths: tuple[int, ...], grads: np.ndarray) -> None:
    """One prefix set: can_decode (structural where the scheme claims it) agrees with the rank computation, and
    the decode is exact or refused, never a wrong gradient."""
    ids = [mid for w, p in enumerate(lengths) for mid in scheme.messages(w)[:p]]
    truth = rank_decodable(scheme, ids)
    assert scheme.can_decode(ids) == truth, f"{scheme!r} prefixes {lengths}: rank says {truth}"
    if truth:
        received = {w: scheme.encode(w, grads)[:p] for w, p in enumerate(lengths) if p}
        error = relative_error(scheme.decode(received), grads)
        assert error <= FLOAT64_RTOL, f"{scheme!r} prefixes {lengths}: relative error {error:.2e}"
