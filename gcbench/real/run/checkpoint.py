"""Checkpoints of a real run: model, optimizer, RNG state, next iteration and the rows so far.

Saved atomically (write then rename) and loaded with ``weights_only=True``, so a
checkpoint holds tensors and plain Python values only. A checkpoint is checked
against the run's scenario when it is loaded (before any worker starts): a
damaged or foreign file is one sentence, not a traceback mid-run.
"""

from __future__ import annotations

import copy
import math
import os
import warnings
from pathlib import Path
from typing import Any

import torch

from gcbench.errors import GcbenchError

KEYS = ("model", "optimizer", "torch_rng", "next_iteration", "rows", "workers")
FLOAT, INT = (float, int), (int,)
ITERATION_TYPES = {
    "iteration": INT, "start": FLOAT, "end": FLOAT, "duration": FLOAT, "messages_used": INT,
    "bytes_received": FLOAT, "stop": (str,), "exact": (bool,), "residual": FLOAT, "staleness": FLOAT, "loss": FLOAT,
    "accuracy": FLOAT, "compression_error": FLOAT,
}  # fmt: skip
# columns a checkpoint written before them lacks (compression_error is restored as NaN; bytes_received is computed
# again from messages_used)
ADDED_LATER = {"compression_error", "bytes_received"}
WORKER_TYPES = {
    "iteration": INT, "worker": INT, "partitions": INT, "used": (bool,), "straggling": (bool,), "failed": (bool,),
    "compute_start": FLOAT, "compute_end": FLOAT, "injected_delay": FLOAT, "arrival": FLOAT,
}  # fmt: skip


def save_checkpoint(
    path: Path,
    model,
    optimizer,
    next_iteration: int,
    rows: list[dict],
    workers: list[dict],
    rng: torch.Tensor,
    messages: list[dict] | None = None,
) -> None:
    """``messages``: the messages table's rows so far, for a scheme whose workers send several (the key is
    left out otherwise, so other runs' checkpoints are as they were)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "torch_rng": rng,
        "next_iteration": next_iteration,
        "rows": [_plain(r) for r in rows],
        "workers": [_plain(r) for r in workers],
    }
    if messages is not None:
        state["messages"] = [_plain(r) for r in messages]
    partial = path.with_suffix(".tmp")
    torch.save(state, partial)
    os.replace(partial, path)


def load_checkpoint(path: Path, scenario, variant, data) -> dict[str, Any] | None:
    """The checkpoint at ``path`` (None if there is none), checked to fit the scenario's variant."""
    if not path.is_file():
        return None
    try:
        with warnings.catch_warnings():  # torch warns about foreign pickles before it refuses them
            warnings.simplefilter("ignore")
            state = torch.load(path, weights_only=True, map_location="cpu")  # a GPU run's too
    except Exception:  # noqa: BLE001 - whatever the loader says, the file is not one gcbench wrote
        raise _damaged(path, "it cannot be read as a weights-only torch file") from None
    problem = _structure_problem(state, scenario.iterations, scheme_workers(scenario, variant))
    if problem is None:
        problem = _state_problem(state, scenario, data)
    if problem is not None:
        raise _damaged(path, problem)
    return state


def scheme_workers(scenario, variant) -> int:
    from gcbench.scenario.build import scheme_for

    return scheme_for(scenario, variant).n


def _damaged(path: Path, why: str) -> GcbenchError:
    return GcbenchError(
        f"{path} is not a checkpoint of this run ({why}); delete it to run its variant from iteration 0, "
        "or put the original back."
    )


def _structure_problem(state: Any, iterations: int, workers: int) -> str | None:
    if not isinstance(state, dict) or any(key not in state for key in KEYS):
        return f"it must be a mapping with the keys {', '.join(KEYS)}"
    done = state["next_iteration"]
    if type(done) is not int or not 0 <= done <= iterations:
        return f"next_iteration must be an integer from 0 to the scenario's {iterations} iterations"
    rows, worker_rows = state["rows"], state["workers"]
    if not isinstance(rows, list) or [_row_iteration(r, ITERATION_TYPES) for r in rows] != list(range(done)):
        return f"its rows must be iterations 0 to {done - 1}, each with the iterations table's columns"
    if not isinstance(worker_rows, list) or len(worker_rows) != done * workers:
        return f"its worker rows must be {workers} per iteration"
    if any(_row_iteration(r, WORKER_TYPES) is None for r in worker_rows):
        return "its worker rows must each have the workers table's columns"
    messages = state.get("messages", [])
    if not isinstance(messages, list) or any(_row_iteration(r, MESSAGE_TYPES) not in range(done) for r in messages):
        return "its message rows must each have the messages table's columns and an iteration it has done"
    if not isinstance(state["torch_rng"], torch.Tensor) or state["torch_rng"].dtype != torch.uint8:
        return "torch_rng must be torch's random state (a uint8 tensor)"
    return None


MESSAGE_TYPES = {
    "iteration": INT, "worker": INT, "message": INT, "message_id": INT, "ready": FLOAT, "arrival": FLOAT,
    "used": (bool,),
}  # fmt: skip


def _row_iteration(row: Any, types: dict[str, tuple]) -> int | None:
    """The row's iteration if it is a dict with exactly these columns (but one added later, which an older
    checkpoint lacks) of these types, else None."""
    if not isinstance(row, dict) or not set(types) - ADDED_LATER <= set(row) <= set(types):
        return None
    if any(type(row[key]) not in allowed for key, allowed in types.items() if key in row):
        return None
    return row["iteration"]


def _state_problem(state: dict, scenario, data) -> str | None:
    """Whether the model, optimizer and RNG states load into this scenario's model, and a step runs on them."""
    from gcbench.training.gradients import FlatModel
    from gcbench.training.models import build_model

    rng = torch.get_rng_state()
    training = scenario.training
    try:
        model = build_model(training.model, data.classes, 0)
        flat = FlatModel(model, training)
        settings = _settings(flat.optimizer.state_dict())
        model.load_state_dict(state["model"])
        # a copy: loading aliases the momentum buffers, which the trial step would change in the checkpoint
        flat.optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))
        if _settings(flat.optimizer.state_dict()) != settings:
            return "its optimizer settings are not those of the scenario's training section"
        flat.step(torch.zeros_like(flat.flat))  # a damaged momentum buffer fails here, not mid-run
        torch.set_rng_state(state["torch_rng"])
    except Exception as error:  # noqa: BLE001 - any mismatch means another model or a damaged file
        return f"its model or optimizer state does not fit training.model '{training.model}': " + (
            str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        )
    finally:
        torch.set_rng_state(rng)
    return None


def _settings(optimizer_state: dict) -> list[dict]:
    """The optimizer's hyperparameters (learning rate, momentum, ...) per parameter group."""
    return [{k: v for k, v in group.items() if k != "params"} for group in optimizer_state["param_groups"]]


def _plain(row: dict) -> dict:
    """numpy scalars to Python ones (the weights-only loader accepts only plain types)."""
    out = {}
    for key, value in row.items():
        value = value.item() if hasattr(value, "item") else value
        out[key] = float("nan") if isinstance(value, float) and math.isnan(value) else value
    return out
