"""The scenario file: one YAML document drives `gcbench simulate` and `gcbench run --real`.

Every section is a strict config (unknown keys are errors) checked by itself (fields.py), and the whole is
checked across its fields (checks.py). See docs/scenarios.md.
"""

from __future__ import annotations

from pydantic import model_validator

from gcbench.scenario.checks import cross_field_problems
from gcbench.scenario.fields import DTYPE_BYTES, Compute, Gradient, ScenarioFields, Seed, Training, Variant

__all__ = ["DTYPE_BYTES", "Compute", "Gradient", "Scenario", "Seed", "Training", "Variant"]


class Scenario(ScenarioFields):
    """A whole experiment: the cluster, its models, the variants to compare, and sweeps."""

    @model_validator(mode="after")
    def _cross_checks(self) -> Scenario:
        problems = cross_field_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self
