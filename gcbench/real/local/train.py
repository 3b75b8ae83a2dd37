"""The local backend: one process, the whole mini-batch; the baseline distributed runs are compared with."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch

from gcbench import stops
from gcbench.results.recorder import RunRecorder
from gcbench.results.rows import identity, table_columns
from gcbench.scenario.schema import Training
from gcbench.training.batches import PartitionSampler
from gcbench.training.data import Dataset
from gcbench.training.evaluation import evaluate
from gcbench.training.gradients import FlatModel, partition_gradient, warm_up
from gcbench.training.models import build_model


def train_local(
    data: Dataset,
    training: Training,
    partitions: int,
    iterations: int,
    seed: int,
    device: torch.device,
    progress: Callable[[int, float, float], None] | None = None,
) -> pd.DataFrame:
    """Train for some iterations on the full mini-batch; one row per iteration (schema + loss, accuracy).

    ``progress`` is told, after each iteration, how many are done, the loss and the accuracy (NaN if not evaluated).
    """
    model = build_model(training.model, data.classes, seed).to(device)
    flat = FlatModel(model, training)
    sampler = PartitionSampler(len(data.train_labels), partitions, training.batch_size, seed)
    first = sampler.batch(0)
    warm_up(model, data.train_images[first], data.train_labels[first], sampler.batch_size, device)
    rec, origin = RunRecorder(iterations, 1), time.perf_counter()  # one worker: the whole mini-batch
    rec.used[:], rec.exact[:], rec.reason[:] = True, True, stops.ALL_ARRIVED
    for t in range(iterations):
        start = time.perf_counter() - origin
        batch = sampler.batch(t)
        grad, loss = partition_gradient(
            model, data.train_images[batch], data.train_labels[batch], sampler.batch_size, device
        )
        flat.step(grad)
        end = time.perf_counter() - origin
        accuracy = np.nan
        if (t + 1) % training.eval_every == 0 or t == iterations - 1:
            accuracy = evaluate(model, data.test_images, data.test_labels, device)
        rec.start[t], rec.end[t], rec.duration[t], rec.loss[t], rec.accuracy[t] = (
            start,
            end,
            end - start,
            loss,
            accuracy,
        )
        if progress:
            progress(t + 1, loss, accuracy)
    keys = identity("local", "uncoded", 0, 1, "wait_all", seed)
    columns, _ = table_columns(rec, keys, None, trained=True)
    return pd.DataFrame(columns)
