"""Scenarios: the YAML schema, its validation, sweep expansion, and the run's seeded draws."""

from gcbench.scenario.loading import ScenarioError, SweepPoint, load_scenario
from gcbench.scenario.schema import Compute, Gradient, Scenario, Variant

__all__ = ["Compute", "Gradient", "Scenario", "ScenarioError", "SweepPoint", "Variant", "load_scenario"]
