"""One verdict per variant of a calibrated leg (docs/calibration.md, "Which number to trust"): is the prediction
within the measurement's 95% CI, with the error, that CI, and the leg the number comes from.

- Where the run injected its stragglers (a straggling or failure model, or an overhead), the paired simulation
  replays the very draws the run made, and only the fitted machine differs: its error is the machine model's.
- Where nothing was injected, the run's stragglers were the cluster's own and the simulation cannot replay them:
  the long run (other draws, many iterations) is the prediction, and the measurement's own sampling error is
  what it is judged against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from gcbench.scenario.schema import Scenario


def injected_models(scenario: Scenario) -> list[str]:
    """What a run's scenario injected on top of the machine: 'straggling (independent)', 'failures (crash)',
    'compute.overhead'."""
    found = [f"{name} ({model.model})" for name, model in (("straggling", scenario.straggling),
             ("failures", scenario.failures)) if model.model != "none"]  # fmt: skip
    return found + (["compute.overhead"] if scenario.compute.overhead is not None else [])


@dataclass(frozen=True)
class Verdict:
    variant: str
    leg: str  # "paired" or "long run"
    predicted: float
    measured: float
    ci_low: float
    ci_high: float

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1.0

    @property
    def inside(self) -> bool | None:
        """Within the measurement's 95% CI (None: the measurement has none)."""
        if math.isnan(self.ci_low):
            return None
        return self.ci_low <= self.predicted <= self.ci_high

    def sentence(self) -> str:
        numbers = f"predicted {self.predicted:.4g} s, measured {self.measured:.4g} s"
        if self.inside is None:
            head = "cannot be judged: the measurement has no 95% CI (one seed and fewer than 50 iterations)"
        else:
            half = (self.ci_high - self.ci_low) / 2 / self.measured
            where = "within" if self.inside else "outside"
            head = f"{where} the measurement's 95% CI"
            numbers += f" (95% CI {self.ci_low:.4g} to {self.ci_high:.4g}, ±{half:.1%})"
        source = (
            "the paired simulation (the run's seeds and injected draws): the machine model's error"
            if self.leg == "paired"
            else "the long run (other draws): the prediction for a cluster whose stragglers are its own"
        )
        return f"{self.variant}: {head}; {numbers}, error {self.error:+.1%}, from {source}."


def verdicts(table: pd.DataFrame, injected: bool) -> list[Verdict]:
    """A leg's table (gcbench/twin/evaluate.py's ``compare``) judged per variant: the paired column where the run
    injected its stragglers, else the long run."""
    column, leg = ("simulated_mean", "paired") if injected else ("long_run_mean", "long run")
    return [
        Verdict(
            row["variant"],
            leg,
            float(row[column]),
            float(row["measured_mean"]),
            float(row["ci_low"]),
            float(row["ci_high"]),
        )  # fmt: skip
        for _, row in table.iterrows()
    ]
