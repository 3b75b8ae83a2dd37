"""Networks a run trains: softmax regression for cheap sweeps, a small CNN that trains in minutes on a CPU, and
ResNet-18.

``MODELS`` is the registry ``training.model`` names; the scenario schema lists the same names (it sits below
this layer and may not import torch). tests/test_scenario_schema.py holds the two equal without torch, reading
``MODELS`` from this file's source, so it stays a dict literal of names; tests/test_training.py checks it imported.
"""

from __future__ import annotations

import torch
from torch import nn

from gcbench.errors import GcbenchError, did_you_mean

IMAGE_FEATURES = 3 * 32 * 32


def softmax(classes: int = 10) -> nn.Module:
    """Softmax regression on the normalised pixels: one linear layer (~31k parameters), convex, fast to sweep."""
    return nn.Sequential(nn.Flatten(), nn.Linear(IMAGE_FEATURES, classes))


def small_cnn(classes: int = 10) -> nn.Module:
    """Three conv blocks and two dense layers (~0.3M parameters)."""
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 4 * 4, 128), nn.ReLU(), nn.Linear(128, classes),
    )  # fmt: skip


def resnet18(classes: int = 10) -> nn.Module:
    """torchvision's ResNet-18 with the usual CIFAR stem (3x3 first convolution, no max-pool)."""
    from torchvision.models import resnet18 as torchvision_resnet18

    model = torchvision_resnet18(num_classes=classes)
    model.conv1 = nn.Conv2d(3, 64, 3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


MODELS = {"small_cnn": small_cnn, "resnet18": resnet18, "softmax": softmax}


def parameter_count(name: str, classes: int) -> int:
    """Entries of the named model's gradient (its parameters), counted on the meta device: nothing is allocated."""
    with torch.device("meta"):
        return sum(parameter.numel() for parameter in MODELS[name](classes).parameters())


def build_model(name: str, classes: int, seed: int) -> nn.Module:
    """The named model with weights initialised from the seed."""
    if name not in MODELS:
        raise GcbenchError(
            f"training.model: unknown model '{name}'; {did_you_mean(name, MODELS)}available: {', '.join(MODELS)}."
        )
    torch.manual_seed(seed)
    return MODELS[name](classes)
