"""Which engine runs a variant, and running it: the event engine (event.py, training in it with training.py
when the scenario asks) or the vectorised fast path (synchronous.py)."""

from __future__ import annotations

from typing import Literal

from gcbench.coding import Scheme
from gcbench.errors import GcbenchError
from gcbench.results.messages import sends_several
from gcbench.results.recorder import RunRecorder
from gcbench.scenario.build import scheme_for
from gcbench.scenario.checks import VECTORISED_CANNOT_TRAIN
from gcbench.scenario.schema import Scenario, Variant
from gcbench.sim.event import simulate_event
from gcbench.sim.synchronous import simulate_synchronous

EngineName = Literal["event", "vectorised"]


def engine_for(scenario: Scenario, variant: Variant) -> EngineName:
    """Which engine runs this variant: ``auto`` takes the vectorised fast path where it applies (never when the
    scenario trains: only the event engine computes gradients; never for a pipelined scheme: only the event
    engine's master keeps the workers' cache ages its staleness is; never for a sequential scheme, whose rounds depend
    on the rounds before them; never for a scheme whose workers send several
    messages: only the event engine sends each as it is ready; never when late work shares the link with the next
    iteration's messages: the fast path gives each iteration a link of its own; never when a recovered worker's
    late jobs wait for the master's time between iterations)."""
    if scenario.engine == "event":
        return "event"
    if scenario.training.in_simulator:
        if scenario.engine == "vectorised":
            raise GcbenchError(f"{VECTORISED_CANNOT_TRAIN}.")
        return "event"
    if scheme_for(scenario, variant).pipelined:
        if scenario.engine == "vectorised":
            raise GcbenchError(
                f"engine: vectorised keeps no worker caches, and variant '{variant.display_label()}' uses "
                f"{variant.scheme}, whose staleness is the age of the cached partition gradients each decode "
                "uses; use engine: auto or event."
            )
        return "event"
    if scheme_for(scenario, variant).sequential:
        if scenario.engine == "vectorised":
            raise GcbenchError(
                f"engine: vectorised decides each iteration by itself, and variant '{variant.display_label()}' uses "
                f"{variant.scheme}, whose rounds depend on the rounds before them; use engine: auto or event."
            )
        return "event"
    if sends_several(scheme_for(scenario, variant)):
        if scenario.engine == "vectorised":
            raise GcbenchError(
                f"engine: vectorised sends each worker's messages together, and variant '{variant.display_label()}'"
                "'s workers send several messages each, one as each is ready; use engine: auto or event."
            )
        return "event"
    if variant.policy.synchronous and late_work_shares_the_link(scenario):
        if scenario.engine == "vectorised":
            raise GcbenchError(
                "engine: vectorised gives each iteration's messages a link of their own, and with "
                "network.shared_link and stale_work: finish late work shares the link with the next iteration's; "
                "use engine: auto or event, or stale_work: abandon."
            )
        return "event"
    if variant.policy.synchronous and restarts_wait_for_the_master(scenario):
        if scenario.engine == "vectorised":
            raise GcbenchError(
                "engine: vectorised sends a recovered worker's unfinished jobs as it is back, and with "
                "master.between_iterations, stale_work: finish and failures the master sends them only once its "
                "time between iterations is over; use engine: auto or event."
            )
        return "event"
    if variant.policy.synchronous:
        return "vectorised"
    if scenario.engine == "vectorised":
        raise GcbenchError(
            f"engine: vectorised covers synchronous policies only, and variant '{variant.display_label()}' uses "
            f"{variant.policy.name}; use engine: auto or event."
        )
    return "event"


def late_work_shares_the_link(scenario: Scenario) -> bool:
    """A shared link that takes time, and stale work that finishes: a synchronous run's one link carries an
    iteration's late messages and the next iteration's (gcbench/sim/cluster.py)."""
    network = scenario.network
    return network.shared_link and network.bandwidth is not None and scenario.stale_work == "finish"


def restarts_wait_for_the_master(scenario: Scenario) -> bool:
    """Stale work that finishes, failures, and modelled master time: a worker back from a crash while the master
    is busy between iterations gets its pending jobs once the master is done (the event engine's master)."""
    failures = scenario.failures.model != "none"
    return scenario.master.between_iterations is not None and scenario.stale_work == "finish" and failures


def simulate_with(engine: EngineName, scenario: Scenario, variant: Variant, scheme: Scheme, seed: int) -> RunRecorder:
    """One (variant, seed) on the engine chosen; a scenario that trains in the simulator trains on the event one."""
    if engine == "event" and scenario.training.in_simulator:
        from gcbench.sim.training import simulate_training

        return simulate_training(scenario, variant, scheme, seed)
    return (simulate_event if engine == "event" else simulate_synchronous)(scenario, variant, scheme, seed)
