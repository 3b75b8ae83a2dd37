"""Which engine runs a variant, and running it: the event engine (event.py, training in it with training.py
when the scenario asks) or the vectorised fast path (synchronous.py)."""

from __future__ import annotations

from typing import Literal

from gcbench.coding import Scheme
from gcbench.errors import GcbenchError
from gcbench.models.wire import Wire
from gcbench.results.messages import sends_several
from gcbench.results.recorder import RunRecorder
from gcbench.scenario.build import placed, scheme_for
from gcbench.scenario.checks import VECTORISED_CANNOT_TRAIN
from gcbench.scenario.schema import Scenario, Variant
from gcbench.sim.event import simulate_event
from gcbench.sim.synchronous import simulate_synchronous

EngineName = Literal["event", "vectorised"]


def engine_for(scenario: Scenario, variant: Variant) -> EngineName:
    """Which engine runs this variant: ``auto`` takes the vectorised fast path where it applies (never when the
    scenario trains: only the event engine computes gradients; nor where ``event_only`` says why not); asking
    for the fast path where it does not apply is refused with that reason."""
    if scenario.engine == "event":
        return "event"
    if scenario.training.in_simulator:
        if scenario.engine == "vectorised":
            raise GcbenchError(f"{VECTORISED_CANNOT_TRAIN}.")
        return "event"
    why = event_only(scenario, variant)
    if why is None:
        return "vectorised"
    if scenario.engine == "vectorised":
        raise GcbenchError(f"engine: vectorised {why}.")
    return "event"


AUTO = "use engine: auto or event"


def event_only(scenario: Scenario, variant: Variant) -> str | None:
    """Why only the event engine runs this variant, as the rest of a sentence that begins "engine: vectorised"
    (None where the fast path applies): a pipelined scheme (only the event engine's master keeps the workers'
    cache ages its staleness is), workers that send several messages (only the event engine sends each as it is
    ready), an asynchronous policy, late work that shares the link with the next iteration's messages (the fast
    path gives each iteration a link of its own), a recovered worker's late jobs waiting for the master's time
    between iterations. A sequential scheme runs on both, the fast path stepping one round at a time."""
    scheme, label, policy = scheme_for(scenario, variant), variant.display_label(), variant.policy
    scenario = placed(scenario, scheme)  # (topology.placement: by_code, this variant's code's)
    if scheme.pipelined:
        return (
            f"keeps no worker caches, and variant '{label}' uses {variant.scheme}, whose staleness is the age of the "
            f"cached partition gradients each decode uses; {AUTO}"
        )
    if sends_several(scheme) and not scheme.streams_messages:
        return (
            f"takes one message per worker a round, and the workers of variant '{label}' send "
            f"{scheme.messages_per_worker} each ({variant.scheme}'s mini-tasks); {AUTO}"
        )
    if sends_several(scheme):
        return (
            f"sends each worker's messages together, and variant '{label}''s workers send several messages each, "
            f"one as each is ready; {AUTO}"
        )
    if not policy.synchronous:
        return f"covers synchronous policies only, and variant '{label}' uses {policy.name}; {AUTO}"
    if late_work_shares_the_link(scenario):
        shared = "network.shared_link" if scenario.network.shared_link else _fair_links(scenario)
        if scenario.stale_work == "finish":
            return (
                f"gives each iteration's messages links of their own, and with {shared} and stale_work: "
                f"finish late work shares the links with the next iteration's; {AUTO}, or stale_work: abandon"
            )
        return (
            f"gives each iteration's messages links of their own, and with {shared} and "
            f"network.abandoned_messages: finish an abandoned message shares the links with the next "
            f"iteration's; {AUTO}, or network.abandoned_messages: drop"
        )
    if weights_wait_for_restarts(scenario):
        return (
            "sends every iteration's weights as it starts, and with failures and the weights taking time "
            f"(network.master.egress or a downlink) a recovered worker's copy is sent as it is back; {AUTO}"
        )
    if restarts_wait_for_the_master(scenario):
        return (
            "sends a recovered worker's unfinished jobs as it is back, and with master.between_iterations, "
            f"stale_work: finish and failures the master sends them only once its time between iterations is "
            f"over; {AUTO}"
        )
    return None


def late_work_shares_the_link(scenario: Scenario) -> bool:
    """Shared links, and stale work that finishes or abandoned messages that do: a synchronous run's links carry
    an iteration's late messages and the next iteration's (gcbench/sim/cluster.py). Shared: the FIFO link when
    it takes time, or the fairly shared links (gcbench/models/wire.py: a topology's, the master's NIC, the
    weights' downlinks)."""
    network = scenario.network
    fifo = network.shared_link and network.bandwidth is not None
    fair = Wire.of(network, scenario.topology, scenario.workers) is not None
    late = scenario.stale_work == "finish" or network.abandoned_messages == "finish"
    return (fifo or fair) and late


def _fair_links(scenario: Scenario) -> str:
    if scenario.topology is not None:
        return "a topology's links"
    if scenario.network.master.ingress is not None:
        return "network.master.ingress"
    return "the weights' links (network.master.egress or network.downlink)"


def weights_wait_for_restarts(scenario: Scenario) -> bool:
    """Failures, and weights that take time to send: a job redone after a crash gets its copy as its worker is
    back, sharing the links with whatever is still in flight then (the event engine's cluster)."""
    wire = Wire.of(scenario.network, scenario.topology, scenario.workers)
    return scenario.failures.model != "none" and wire is not None and wire.broadcasts


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
