"""Every run a real session trains declares the one interface (gcbench/real/run/training_run.py), and what a resume or
an interruption says of it comes from what it declares, not from which backend made it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")

from gcbench.real.ddp.ddp_run import DDPRun  # noqa: E402
from gcbench.real.local.local_run import LocalRun  # noqa: E402
from gcbench.real.run.setup import interrupted_sentence  # noqa: E402
from gcbench.real.run.training_run import TrainingRun  # noqa: E402
from gcbench.real.run.variant_run import VariantRun  # noqa: E402


@pytest.mark.parametrize("cls", [VariantRun, DDPRun, LocalRun])
def test_each_run_class_declares_the_interface_whole(cls):
    assert issubclass(cls, TrainingRun) and not cls.__abstractmethods__


def test_the_local_run_says_it_keeps_no_checkpoints_and_names_itself():
    local = LocalRun(SimpleNamespace(iterations=10), 3, None)
    assert not local.keeps_checkpoints and local.describe() == "local, seed 3"
    assert local.continues() == "from iteration 0 (it keeps no checkpoints)"
    assert interrupted_sentence([local], Path("out"), "SIGINT", 50) == (
        "interrupted (SIGINT); the local backend keeps no checkpoints: gcbench run --resume out runs it again from "
        "iteration 0."
    )


def test_an_interruption_names_each_runs_checkpoint():
    class Run(TrainingRun):
        finished = False
        run_block = frames = close = None  # (only what the sentences read)

        def __init__(self, index, label, seed, checkpointed):
            self.index, self.label, self.seed, self.checkpointed, self.resumed_at = index, label, seed, checkpointed, 0

    runs = [Run(0, "uncoded", 0, 100), Run(1, "FR s=1", 0, 0)]
    assert interrupted_sentence(runs, Path("out"), "SIGTERM", 100) == (
        "interrupted (SIGTERM); checkpoints kept: variant 0 (uncoded), seed 0 at iteration 100; variant 1 (FR s=1), "
        "seed 0: none yet; continue with: gcbench run --resume out"
    )
    assert runs[1].continues() == "from iteration 0 (it had no checkpoint)"
