"""What the GPU path decides on the CPU: which GPU each worker and DDP rank takes, the DDP baseline's process
group, Ray's GPU share per actor, the host copy of a message, and the decode's matrix product (the GPU's
algorithm, run here on CPU tensors). tests/test_cuda.py runs the same paths on a CUDA device."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")

from gcbench.cli import app  # noqa: E402
from gcbench.coding import make_scheme  # noqa: E402
from gcbench.coding._apply import _consecutive, combine_into, product_into  # noqa: E402
from gcbench.errors import GcbenchError  # noqa: E402
from gcbench.real.ddp.ddp_run import SHARED_GPU_BACKEND, rank_devices  # noqa: E402
from gcbench.real.ray.cluster import gpu_share  # noqa: E402
from gcbench.testing import check_device_decode_matches_cpu, partition_gradients  # noqa: E402
from gcbench.training.device import to_host, worker_device  # noqa: E402

from realhelpers import scenario  # noqa: E402


@pytest.fixture
def gpus(monkeypatch):
    """Pretend this machine has ``count`` GPUs (nothing here touches one)."""

    def have(count: int) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)

    return have


def test_workers_spread_over_the_gpus_in_turn_and_cuda_n_holds_them_all(gpus):
    gpus(3)
    assert [worker_device("cuda", w) for w in range(7)] == [f"cuda:{w % 3}" for w in range(7)]
    assert {worker_device("cuda:2", w) for w in range(7)} == {"cuda:2"}
    assert {worker_device("cpu", w) for w in range(7)} == {"cpu"}


@pytest.mark.parametrize(
    ("count", "ask", "expected"),
    [
        (4, "auto", (["cuda:0", "cuda:1", "cuda:2", "cuda:3"], "nccl", False)),
        (1, "auto", (["cuda:0"] * 4, SHARED_GPU_BACKEND, True)),
        (2, "auto", (["cuda:0", "cuda:1", "cuda:0", "cuda:1"], SHARED_GPU_BACKEND, True)),
        (1, "nccl", (["cuda:0"] * 4, "nccl", True)),
        (4, "gloo", (["cuda:0", "cuda:1", "cuda:2", "cuda:3"], "gloo", False)),
    ],
)
def test_ddp_ranks_take_the_gpus_in_turn_and_nccl_only_when_each_has_its_own_unless_told(gpus, count, ask, expected):
    gpus(count)
    sc = scenario({"scheme": "uncoded", "policy": "allreduce"}, training={"device": "cuda", "ddp_backend": ask})
    assert rank_devices(sc, 4) == expected


def test_ddp_on_the_cpu_is_gloo_whatever_a_gpu_machine_would_choose():
    sc = scenario({"scheme": "uncoded", "policy": "allreduce"}, training={"device": "cpu"})
    assert rank_devices(sc, 4) == (["cpu"] * 4, "gloo", False)


def test_nccl_for_ranks_on_the_cpu_is_refused_in_one_sentence(tmp_path):
    path = tmp_path / "ddp.yaml"
    path.write_text(
        "name: ddp\nworkers: 2\niterations: 2\ncompute: {per_partition: {distribution: exponential, rate: 10}}\n"
        "variants: [{scheme: uncoded, policy: allreduce}]\n"
        "training: {dataset: synthetic, device: cpu, ddp_backend: nccl}\n"
    )
    result = CliRunner().invoke(app, ["run", str(path), "--backend", "torch"])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "training.ddp_backend: nccl needs the ranks on CUDA devices, but training.device cpu means the CPU here; " \
           "use gloo or auto." in " ".join(result.output.split())  # fmt: skip


def test_an_unknown_ddp_backend_is_refused_naming_the_three(tmp_path):
    path = tmp_path / "ddp.yaml"
    path.write_text(
        "name: ddp\nworkers: 2\niterations: 2\ncompute: {per_partition: {distribution: exponential, rate: 10}}\n"
        "variants: [{scheme: uncoded}]\ntraining: {ddp_backend: mpi}\n"
    )
    result = CliRunner().invoke(app, ["simulate", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "training.ddp_backend" in result.output and "'auto', 'gloo' or 'nccl'" in result.output


@pytest.mark.parametrize(
    ("workers", "gpus_there", "share"),
    [(4, 1, 0.25), (8, 2, 0.25), (3, 2, 0.5), (4, 4, 1.0), (2, 8, 1.0), (5, 1.5, 0.2)],
)
def test_ray_packs_ceil_workers_over_gpus_actors_on_each_gpu(workers, gpus_there, share):
    assert gpu_share(workers, gpus_there) == pytest.approx(share)


def test_a_ray_cluster_without_gpus_is_refused_in_one_sentence():
    with pytest.raises(GcbenchError, match=r"the Ray cluster offers no GPU .* start its nodes with --num-gpus"):
        gpu_share(4, 0)


def test_a_cpu_tensor_reaches_the_host_as_its_own_memory():
    tensor = torch.arange(6, dtype=torch.float32)
    array = to_host(tensor)
    assert isinstance(array, np.ndarray) and np.shares_memory(array, tensor.numpy())


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_the_gpu_decode_s_matrix_product_gives_the_block_sweep_s_sums_to_rounding(dtype):
    """product_into (the decode's algorithm on a GPU) on CPU tensors against combine_into's CPU sweep, with a
    last row cut short as a decode's last slice is; within 2 r u sum |w| |v| (gcbench.testing's bound)."""
    rng = np.random.default_rng(3)
    weights = rng.standard_normal((3, 5))
    weights[:, 2] = 0.0  # a message no row uses
    vectors = [torch.from_numpy(rng.standard_normal(4099)).to(dtype) for _ in range(5)]
    rows = [torch.empty(4099, dtype=dtype), torch.empty(4099, dtype=dtype), torch.empty(4000, dtype=dtype)]
    expected = [torch.empty_like(row) for row in rows]
    product_into(rows, weights, vectors)
    combine_into(expected, weights, vectors)
    unit = torch.finfo(dtype).eps / 2
    block = np.abs(np.stack([v.double().numpy() for v in vectors]))
    bound = 2 * 5 * unit * (np.abs(weights) @ block)
    for u, (row, want) in enumerate(zip(rows, expected, strict=True)):
        error = np.abs(row.double().numpy() - want.double().numpy())
        assert np.all(error <= bound[u, : row.shape[0]] + 1e-300)


@pytest.mark.parametrize("last", [4099, 4000])
def test_messages_in_one_block_are_multiplied_where_they_lie_and_slices_of_one_vector_written_in_place(last):
    """The learner's block of messages and the decoded gradient's slices: the product reads and writes them
    in place (no stacking copy, no copy out), with the sums of the stacked path; a short last slice is copied."""
    rng = np.random.default_rng(4)
    weights = rng.standard_normal((2, 3))
    block = torch.from_numpy(rng.standard_normal((3, 4099)))
    out = torch.full((4099 + last,), float("nan"), dtype=torch.float64)
    rows = [out[:4099], out[4099:]]
    product_into(rows, weights, list(block.unbind(0)))
    separate = [torch.empty(4099, dtype=torch.float64), torch.empty(last, dtype=torch.float64)]
    product_into(separate, weights, [row.clone() for row in block.unbind(0)])
    torch.testing.assert_close(out, torch.cat(separate), rtol=0, atol=0)
    assert _consecutive(list(block.unbind(0))).data_ptr() == block.data_ptr()
    assert _consecutive([block[0], block[2]]) is None and _consecutive([block[1], block[0]]) is None


@pytest.mark.parametrize("name", ["cyclic_mds", "cce_cr", "ignore_stragglers"])
def test_the_device_decode_check_holds_on_the_cpu_and_reads_every_slice(name):
    """The check tests/test_cuda.py runs on a GPU, on the CPU (where both decodes are the same sums): m = 1
    and m = 2 slices, exact and approximate, float32."""
    scheme = make_scheme(name, n=6, s=2, **({"m": 2} if name == "cce_cr" else {}))
    grads = partition_gradients(scheme.k, 1001, np.random.default_rng(0), np.float32)
    check_device_decode_matches_cpu(scheme, [0, 3], grads, "cpu")
