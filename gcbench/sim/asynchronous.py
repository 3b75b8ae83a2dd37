"""Asynchronous policies in the simulator: the one master (gcbench/master/asynchronous.py) on the SimPy cluster.
tests/calendar_reference.py is an independent heap-calendar implementation the tests hold it equal to."""

from __future__ import annotations

from gcbench.coding import Scheme
from gcbench.results.recorder import RunRecorder
from gcbench.scenario.schema import Scenario, Variant
from gcbench.sim.event import simulate_event


def simulate_asynchronous(scenario: Scenario, variant: Variant, scheme: Scheme, seed: int) -> RunRecorder:
    """Simulate an asynchronous policy; each recorded iteration is one model update."""
    return simulate_event(scenario, variant, scheme, seed)
