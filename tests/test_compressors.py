"""Every registered compressor passes the conformance suite (gcbench/testing/compressor_checks.py), with its
defaults and each parameter set it lists; and the registry's claims hold against a decoder."""

from __future__ import annotations

import numpy as np
import pytest

from gcbench.coding import make_scheme
from gcbench.compression import COMPRESSORS, Key, available_compressors
from gcbench.testing import compressor_checks as checks

SETS = checks.parameter_sets()
IDS = [name + "".join(f"-{k}={v}" for k, v in params.items()) for name, params in SETS]


def test_the_issue_s_compressors_are_registered():
    assert {"none", "fp16", "bf16", "qsgd", "topk", "randomk", "sign", "powersgd"} <= set(available_compressors())


@pytest.mark.parametrize("check", checks.CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
@pytest.mark.parametrize(("name", "params"), SETS, ids=IDS)
def test_every_compressor_passes_the_conformance_suite(name, params, check):
    check(checks.make(name, params))


@pytest.mark.parametrize(("name", "params"), SETS, ids=IDS)
def test_a_torch_tensor_compresses_as_its_numpy_array_does(name, params):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    checks.check_torch_matches_numpy(checks.make(name, params))


def test_sizes_are_what_the_papers_send():
    d = 1_000_000
    assert COMPRESSORS.get("fp16")().bits_per_parameter(d) == 16
    assert COMPRESSORS.get("qsgd")(levels=7).bits_per_parameter(d) == pytest.approx(4, abs=1e-4)  # 15 values
    assert COMPRESSORS.get("qsgd")(levels=1).bits_per_parameter(d) == pytest.approx(2, abs=1e-4)
    assert COMPRESSORS.get("sign")().bits_per_parameter(d) == pytest.approx(1, abs=1e-4)
    assert COMPRESSORS.get("topk")(ratio=0.01).payload_bytes(d) == 10_000 * 8  # int32 index and float32 value
    assert COMPRESSORS.get("randomk")(ratio=0.01).payload_bytes(d) == 10_000 * 4 + 24  # values and the key
    assert COMPRESSORS.get("powersgd")(rank=2).payload_bytes(d) == 4 * 2 * (1000 + 1000)


def test_a_shared_index_compressor_decoded_is_the_exact_gradient_compressed():
    """cyclic-MDS on 6 workers with s = 2: decoding the decompressed messages of any 4 gives what random-k gives
    the exact gradient (the decoder's weights reach far beyond 1, yet no compression error is amplified)."""
    scheme = make_scheme("cyclic_mds", n=6, s=2)
    rng = np.random.default_rng(3)
    grads = rng.standard_normal((scheme.k, 2000))
    compressor = COMPRESSORS.get("randomk")(ratio=0.1)
    exact = compressor.round_trip(grads.sum(axis=0).astype(np.float32), Key(0, 7))
    messages = {w: scheme.encode(w, {j: grads[j] for j in scheme.partitions(w)}) for w in range(6)}
    received = {w: [compressor.round_trip(m, Key(0, 7, w, i)) for i, m in enumerate(messages[w])] for w in (0, 2, 3, 5)}
    decoded = scheme.decode(received, d=2000)
    assert np.linalg.norm(decoded - exact) <= 1e-4 * np.linalg.norm(exact)
    # top-k picks each worker's own entries: the decode is not the compressed gradient
    topk = COMPRESSORS.get("topk")(ratio=0.1)
    received = {w: [topk.round_trip(m) for m in messages[w]] for w in (0, 2, 3, 5)}
    assert np.linalg.norm(scheme.decode(received, d=2000) - topk.round_trip(grads.sum(axis=0))) > 0.1 * np.linalg.norm(
        exact
    )


def test_a_compressor_s_parameters_are_validated_in_a_sentence():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="ratio"):
        COMPRESSORS.get("topk")(ratio=0)
    with pytest.raises(ValidationError, match="levels"):
        COMPRESSORS.get("qsgd")(levels=128)
    with pytest.raises(ValidationError, match="Extra inputs"):
        COMPRESSORS.get("fp16")(levels=3)


def test_a_display_name_shows_what_differs_from_the_defaults():
    assert COMPRESSORS.get("topk")().display_name == "topk"
    assert (
        COMPRESSORS.get("topk")(ratio=0.1, error_feedback=False).display_name == "topk(ratio=0.1,error_feedback=false)"
    )
    assert COMPRESSORS.get("qsgd")(levels=3, compress_cost=1e-9).display_name == "qsgd(levels=3)"


def test_qsgd_sends_a_diverged_gradient_as_nan_without_a_warning():
    import warnings

    qsgd = COMPRESSORS.get("qsgd")()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for bad in (np.inf, np.nan):
            assert np.isnan(qsgd.round_trip(np.array([1.0, bad, -2.0], np.float32), Key(0, 0))).all()
