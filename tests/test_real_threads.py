"""A real run's processes compute on the threads they are given, torch's and every BLAS library's alike
(gcbench/real/wallclock/threads.py): OpenBLAS keeps a thread a core of its own, and its spare threads spin against the
other workers computing on the same cores (QSGD's norm in every worker doubled the gradients' wall time on 4
workers and 2 cores)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")
threadpoolctl = pytest.importorskip("threadpoolctl")

ROOT = Path(__file__).resolve().parents[1]

WORKER = """
import json, numpy, threadpoolctl, torch
threadpoolctl.threadpool_limits(limits=2, user_api="blas")  # as OpenBLAS starts on a 2-core machine
from gcbench.real.wallclock.gradient_worker import GradientWorker
from gcbench.models.straggling import NoStraggling
setup = {"device": "cpu", "model": "softmax", "classes": 10, "seed": 0, "samples": 64, "batch_size": 16,
         "straggling": NoStraggling(), "compression": {"name": "qsgd"}}
GradientWorker(0, {"name": "uncoded", "n": 2, "s": 0, "params": {}}, setup)
import scipy.linalg  # a BLAS loaded after the worker started
blas = [lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"]
print(json.dumps({"torch": torch.get_num_threads(), "blas": blas}))
"""


def test_a_worker_process_computes_on_one_thread_of_torch_and_of_every_blas():
    done = subprocess.run([sys.executable, "-c", WORKER], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    threads = json.loads(done.stdout.strip().splitlines()[-1])
    assert threads["torch"] == 1
    assert len(threads["blas"]) >= 2 and set(threads["blas"]) == {1}  # numpy's OpenBLAS and scipy's


def test_compute_threads_holds_torch_and_blas_then_restores_them():
    import torch

    from gcbench.real.wallclock.threads import compute_threads

    def blas() -> set[int]:
        return {lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"}

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        if blas() != {2}:
            pytest.skip(f"the BLAS libraries would not take two threads: {blas()}")
        before = torch.get_num_threads()
        with compute_threads(1):
            assert torch.get_num_threads() == 1 and blas() == {1}
        assert torch.get_num_threads() == before and blas() == {2}
