"""What a real run needs from the machine is checked first: the [real] extra, and CUDA when asked for."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.real.run.requirements import INSTALL

ROOT = Path(__file__).resolve().parents[1]

# gcbench's command line in a Python where torch, torchvision and ray (and their submodules) cannot be imported
WITHOUT_REAL_EXTRA = """
import sys
from importlib.abc import MetaPathFinder

class Blocked(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "torchvision", "ray"):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return None

sys.meta_path.insert(0, Blocked())
sys.argv[0] = "gcbench"
from gcbench.cli import main
main()
"""


def gcbench_without_real_extra(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_REAL_EXTRA, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@pytest.mark.parametrize(("backend", "missing"), [("ray", "torch, torchvision, ray"), ("local", "torch, torchvision")])
def test_a_real_run_without_the_real_extra_says_how_to_install_it(backend, missing):
    """Each backend names what it misses of the extra: Ray only where it runs on Ray."""
    result = gcbench_without_real_extra("run", "scenarios/cifar10.yaml", "--backend", backend, "--dataset", "synthetic")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: real runs need the [real] extra ({missing} cannot be imported): install it with "
        "pip install -e '.[real]' in a clone of gcbench, or simulate with --sim."
    ]


# the same, where only Ray cannot be imported (a GPU machine's image with torch and no Ray, say)
WITHOUT_RAY = WITHOUT_REAL_EXTRA.replace('("torch", "torchvision", "ray")', '("ray",)')


@pytest.mark.slow
def test_the_torch_and_local_backends_train_where_ray_is_not_installed(tmp_path):
    """Only the Ray backend needs Ray: a torch-backend run of two variants and the DDP baseline, and a local run,
    train and write their tables without it."""
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for backend in ("torch", "local"):
        out = tmp_path / backend
        result = subprocess.run(
            [sys.executable, "-c", WITHOUT_RAY, "run", str(ROOT / "scenarios" / "cifar10.yaml"), "--backend", backend,
             "--dataset", "synthetic", "--iterations", "2", "--out", str(out), "--set", "workers=2",
             "--set", "variants=[{scheme: uncoded}, {scheme: fr, s: 1}, {scheme: uncoded, policy: allreduce}]"],
            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert (out / "iterations.parquet").is_file()


def test_run_sim_works_without_the_real_extra(tmp_path):
    out = tmp_path / "sim"
    result = gcbench_without_real_extra(
        "run", str(ROOT / "scenarios" / "cifar10.yaml"), "--sim", "--iterations", "5", "--out", str(out), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert (out / "iterations.parquet").is_file()


@pytest.fixture
def no_ray_no_data(monkeypatch):
    """Fail the test if the run reads data or starts Ray."""
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    import gcbench.real.ray.start as ray_start
    import gcbench.training.data as data

    def forbidden(*args, **kwargs):
        raise AssertionError("the run went on past the device check")

    monkeypatch.setattr(ray_start, "start_ray", forbidden)
    monkeypatch.setattr(data, "load_data", forbidden)


def test_device_cuda_without_cuda_is_refused_before_the_data_is_read_and_ray_starts(monkeypatch, no_ray_no_data):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    begin = time.perf_counter()
    result = CliRunner().invoke(app, ["run", "scenarios/cifar10.yaml", "--dataset", "synthetic", "--device", "cuda"])
    assert result.exit_code == 2, result.output
    assert "training.device: cuda was asked for, but CUDA is not available here; use cpu or auto." in result.output
    assert time.perf_counter() - begin < 10


def test_a_cuda_device_this_machine_does_not_have_is_refused(monkeypatch, no_ray_no_data):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    result = CliRunner().invoke(app, ["run", "scenarios/cifar10.yaml", "--dataset", "synthetic", "--device", "cuda:1"])
    assert result.exit_code == 2, result.output
    assert "training.device: cuda:1 was asked for, but this machine has 1 CUDA device(s): cuda:0 to cuda:0." in (
        result.output
    )


@pytest.mark.slow
def test_training_in_the_simulator_without_the_real_extra_says_how_to_install_it():
    result = gcbench_without_real_extra("simulate", "scenarios/trained_sweep.yaml", "--check")
    assert result.returncode == 0, result.stderr  # --check needs no torch
    result = gcbench_without_real_extra("simulate", "scenarios/trained_sweep.yaml", "--iterations", "2")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: scenarios that train in the simulator need the [real] extra (torch, torchvision cannot be "
        f"imported): install it with {INSTALL}, or set training.in_simulator: false."
    ]


def test_an_unknown_backend_is_named_before_the_real_extra_is_asked_for(monkeypatch):
    """Without the extra, `--backend mpi` was told to install it: the backend's name is the first mistake."""
    import gcbench.real.run.requirements as requirements

    monkeypatch.setattr(requirements, "missing_real_modules", lambda modules=(): ["torch"])
    result = CliRunner().invoke(app, ["run", "scenarios/cifar10.yaml", "--backend", "mpi"])
    assert result.exit_code == 2
    assert "--backend must be ray, torch or local, got 'mpi'" in result.output and "[real] extra" not in result.output
