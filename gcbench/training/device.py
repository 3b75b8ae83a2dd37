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


def resolve_device(name: str) -> torch.device:
    """'auto' is CUDA when available, else the CPU."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    check_device(name)
    return torch.device(name)
