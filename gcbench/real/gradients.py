"""Per-partition gradients of a model as flat vectors, and applying a flat gradient.

Each partition's loss is summed over its samples and divided by the global batch
size, so the sum of all partition gradients is exactly the mini-batch gradient
of the mean loss: the quantity every scheme decodes.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

MEAN = torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1)
STD = torch.tensor([0.2470, 0.2435, 0.2616]).view(1, 3, 1, 1)


def to_inputs(images: np.ndarray, device: torch.device) -> torch.Tensor:
    """uint8 (N, 3, 32, 32) to normalised float32 on the device."""
    x = torch.from_numpy(images).to(device=device, dtype=torch.float32) / 255.0
    return (x - MEAN.to(device)) / STD.to(device)


def flat_parameters(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def load_flat_parameters(model: nn.Module, flat: torch.Tensor) -> None:
    offset = 0
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(flat[offset : offset + p.numel()].view_as(p))
            offset += p.numel()


def partition_gradient(
    model: nn.Module, images: np.ndarray, labels: np.ndarray, batch_size: int, device: torch.device
) -> tuple[torch.Tensor, float]:
    """Flat gradient of sum(loss over these samples) / batch_size, and that loss value."""
    model.zero_grad(set_to_none=True)
    logits = model(to_inputs(images, device))
    loss = nn.functional.cross_entropy(logits, torch.from_numpy(labels).to(device), reduction="sum") / batch_size
    loss.backward()
    grad = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    return grad.detach(), float(loss.detach())


def apply_gradient(model: nn.Module, optimizer: torch.optim.Optimizer, flat_grad: torch.Tensor) -> None:
    """Write a flat gradient into the parameters' .grad and take an optimizer step."""
    offset = 0
    for p in model.parameters():
        p.grad = flat_grad[offset : offset + p.numel()].view_as(p).to(p.dtype).clone()
        offset += p.numel()
    optimizer.step()


@torch.no_grad()
def evaluate(
    model: nn.Module, images: np.ndarray, labels: np.ndarray, device: torch.device, chunk: int = 1000
) -> float:
    """Test accuracy."""
    model.eval()
    correct = 0
    for start in range(0, len(images), chunk):
        logits = model(to_inputs(images[start : start + chunk], device))
        correct += int((logits.argmax(1).cpu().numpy() == labels[start : start + chunk]).sum())
    model.train()
    return correct / len(images)
