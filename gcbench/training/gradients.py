"""Per-partition gradients of a model as flat vectors, and applying a flat gradient (the flat model).

Each partition's loss is summed over its samples and divided by the global batch
size, so the sum of all partition gradients is exactly the mini-batch gradient
of the mean loss: the quantity every scheme decodes.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from gcbench.training.batches import PartitionSampler, Shard

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


def warm_up(model: nn.Module, images: np.ndarray, labels: np.ndarray, batch_size: int, device: torch.device) -> None:
    """One forward and backward pass on these samples, leaving the model's parameters and buffers (BatchNorm's
    running statistics) as they were: a process's first pass is slow (CUDA loads its kernels on first use, the
    allocators grow), and that start-up is no iteration's. Measured: the first iteration of 8 workers sharing an
    H200 took 0.43-0.50 s against 20-30 ms for the next ones, and 2x the next ones on a CPU (docs/gpu.md)."""
    buffers = [buffer.clone() for buffer in model.buffers()]
    partition_gradient(model, images, labels, batch_size, device)
    model.zero_grad(set_to_none=True)
    with torch.no_grad():
        for buffer, kept in zip(model.buffers(), buffers, strict=True):
            buffer.copy_(kept)


def shard_gradient(
    model: nn.Module, shard: Shard, sampler: PartitionSampler, batch: int, partition: int, device: torch.device
) -> tuple[torch.Tensor, float]:
    """A worker's job for one partition: its gradient on mini-batch ``batch`` from the shard the worker holds."""
    images, labels, offset = shard
    rows = sampler.indices(batch, partition) - offset
    return partition_gradient(model, images[rows], labels[rows], sampler.batch_size, device)


def warm_up_on_shard(model: nn.Module, shard: Shard, sampler: PartitionSampler, partition: int,
                     device: torch.device) -> None:  # fmt: skip
    """``warm_up`` on the samples of mini-batch 0 that the shard's partition holds: the shapes of a first job."""
    images, labels, offset = shard
    rows = sampler.indices(0, partition) - offset
    warm_up(model, images[rows], labels[rows], sampler.batch_size, device)


def share_flat_storage(model: nn.Module) -> torch.Tensor:
    """Make the model's parameters views of one new flat tensor (holding their values) and return it."""
    flat = flat_parameters(model).clone()
    offset = 0
    for p in model.parameters():
        p.data = flat[offset : offset + p.numel()].view_as(p)
        offset += p.numel()
    return flat


class FlatModel:
    """A model whose parameters are views of one flat tensor, which the optimizer steps as a whole.

    SGD with momentum and weight decay is elementwise, so one step on the flat
    tensor is exactly a step on every parameter; it costs a few vector operations
    instead of several per parameter, and publishing the weights copies nothing.
    """

    def __init__(self, model: nn.Module, training) -> None:
        self.model = model
        self.flat = nn.Parameter(share_flat_storage(model))
        self.optimizer = torch.optim.SGD(
            [self.flat], lr=training.learning_rate, momentum=training.momentum, weight_decay=training.weight_decay
        )

    def step(self, flat_grad: torch.Tensor) -> None:
        """One optimizer step with this flat gradient."""
        self.flat.grad = flat_grad.to(device=self.flat.device, dtype=self.flat.dtype)
        self.optimizer.step()

    def weights(self) -> np.ndarray:
        """The current weights as one numpy vector (on the CPU a view: publish it before the next step; from a GPU
        a copy in pinned host memory)."""
        from gcbench.training.device import to_host

        return to_host(self.flat)
