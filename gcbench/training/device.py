"""The torch device a run trains on: 'auto', 'cpu', 'cuda' or 'cuda:N', checked before anything starts.

torch is imported inside the functions, so the command line can check a device
before it pays for importing torch anywhere else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gcbench.errors import GcbenchError

if TYPE_CHECKING:
    import torch


def check_device(name: str) -> None:
    """Refuse a CUDA device this machine does not have ('auto' and 'cpu' always work)."""
    if not name.startswith("cuda"):
        return
    import torch

    if not torch.cuda.is_available():
        raise GcbenchError(f"training.device: {name} was asked for, but CUDA is not available here; use cpu or auto.")
    count, index = torch.cuda.device_count(), int(name.partition(":")[2] or 0)
    if index >= count:
        raise GcbenchError(
            f"training.device: {name} was asked for, but this machine has {count} CUDA device(s): "
            f"cuda:0 to cuda:{count - 1}."
        )


def check_ddp_backend(training) -> None:
    """Refuse NCCL for the DDP baseline where its ranks train on the CPU (NCCL moves GPU memory only)."""
    if training.ddp_backend == "nccl" and resolve_device(training.device).type != "cuda":
        raise GcbenchError(
            f"training.ddp_backend: nccl needs the ranks on CUDA devices, but training.device {training.device} "
            "means the CPU here; use gloo or auto."
        )


def resolve_device(name: str) -> torch.device:
    """'auto' is CUDA when available, else the CPU."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    check_device(name)
    return torch.device(name)


def worker_device(name: str, worker: int) -> str:
    """The device worker ``worker`` computes on, from a resolved device name: 'cuda' spreads the workers over
    this machine's GPUs in turn (worker w on cuda:(w mod GPUs), so several share one where there are more
    workers than GPUs); 'cuda:N' puts every worker on GPU N; 'cpu' stays the CPU.

    On Ray a worker sees only the GPU Ray gave it (CUDA_VISIBLE_DEVICES), so it is cuda:0 there."""
    if name != "cuda":
        return name
    import torch

    return f"cuda:{worker % max(torch.cuda.device_count(), 1)}"


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (a CUDA device runs kernels after the call that launched them returns),
    so a wall-clock time taken next is the work's end; nothing on the CPU."""
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)


def to_host(tensor: torch.Tensor):
    """A tensor as a numpy array in host memory: a CPU tensor's own memory; a GPU tensor copied into pinned
    (page-locked) host memory, which the copy engine fills directly (pageable memory costs a second copy
    through a staging buffer of the driver's). The array keeps its pinned buffer alive; torch's caching host
    allocator reuses the buffer once the array is gone."""
    if tensor.device.type == "cpu":
        return tensor.detach().numpy()
    import torch

    host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
    host.copy_(tensor.detach(), non_blocking=True)
    torch.cuda.synchronize(tensor.device)
    return host.numpy()
