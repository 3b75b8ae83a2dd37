"""Shared pieces of the real-mode tests: a tiny scenario, synthetic data, a real run driven one iteration at a
time (the one master on Ray, with its learner), and the single-process reference."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

from gcbench.master import SynchronousMaster, decoding_quality
from gcbench.real.run.variant_run import VariantRun
from gcbench.scenario.schema import Scenario
from gcbench.training.batches import PartitionSampler
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


class RealRun:
    """Variant 0 of a scenario with seed 0, on Ray (or ``backend``), driven as the tests need it: ``step(t)`` runs one
    synchronous iteration, ``updates(first, last)`` a block of asynchronous ones; each gives a view of its row
    of the tables (and the gradient the learner stepped with). ``crash`` and ``straggling``: the (iteration or
    draw row, worker) pairs the failure and straggling models draw, replacing the scenario's draws."""

    def __init__(self, sc: Scenario, crash=None, straggling=None, backend: str = "ray") -> None:
        self.run = run = VariantRun(sc, 0, 0, DATA, None, backend=backend)
        for pairs, draws in ((crash, run.draws.crash), (straggling, run.draws.straggling)):
            if pairs is not None:
                draws[:] = False
                for t, w in pairs:
                    draws[t, w] = True
        run.rec.straggling[:] = run.draws.straggling
        self.scenario, self.scheme = sc, run.scheme
        self.master = run._start()
        self.cluster, self.learner, self.rec = run.cluster, run.learner, run.rec
        self.model = self.learner.model
        self.sampler = PartitionSampler(len(DATA.train_labels), self.scheme.k, sc.training.batch_size, 0)
        self.gradients: list[torch.Tensor] = []
        step = self.learner.flat.step
        self.learner.flat.step = lambda gradient: (self.gradients.append(gradient.clone()), step(gradient))[1]

    @property
    def actors(self) -> list:
        return self.cluster.actors

    def step(self, t: int) -> SimpleNamespace:
        assert isinstance(self.master, SynchronousMaster)
        for _ in self.master.steps(t, t + 1):
            pass
        return self._view(t, self.gradients[-1])

    def updates(self, first: int, last: int) -> list[SimpleNamespace]:
        done = len(self.gradients)
        for _ in self.master.steps(first, last):
            pass
        return [self._view(t, self.gradients[done + t - first]) for t in range(first, last)]

    def finish(self) -> None:
        """Late work reports its timings into the tables."""
        if isinstance(self.master, SynchronousMaster):
            self.master.finish(5.0)

    def _view(self, t: int, gradient: torch.Tensor) -> SimpleNamespace:
        rec = self.rec
        decoding_quality(rec, self.scheme, [t])
        used = np.flatnonzero(rec.used[t]).tolist()
        return SimpleNamespace(
            reason=rec.reason[t], exact=bool(rec.exact[t]), residual=float(rec.residual[t]), loss=float(rec.loss[t]),
            start=float(rec.start[t]), end=float(rec.end[t]), staleness=float(rec.staleness[t]), gradient=gradient,
            arrivals={w: float(rec.arrival[t, w] - rec.start[t]) for w in used},
            failed=set(np.flatnonzero(rec.failed[t]).tolist()), straggling=rec.straggling[t].tolist(),
            timings={w: self.worker(t, w) for w in used},
        )  # fmt: skip

    def worker(self, t: int, w: int) -> dict:
        """Worker w's row of iteration t in the workers table."""
        rec = self.rec
        return {"compute_start": float(rec.compute_start[t, w]), "compute_end": float(rec.compute_end[t, w]),
                "injected": float(rec.injected[t, w]), "arrival": float(rec.arrival[t, w])}  # fmt: skip

    def shutdown(self) -> None:
        self.run.close()


def make_run(sc: Scenario, crash=None, straggling=None, backend: str = "ray") -> RealRun:
    return RealRun(sc, crash, straggling, backend)


def current_weights(real: RealRun) -> torch.Tensor:
    return flat_parameters(real.model).clone()


def reference_gradient(master: RealRun, weights: torch.Tensor, t: int) -> torch.Tensor:
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


def child_processes() -> set[int]:
    """The live (not zombie) processes whose parent is this one, from /proc: what no run may leave behind."""
    return children_of(os.getpid())


def children_of(pid: int) -> set[int]:
    """The live (not zombie) processes whose parent is ``pid``, from /proc."""
    children = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it exited meanwhile
        if int(fields[1]) == pid and fields[0] != "Z":
            children.add(int(stat.parent.name))
    return children


def grandchildren_of(pid: int) -> set[int]:
    """The children of ``pid``'s children: a torch run's workers, forked by the zygote its cluster started."""
    return {grandchild for child in children_of(pid) for grandchild in children_of(child)}


def driver(*args: str, **kwargs):
    """``gcbench ARGS`` as a process of its own (in a session of its own), through the console entry point.

    Its SIGINT is Python's own whatever this process inherited: a command started in the background without
    job control (a CI script's ``&``) ignores SIGINT, and Python then installs no KeyboardInterrupt handler."""
    import subprocess
    import sys

    code = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); from gcbench.cli import main; "
    code += "main()"
    return subprocess.Popen([sys.executable, "-c", code, *args], start_new_session=True, **kwargs)


def wait_for(condition, seconds: float) -> bool:
    import time

    deadline = time.time() + seconds
    while not condition() and time.time() < deadline:
        time.sleep(0.1)
    return condition()
