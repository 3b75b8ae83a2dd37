"""Shared pieces of the real-mode tests: a tiny scenario, synthetic data, and the single-process reference."""

from __future__ import annotations

import torch

from gcbench.real.master import RayMaster
from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario
from gcbench.training.data import synthetic
from gcbench.training.gradients import flat_parameters, load_flat_parameters, partition_gradient
from gcbench.training.models import build_model

DATA = synthetic(train=512, test=64)


def scenario(
    variant: dict,
    straggling: dict | None = None,
    workers: int = 4,
    failures: dict | None = None,
    iterations: int = 3,
    training: dict | None = None,
    overhead: dict | None = None,
) -> Scenario:
    return Scenario.model_validate(
        {
            "name": "real-test",
            "workers": workers,
            "iterations": iterations,
            "compute": {"per_partition": {"distribution": "deterministic", "value": 0.01}, "overhead": overhead},
            "straggling": straggling or {"model": "none"},
            "failures": failures or {"model": "none"},
            "variants": [variant],
            "training": {"dataset": "synthetic", "batch_size": 32, "device": "cpu", "timeout": 60, **(training or {})},
        }
    )


def make_master(sc: Scenario, master_class=RayMaster) -> RayMaster:
    return master_class(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), DATA, seed=0, device="cpu")


def current_weights(master: RayMaster) -> torch.Tensor:
    return flat_parameters(master.model).clone()


def reference_gradient(master: RayMaster, weights: torch.Tensor, t: int) -> torch.Tensor:
    """The single-process gradient of iteration t's whole mini-batch, at the same weights.

    It is summed over the scheme's partitions, as the workers compute it: for a
    model without BatchNorm that is the gradient of the whole mini-batch; with
    BatchNorm each partition normalises with its own batch statistics.
    """
    model = build_model(master.scenario.training.model, DATA.classes, 0)
    load_flat_parameters(model, weights)
    total = torch.zeros_like(weights)
    for j in range(master.scheme.k):
        rows = master.sampler.indices(t, j)
        images, labels = DATA.train_images[rows], DATA.train_labels[rows]
        total += partition_gradient(model, images, labels, master.sampler.batch_size, torch.device("cpu"))[0]
    return total


def relative_error(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got - expected).norm() / expected.norm())
