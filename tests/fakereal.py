"""A stand-in for the Ray master, so the real run's driver (turns, checkpoints, resume, run.json, signals) is
tested in one process in a second, without Ray. It trains the real model a little so checkpoints are real ones.

``FakeMaster.log`` records (variant label, seed, iteration) in the order they ran; ``FakeMaster.events`` maps
(label, seed, iteration) to what happens at that iteration: "interrupt" (Ctrl-C), "sigterm", or "stuck".
The last worker never sends in time: its timings come late, from ``finish``, as a straggler's do.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
import torch

from gcbench.real.cluster import ClusterStuck
from gcbench.real.master import Step
from gcbench.training.data import synthetic
from gcbench.training.gradients import FlatModel
from gcbench.training.models import build_model

DATA = synthetic(train=256, test=64)

SCENARIO = """\
name: fake
workers: 4
iterations: 6
compute: {per_partition: {distribution: deterministic, value: 0.01}}
variants: [{label: uncoded, scheme: uncoded, policy: wait_all}, {label: FR s=1, scheme: fr, s: 1}]
training: {dataset: synthetic, batch_size: 32, eval_every: 100, checkpoint_every: 2, device: cpu}
"""


class FakeMaster:
    log: list[tuple[str, int, int]] = []
    events: dict[tuple[str, int, int], str] = {}

    def __init__(self, scenario, variant, scheme, data, seed) -> None:
        self.label, self.seed, self.scheme = variant.display_label(), seed, scheme
        self.model = build_model(scenario.training.model, data.classes, seed)
        self.flat = FlatModel(self.model, scenario.training)
        self.optimizer = self.flat.optimizer
        self.origin = time.time()
        self.late: list[dict] = []

    def steps(self, first: int, last: int):
        for t in range(first, last):
            event = self.events.get((self.label, self.seed, t))
            if event == "interrupt":
                raise KeyboardInterrupt
            if event == "sigterm":
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # the handler raises here
            if event == "stuck":
                raise ClusterStuck(f"variant '{self.label}': iteration {t} can never finish (fake).")
            self.log.append((self.label, self.seed, t))
            yield self._step(t)

    def _step(self, t: int) -> Step:
        start = time.time()
        self.flat.step(torch.full_like(self.flat.flat, 1e-3 * (t + 1)))
        end = time.time() + 0.001
        used = range(self.scheme.n - 1)
        timings = {w: {"compute_start": start, "ready": end, "injected": 0.0} for w in used}
        last = self.scheme.n - 1
        self.late = [{"iteration": t, "worker": last, "compute_start": start, "compute_end": end + 0.01,
                      "injected": 0.2, "arrival": end + 0.02}]  # fmt: skip
        return Step(torch.zeros(1), start, end, "all_arrived", True, 0.0, 2.0 / (t + 1),
                    arrivals={w: end - start for w in used}, timings=timings)  # fmt: skip

    def finish(self) -> list[dict]:
        late, self.late = self.late, []
        return late

    def shutdown(self) -> None:
        pass


def patch_ray(monkeypatch: pytest.MonkeyPatch) -> type[FakeMaster]:
    """Put FakeMaster in Ray's place (and small synthetic data in the scenario's)."""
    import gcbench.real.runner as runner
    import gcbench.real.variant as variant
    import gcbench.training.data as data

    FakeMaster.log, FakeMaster.events = [], {}
    monkeypatch.setattr(variant, "master_for", FakeMaster)
    monkeypatch.setattr(variant, "master_threads", lambda workers: 1)
    monkeypatch.setattr(runner, "start_ray", lambda address: None)
    monkeypatch.setattr(data, "load_data", lambda scenario: DATA)
    return FakeMaster


@pytest.fixture
def fake_ray(monkeypatch):
    """The real run's driver with FakeMaster instead of Ray; yields FakeMaster (its log and events)."""
    yield patch_ray(monkeypatch)
