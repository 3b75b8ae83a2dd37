"""`gcbench calibrate`'s workflow, in one call: read the runs, fit the cluster to them (gcbench/twin/calibrate.py)
and judge the fit on each leg (docs/calibration.md, "Judge"): the replay of each calibrating run, the calibrated
scenario against each (fitted) and against each run to predict (predicted), and, asked for, the time to an
accuracy. The command prints what this returns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gcbench.errors import GcbenchError
from gcbench.twin.calibrate import Calibration, calibrate
from gcbench.twin.evaluate import check_evaluated, check_shape, compare, replay, time_to_accuracy
from gcbench.twin.measured import MeasuredRun, read_measured

JUDGED = ("fitted", "predicted")  # the legs a verdict per variant is given on (gcbench/twin/verdict.py)


@dataclass(frozen=True)
class Leg:
    """One leg of the judgement: its kind (replay, fitted, predicted, time to accuracy), the run, the table."""

    kind: str
    run: MeasuredRun
    table: pd.DataFrame

    @property
    def title(self) -> str:
        return f"{self.kind}: {self.run.path}"


@dataclass(frozen=True)
class Calibrated:
    calibration: Calibration
    legs: list[Leg]


def calibrate_runs(runs: list[Path], variants: str | None = None, predict: list[Path] | None = None,
                   cores: int | None = None, train: bool = False,
                   target_accuracy: float | None = None) -> Calibrated:  # fmt: skip
    """Calibrate to ``runs`` (only ``variants``' iterations, comma-separated labels, where given) and judge the
    result; every refusal (a run that cannot be read, a variant not in the runs, a prediction of another model, a
    run never evaluated where ``train``) comes before anything is fitted or written."""
    if target_accuracy is not None and not 0 < target_accuracy <= 1:
        raise GcbenchError(f"--target-accuracy must be in (0, 1], got {target_accuracy}.")
    measured = [read_measured(path) for path in runs]
    chosen = chosen_variants(variants, measured)
    targets = [read_measured(path) for path in predict or []]
    calibration = calibrate(measured, chosen, cores)
    for run in targets:
        check_shape(calibration.scenario, run)
    if train:
        for run in [*measured, *targets]:
            check_evaluated(run)
    scenario = calibration.scenario
    legs = [Leg("replay", run, replay(run)) for run in measured]
    legs += [Leg("fitted", run, compare(scenario, run)) for run in measured]
    legs += [Leg("predicted", run, compare(scenario, run)) for run in targets]
    if train:
        legs += [Leg("time to accuracy", run, time_to_accuracy(scenario, run, target_accuracy))
                 for run in [*measured, *targets]]  # fmt: skip
    return Calibrated(calibration, legs)


def chosen_variants(text: str | None, runs: list[MeasuredRun]) -> list[str] | None:
    """``--variants A,B``: labels of the runs' variants (None: every one)."""
    if text is None:
        return None
    chosen = [label.strip() for label in text.split(",") if label.strip()]
    known = {label for run in runs for label in run.variants}
    unknown = [label for label in chosen if label not in known]
    if unknown or not chosen:
        given = ", ".join(unknown) or "none given"
        raise GcbenchError(f"--variants: {given} not among the runs' variants ({', '.join(sorted(known))}).")
    return chosen
