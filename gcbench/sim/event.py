"""The event engine: the one master on the SimPy cluster, for every policy.

The master's rules (gcbench/master) are the ones real mode follows; only the
clock is virtual. The vectorised engine (gcbench/sim/synchronous.py) is the fast
path for synchronous policies; tests/test_event_engine.py holds the two equal.
A scenario that trains in the simulator (``training.in_simulator``) runs this
engine with a learner (gcbench/sim/training.py).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from gcbench.cluster import Cluster
from gcbench.coding import Scheme
from gcbench.errors import GcbenchError
from gcbench.master import AsynchronousMaster, Learner, SynchronousMaster, decoding_quality
from gcbench.results.messages import sends_several
from gcbench.results.recorder import RunRecorder
from gcbench.results.rows import chunks
from gcbench.results.sparse import SparseRecorder
from gcbench.scenario.build import scheme_for
from gcbench.scenario.checks import VECTORISED_CANNOT_TRAIN
from gcbench.scenario.draw_rows import DrawnRows
from gcbench.scenario.draws import RunDraws, draw_run
from gcbench.scenario.schema import Scenario, Variant
from gcbench.sim.cluster import SimPyCluster
from gcbench.sim.gc_thresholds import young_jobs_collected_young

EngineName = Literal["event", "vectorised"]
QUALITY_ELEMENTS = 1 << 20  # worker cells per call of decoding_quality (it reads their rows dense)


def simulate_event(
    scenario: Scenario, variant: Variant, scheme: Scheme, seed: int, cluster_class: type[SimPyCluster] = SimPyCluster
) -> RunRecorder:
    """Run the master on a fresh SimPy cluster fed by the seeded draws; a ``cluster_class`` subclass adds behaviour."""
    draws = draws_for(scenario, variant, scheme, seed)
    synchronous = variant.policy.synchronous
    cluster = cluster_class(scenario, scheme, draws, link_per_job=synchronous)
    # an asynchronous update uses k results of n: its recorder keeps those cells only (memory follows results)
    recorder = RunRecorder if synchronous else SparseRecorder
    rec = recorder(scenario.iterations, scenario.workers)
    with young_jobs_collected_young():
        master_for(cluster, scenario, variant, scheme, draws, rec).run()
    cluster.shutdown()
    for first, end in chunks(rec.iterations, rec.n, QUALITY_ELEMENTS):  # (dense rows of a chunk at a time)
        decoding_quality(rec, scheme, np.arange(first, end))
    return rec


def draws_for(scenario: Scenario, variant: Variant, scheme: Scheme, seed: int) -> RunDraws | DrawnRows:
    """The run's draws: every row for a synchronous policy (every iteration reads one); for an asynchronous one,
    the rows its jobs read, drawn as they are first read (a worker's j-th job reads row j: about updates x k / n
    rows of the iterations), the same numbers either way."""
    if variant.policy.synchronous:
        return draw_run(scenario, scheme, seed)
    return DrawnRows(scenario, scheme, seed)


def master_for(
    cluster: Cluster,
    scenario: Scenario,
    variant: Variant,
    scheme: Scheme,
    draws: RunDraws | DrawnRows,
    rec: RunRecorder,
    learner: Learner | None = None,
) -> SynchronousMaster | AsynchronousMaster:
    """The variant's master on this cluster, recording into ``rec`` (the draws' straggling and injected delay)."""
    if variant.policy.synchronous:
        rec.straggling[:], rec.injected[:] = draws.straggling, draws.injected
        return SynchronousMaster(cluster, scheme, variant, draws.crash, scenario.stale_work, rec, learner)
    return AsynchronousMaster(
        cluster, variant, draws.crash, rec, learner, straggling=draws.straggling, injected=draws.injected
    )


def engine_for(scenario: Scenario, variant: Variant) -> EngineName:
    """Which engine runs this variant: ``auto`` takes the vectorised fast path where it applies (never when the
    scenario trains: only the event engine computes gradients; never for a pipelined scheme: only the event
    engine's master keeps the workers' cache ages its staleness is; never for a scheme whose workers send several
    messages: only the event engine sends each as it is ready; never when late work shares the link with the next
    iteration's messages: the fast path gives each iteration a link of its own)."""
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


def simulate_with(engine: EngineName, scenario: Scenario, variant: Variant, scheme: Scheme, seed: int) -> RunRecorder:
    """One (variant, seed) on the engine chosen; a scenario that trains in the simulator trains on the event one."""
    if engine == "event" and scenario.training.in_simulator:
        from gcbench.sim.training import simulate_training

        return simulate_training(scenario, variant, scheme, seed)
    from gcbench.sim.synchronous import simulate_synchronous

    return (simulate_event if engine == "event" else simulate_synchronous)(scenario, variant, scheme, seed)
