"""Decoding weights apply to torch tensors exactly as to numpy arrays, without leaving the device."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcbench.coding import available_schemes, make_scheme
from gcbench.testing import check_torch_matches_numpy, partition_gradients, valid_parameter_sets

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")

# numpy's BLAS against torch's kernels, to 1e-12: .ci/run runs these again under other kernels of both
pytestmark = pytest.mark.blas


@pytest.mark.parametrize("name", available_schemes())
@given(data=st.data())
def test_torch_matches_numpy(name, data):
    n = data.draw(st.integers(2, 9))
    s, params = data.draw(st.sampled_from(valid_parameter_sets(name, n)))
    scheme = make_scheme(name, n=n, s=s, **params)
    stragglers = data.draw(st.lists(st.integers(0, n - 1), max_size=scheme.tolerance, unique=True))
    grads = partition_gradients(scheme.k, data.draw(st.integers(1, 20)), np.random.default_rng(0))
    check_torch_matches_numpy(scheme, stragglers, grads)


def test_float32_tensors_stay_float32():
    scheme = make_scheme("cce_cr", n=5, s=1, m=2)
    grads = torch.randn(5, 11, dtype=torch.float32)
    out = scheme.decode({w: scheme.encode(w, grads) for w in range(1, 5)})
    assert out.dtype == torch.float32 and out.shape == (11,)
    torch.testing.assert_close(out, grads.sum(0), rtol=1e-4, atol=1e-4)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_are_decoded_on_the_gpu():
    scheme = make_scheme("cyclic_mds", n=6, s=1)
    grads = torch.randn(6, 1000, device="cuda")
    out = scheme.decode({w: scheme.encode(w, grads) for w in range(1, 6)})
    assert out.device.type == "cuda"
    torch.testing.assert_close(out, grads.sum(0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_tensors_decode_on_the_torch_path(dtype):
    """Within the rounding a half-precision decode can make, element by element: each of the r messages rounded to
    the dtype (unit roundoff u), the weighted sum of r terms formed in it (the dot product's bound, (r + 1) u), and
    the result rounded: |out - g| <= (r + 2) u sum_i |W_ui| |m_i| + u |g|. (It once compared with a fixed atol on
    unseeded draws, and a draw beyond it failed under another kernel; over 200 seeds the error reaches a third of
    this bound.)"""
    scheme = make_scheme("cce_cr", n=5, s=1, m=2)
    grads = torch.randn(5, 3001, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    encoded = {w: scheme.encode(w, grads) for w in range(1, 5)}
    received = {w: [m.to(getattr(torch, dtype)) for m in messages] for w, messages in encoded.items()}
    out = scheme.decode(received)
    assert out.dtype == getattr(torch, dtype) and out.shape == (3001,)
    ids = [mid for w in encoded for mid in scheme.messages(w)]
    weights = torch.as_tensor(scheme.decoding(ids).weights)
    magnitudes = torch.stack([m.abs() for w in encoded for m in encoded[w]])  # (messages, slice length)
    spread = (weights.abs() @ magnitudes).reshape(-1)[:3001]  # sum_i |W_ui| |m_i|, slice by slice
    u = torch.finfo(getattr(torch, dtype)).eps / 2
    truth = grads.sum(0)
    assert ((out.double() - truth).abs() <= (len(ids) + 2) * u * spread + u * truth.abs() + 1e-12).all()


def test_cpu_tensors_decode_into_out():
    scheme = make_scheme("cce_fr", n=6, s=1, m=2)
    grads = torch.randn(6, 10, dtype=torch.float32)
    received = {w: scheme.encode(w, grads) for w in range(1, 6)}
    out = torch.full((10,), float("nan"))
    assert scheme.decode(received, out=out) is out
    torch.testing.assert_close(out, grads.sum(0), rtol=1e-4, atol=1e-4)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_with_m_slices_are_one_matrix_product_on_the_gpu():
    scheme = make_scheme("cce_cr", n=6, s=1, m=3)
    grads = torch.randn(6, 1000, device="cuda")
    out = scheme.decode({w: scheme.encode(w, grads) for w in range(1, 6)})
    assert out.device.type == "cuda" and out.shape == (1000,)
    torch.testing.assert_close(out, grads.sum(0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "float32"])  # the torch blocks, and numpy's sweep on views
def test_a_last_slice_cut_by_d_is_decoded_into_out(dtype):
    scheme = make_scheme("cce_cr", n=5, s=1, m=3)
    grads = torch.randn(5, 3001, dtype=torch.float64)
    received = {w: [m.to(getattr(torch, dtype)) for m in scheme.encode(w, grads)] for w in range(1, 5)}
    buffer = torch.full((3006,), float("nan"), dtype=getattr(torch, dtype))
    assert scheme.decode(received, out=buffer[:3001]) is not None
    torch.testing.assert_close(buffer[:3001], scheme.decode(received), rtol=0, atol=0)
    assert buffer[3001:].isnan().all()
