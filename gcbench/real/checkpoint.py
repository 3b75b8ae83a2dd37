"""Checkpoints of a real run: model, optimizer, RNG state, next iteration and the rows so far.

Saved atomically (write then rename) and loaded with ``weights_only=True``, so a
checkpoint holds tensors and plain Python values only.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import torch


def save_checkpoint(path: Path, model, optimizer, next_iteration: int, rows: list[dict], workers: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "next_iteration": next_iteration,
        "rows": [_plain(r) for r in rows],
        "workers": [_plain(r) for r in workers],
    }
    partial = path.with_suffix(".tmp")
    torch.save(state, partial)
    os.replace(partial, path)


def load_checkpoint(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    return torch.load(path, weights_only=True)


def _plain(row: dict) -> dict:
    """numpy scalars to Python ones (the weights-only loader accepts only plain types)."""
    out = {}
    for key, value in row.items():
        value = value.item() if hasattr(value, "item") else value
        out[key] = float("nan") if isinstance(value, float) and math.isnan(value) else value
    return out
