"""The coding layer runs its BLAS on one thread (gcbench/coding/_threads.py), and works without threadpoolctl.

Each check holds the process's BLAS libraries at two threads, then reads their thread counts from inside
the coding layer's BLAS work (a hook in place of the axpy, the weights' solve, the conditioning scan): one
thread inside, two again after.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")
import scipy.linalg.blas  # noqa: E402,F401  (scipy's own OpenBLAS, which the decode's axpy uses, loaded now)

import gcbench.coding._apply as apply_module  # noqa: E402
import gcbench.coding._base as base_module  # noqa: E402
import gcbench.coding._conditioning as conditioning_module  # noqa: E402
from gcbench.coding import make_scheme  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads():
    """Every loaded BLAS on two threads around the test (skipped where a library will not take two)."""
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        if set(blas_threads()) != {2}:
            pytest.skip(f"the BLAS libraries would not take two threads: {blas_threads()}")
        yield


def recording(function, seen: list):
    def hook(*args, **kwargs):
        seen.append(blas_threads())
        return function(*args, **kwargs)

    return hook


def received(scheme, d: int, dtype=np.float32) -> dict:
    grads = np.random.default_rng(0).standard_normal((scheme.k, d)).astype(dtype)
    return {w: scheme.encode(w, grads) for w in range(scheme.s, scheme.n)}, grads.sum(axis=0)


@pytest.mark.parametrize("name, m", [("cce_cr", 2), ("cce_fr", 3), ("cyclic_mds", 1)])
def test_decode_runs_its_axpy_on_one_blas_thread(monkeypatch, two_blas_threads, name, m):
    scheme = make_scheme(name, n=12, s=2 if m < 3 else 1, **({"m": m} if m > 1 else {}))
    messages, expected = received(scheme, 3000)
    seen: list = []
    monkeypatch.setattr(apply_module, "_axpy", lambda dtype: recording(scipy.linalg.blas.saxpy, seen))
    decoded = scheme.decode(messages)
    assert seen and all(set(counts) == {1} for counts in seen), seen
    assert set(blas_threads()) == {2}  # restored after the call
    np.testing.assert_allclose(decoded, expected, atol=0.02)  # float32 through a condition number of tens


def test_encode_runs_on_one_blas_thread(monkeypatch, two_blas_threads):
    scheme = make_scheme("cyclic_mds", n=8, s=2)
    seen: list = []
    monkeypatch.setattr(apply_module, "_axpy", lambda dtype: recording(scipy.linalg.blas.saxpy, seen))
    received(scheme, 500)
    assert seen and all(set(counts) == {1} for counts in seen), seen
    assert set(blas_threads()) == {2}


def test_the_decoding_weights_are_solved_on_one_blas_thread(monkeypatch, two_blas_threads):
    scheme = make_scheme("cce_cr", n=10, s=2, m=2)
    seen: list = []
    monkeypatch.setattr(base_module, "make_decoding", recording(base_module.make_decoding, seen))
    scheme.decoding([i for w in range(2, 10) for i in scheme.messages(w)])
    scheme.approximate_decoding(scheme.messages(3))
    assert len(seen) == 2 and all(set(counts) == {1} for counts in seen), seen
    assert set(blas_threads()) == {2}


def test_the_conditioning_check_of_a_construction_runs_on_one_blas_thread(monkeypatch, two_blas_threads):
    seen: list = []
    monkeypatch.setattr(conditioning_module, "_REPORTS", {})  # not answered from the cache
    monkeypatch.setattr(conditioning_module, "_scan", recording(conditioning_module._scan, seen))
    make_scheme("cr", n=9, s=2, seed=1)
    assert seen and all(set(counts) == {1} for counts in seen), seen
    assert set(blas_threads()) == {2}


WITHOUT_THREADPOOLCTL = """
import sys

class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "threadpoolctl":
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, _Hidden())
"""
DECODE = """
import numpy as np
from gcbench.coding import make_scheme
scheme = make_scheme("cce_cr", n=12, s=2, m=3)
grads = np.random.default_rng(0).standard_normal((12, 3001)).astype(np.float32)
messages = {w: scheme.encode(w, grads) for w in range(2, 12)}
error = np.abs(scheme.decode(messages) - grads.sum(axis=0)).max()
print("threadpoolctl" in sys.modules, bool(error < 0.02))
"""


def test_without_threadpoolctl_the_coding_layer_decodes_all_the_same(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(WITHOUT_THREADPOOLCTL)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n" + DECODE], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True"]


LOADED_LATE = """
import sys
import numpy as np
from gcbench.coding import make_scheme
import gcbench.coding._apply as apply_module
scheme = make_scheme("cce_cr", n=12, s=2, m=2)  # holds BLAS to one thread before scipy.linalg is loaded
assert "scipy.linalg" not in sys.modules
import scipy.linalg.blas
from threadpoolctl import threadpool_info, threadpool_limits
grads = np.random.default_rng(0).standard_normal((12, 3001)).astype(np.float32)
messages = {w: scheme.encode(w, grads) for w in range(2, 12)}
seen = []
def hook(dtype):
    def axpy(*args):
        seen.append(sorted({lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}))
        return scipy.linalg.blas.saxpy(*args)
    return axpy
apply_module._axpy = hook
with threadpool_limits(limits=2, user_api="blas"):
    scheme.decode(messages)
print(sorted({tuple(s) for s in seen}))
"""


def test_scipys_blas_loaded_after_the_first_limit_is_held_to_one_thread_too(tmp_path):
    """scipy.linalg brings its own OpenBLAS: the libraries are looked up again once it is imported."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", LOADED_LATE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[(1,)]"
