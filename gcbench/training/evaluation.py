"""Test accuracy of a model, and what a master's model needs first: BatchNorm statistics from training samples.

A master (Ray's, or the simulator's when it trains) only ever steps decoded
gradients and never runs a forward pass, so ``evaluate_master`` recalibrates
BatchNorm before it measures.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from gcbench.training.data import Dataset
from gcbench.training.gradients import to_inputs


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


@torch.no_grad()
def recalibrate_batch_norm(
    model: nn.Module, images: np.ndarray, device: torch.device, chunk: int = 128, samples: int = 2048
) -> None:
    """Set BatchNorm running statistics from training samples at the current weights.

    A distributed master never runs a forward pass, so its BatchNorm statistics
    would stay at their initial values and its evaluations would be meaningless.
    This sets them to the average over ``samples`` fixed training images (no-op
    for models without BatchNorm).
    """
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average over the chunks
    rows = np.sort(np.random.default_rng(0).choice(len(images), min(samples, len(images)), replace=False))
    model.train()
    for start in range(0, len(rows), chunk):
        model(to_inputs(images[rows[start : start + chunk]], device))
    for m, momentum in zip(norms, momenta, strict=True):
        m.momentum = momentum


def evaluate_master(model: nn.Module, data: Dataset, batch_size: int) -> float:
    """Test accuracy of the master's model (on its device), with its BatchNorm statistics set first."""
    device = next(model.parameters()).device
    recalibrate_batch_norm(model, data.train_images, device, chunk=batch_size)
    return evaluate(model, data.test_images, data.test_labels, device)
