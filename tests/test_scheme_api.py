"""The public Python API of the coding library, as docs/api.md documents it."""

import numpy as np
import pytest

from gcbench.coding import (
    BUILTIN_SCHEMES,
    NotDecodable,
    Scheme,
    SchemeParameterError,
    available_schemes,
    make_scheme,
    scheme_class,
)
from gcbench.testing import partition_gradients
from gcbench.testing.tables import Decodes

# Decodes against plain sums: .ci/run runs these again under other BLAS kernels. A float64 decode of these small
# codes errs by about gain * r * eps of the gradients' norm (gain: tens at most, r <= 6 messages; about 1e-13), so
# rtol 1e-10 holds on any kernel; 1e-12 where the weights are 0 and 1 (FR) or the very product is formed again
# (the fused decode against weights @ block): a few ulp; 1e-8 is EXACT_RTOL, what "exact" means; float32 decodes
# err by gain * r * 6e-8 (1e-4 leaves a margin of a hundred).
pytestmark = pytest.mark.blas

# The baselines every comparison in the papers and the README draws: losing one is a regression. Any other
# registered scheme is checked below from the registry alone, so adding one needs no edit here.
CORE_SCHEMES = ("uncoded", "ignore_stragglers", "fr", "cr", "cyclic_mds", "cce_cr", "cce_fr")


def test_the_core_schemes_stay_registered():
    assert [name for name in CORE_SCHEMES if name not in available_schemes()] == []


def test_the_registry_maps_unique_names_to_the_builtin_classes_of_the_coding_library():
    names = available_schemes()
    assert len(set(names)) == len(names)
    assert names == [cls.name for cls in BUILTIN_SCHEMES]  # registration order is `gcbench schemes`' order
    for name in names:
        cls = scheme_class(name)
        assert cls.name == name and issubclass(cls, Scheme)
        assert cls.__module__.startswith("gcbench.coding."), f"{name} is defined outside gcbench/coding"


@pytest.mark.parametrize("name", available_schemes())
def test_every_registered_scheme_builds_from_its_test_parameters_and_decodes_from_every_worker(name):
    """Each (s, parameters) the scheme declares for n = 4 builds (or is refused as unusable, saying so), keeps its
    defaults for what is not given, encodes messages of length ceil(d/m), and decodes from all workers."""
    built = 0
    for s, params in scheme_class(name).valid_parameter_sets(4):
        try:
            scheme = make_scheme(name, n=4, s=s, **params)
        except SchemeParameterError as error:
            assert "numerically unusable" in str(error), str(error)
            continue
        built += 1
        assert (scheme.name, scheme.n, scheme.s) == (name, 4, s)
        assert scheme.params == {**scheme_class(name).defaults, **params}
        grads = partition_gradients(scheme.k, 7, np.random.default_rng(built))
        received = {w: scheme.encode(w, grads) for w in range(4)}
        assert all(len(v) == -(-7 // scheme.m) for messages in received.values() for v in messages)
        decoded = scheme.decode(received)
        assert decoded.shape == (7,) and np.isfinite(decoded).all()
        if scheme.decoding(received).exact:
            np.testing.assert_allclose(decoded, grads.sum(axis=0), rtol=1e-8, atol=1e-8)
    assert built, f"{name} declares no parameter set it builds at n = 4"


def test_encode_accepts_a_mapping_covering_the_workers_partitions():
    scheme = make_scheme("cr", n=6, s=2)
    grads = partition_gradients(6, 9, np.random.default_rng(0))
    mapping = {j: grads[j] for j in scheme.partitions(3)}
    np.testing.assert_array_equal(scheme.encode(3, mapping)[0], scheme.encode(3, grads)[0])


def test_encode_reports_a_missing_partition():
    scheme = make_scheme("fr", n=6, s=1)
    with pytest.raises(KeyError, match="partition 1 is missing"):
        scheme.encode(0, {0: np.zeros(3)})


def test_padding_is_invisible_to_callers():
    scheme = make_scheme("cce_cr", n=6, s=1, m=4)
    grads = partition_gradients(6, 10, np.random.default_rng(1))  # 4 does not divide 10
    received = {w: scheme.encode(w, grads) for w in range(1, 6)}
    assert received[1][0].shape == (3,)
    decoded = scheme.decode(received)
    assert decoded.shape == (10,)
    np.testing.assert_allclose(decoded, grads.sum(axis=0), rtol=1e-10)


def test_a_fresh_scheme_decodes_padded_messages_when_told_d():
    encoder = make_scheme("cce_fr", n=6, s=1, m=2)
    grads = partition_gradients(6, 5, np.random.default_rng(2))
    received = {w: encoder.encode(w, grads) for w in range(6)}
    decoder = make_scheme("cce_fr", n=6, s=1, m=2)
    with pytest.raises(ValueError, match="decode needs d="):
        decoder.decode(received)
    np.testing.assert_allclose(decoder.decode(received, d=5), grads.sum(axis=0), rtol=1e-10)


def test_too_few_workers_raise_not_decodable():
    scheme = make_scheme("cyclic_mds", n=7, s=2)
    grads = partition_gradients(7, 4, np.random.default_rng(3))
    with pytest.raises(NotDecodable, match="cannot decode from workers \\[0, 1, 2\\]"):
        scheme.decode({w: scheme.encode(w, grads) for w in range(3)})


def test_ignore_stragglers_rescales_and_reports_its_error():
    scheme = make_scheme("ignore_stragglers", n=4, s=1)
    grads = np.arange(8.0).reshape(4, 2)
    received = {w: scheme.encode(w, grads) for w in (0, 1, 3)}
    np.testing.assert_allclose(scheme.decode(received), (grads[0] + grads[1] + grads[3]) * 4 / 3)
    decoding = scheme.decoding(received)
    assert not decoding.exact
    assert decoding.residual == pytest.approx(np.sqrt(3 * (1 / 3) ** 2 + 1))


def test_weights_are_cached_per_received_set():
    scheme = make_scheme("cr", n=8, s=2)
    first = scheme.decoding([0, 1, 2, 3, 4, 5])
    assert scheme.decoding([5, 4, 3, 2, 1, 0]) is first


def test_fr_decodes_from_one_worker_per_group():
    scheme = make_scheme("fr", n=6, s=2)
    grads = partition_gradients(6, 3, np.random.default_rng(4))
    received = {w: scheme.encode(w, grads) for w in (2, 3)}
    np.testing.assert_allclose(scheme.decode(received), grads.sum(axis=0), rtol=1e-12)


def test_float32_messages_decode_in_float32():
    scheme = make_scheme("cyclic_mds", n=6, s=1)
    grads = partition_gradients(6, 16, np.random.default_rng(5), dtype=np.float32)
    out = scheme.decode({w: scheme.encode(w, grads) for w in range(1, 6)})
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, grads.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-4)


def test_worst_condition_is_exhaustive_when_small_and_sampled_when_large():
    small = make_scheme("cr", n=8, s=2).worst_condition()
    assert small.exhaustive and small.sets_checked == 28
    large = make_scheme("fr", n=40, s=9).worst_condition(limit=100)
    assert not large.exhaustive and large.sets_checked == 100


def test_symmetric_schemes_decode_equally_well_from_any_set_of_one_size():
    for name, s in (("uncoded", 0), ("ignore_stragglers", 3)):
        scheme = make_scheme(name, n=8, s=s)
        assert scheme.symmetric
        rng = np.random.default_rng(0)
        for size in range(1, 9):
            residuals = [scheme.approximate_decoding(rng.choice(8, size, replace=False)).residual for _ in range(5)]
            # equal up to the SVD's rounding (condition 1 here; rounding to 12 digits could split two such values)
            assert np.ptp(residuals) <= Decodes(condition=1.0, size=8).residual_tolerance, residuals


@pytest.mark.parametrize("d", [12, 10])  # m = 3 divides 12; 10 needs padding
def test_decode_writes_into_out_when_given(d):
    scheme = make_scheme("cce_cr", n=6, s=1, m=3)
    grads = partition_gradients(6, d, np.random.default_rng(4))
    received = {w: scheme.encode(w, grads) for w in range(1, 6)}
    out = np.full(d, np.nan)
    assert scheme.decode(received, out=out) is out
    np.testing.assert_allclose(out, grads.sum(axis=0), rtol=1e-10)
    with pytest.raises(ValueError, match="out must be a 1-D vector of the gradient's length d="):
        scheme.decode(received, out=np.empty(d + 1))


@pytest.mark.parametrize("name, s, m", [("cce_cr", 2, 2), ("cce_fr", 3, 3), ("cr", 2, 1), ("fr", 2, 1)])
def test_fused_decode_is_the_weights_times_the_messages_across_blocks(monkeypatch, name, s, m):
    import gcbench.coding._apply as apply

    monkeypatch.setattr(apply, "BLOCK_BYTES", 1)  # the smallest block (1024 columns): several blocks per slice
    scheme = make_scheme(name, n=6, s=s, **({"m": m} if name.startswith("cce") else {}))
    grads = partition_gradients(6, 3001 * m, np.random.default_rng(5))
    received = {w: scheme.encode(w, grads) for w in range(2, 6)}
    decoding = scheme.decoding(received)
    block = np.stack([received[int(scheme.message_owner[i])][0] for i in decoding.message_ids])
    np.testing.assert_allclose(scheme.decode(received), (decoding.weights @ block).reshape(-1), rtol=1e-12)


@pytest.mark.parametrize("kind", ["strided", "mixed dtypes"])
def test_messages_blas_cannot_take_decode_as_the_contiguous_ones_do(monkeypatch, kind):
    """The axpy sweep needs contiguous messages of the output's dtype; the others take the ufunc blocks."""
    import gcbench.coding._apply as apply

    monkeypatch.setattr(apply, "BLOCK_BYTES", 1)
    scheme = make_scheme("cce_cr", n=6, s=2, m=2)
    grads = partition_gradients(6, 4100, np.random.default_rng(6)).astype(np.float32)
    received = {w: scheme.encode(w, grads) for w in range(2, 6)}
    expected = scheme.decode(received)
    if kind == "strided":
        odd = {w: [np.repeat(v, 2)[::2] for v in messages] for w, messages in received.items()}
    else:
        odd = {w: [v.astype(np.float64) if w == 3 else v for v in messages] for w, messages in received.items()}
    assert not any(v.flags.c_contiguous and v.dtype == np.float32 for v in odd[3])
    decoded = scheme.decode(odd, out=np.empty(4100, np.float32))
    np.testing.assert_allclose(decoded, expected, atol=1e-5 * np.abs(expected).max())  # FMA or not: float32 rounding


@pytest.mark.parametrize("d", [4, 10, 3001])  # m = 3: the last slice is empty (d = 4), 2 of 4, or 1000 of 1001
@pytest.mark.parametrize("layout", ["contiguous", "strided"])  # the axpy sweep, and the ufunc blocks
def test_a_last_slice_cut_by_d_is_written_straight_into_out(monkeypatch, d, layout):
    import gcbench.coding._apply as apply

    monkeypatch.setattr(apply, "BLOCK_BYTES", 1)  # blocks of 1024 columns: the short slice ends inside one
    scheme = make_scheme("cce_cr", n=6, s=1, m=3)
    grads = partition_gradients(6, d, np.random.default_rng(7))
    received = {w: scheme.encode(w, grads) for w in range(1, 6)}
    if layout == "strided":
        received = {w: [np.repeat(v, 2)[::2] for v in messages] for w, messages in received.items()}
    fresh = scheme.decode(received)
    import gcbench.coding._base as base

    monkeypatch.setattr(base, "empty_like_vector", lambda *args: pytest.fail("decode(out=) made a spare vector"))
    out = np.full(d + 5, np.nan)
    assert scheme.decode(received, out=out[:d]) is not None
    np.testing.assert_array_equal(out[:d], fresh)  # the same sums, in the same order
    assert np.isnan(out[d:]).all()  # nothing written past d
