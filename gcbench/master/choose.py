"""The one place a variant's master is chosen, for the simulator's event engine and for real runs alike: the
synchronous master for a synchronous policy, the asynchronous one otherwise, each recording the draws' straggling
and injected delay beside what it measures."""

from __future__ import annotations

from gcbench.cluster import Cluster
from gcbench.coding import Scheme
from gcbench.master.asynchronous import AsynchronousMaster
from gcbench.master.learner import Learner
from gcbench.master.outcome import scheduled_for_good
from gcbench.master.synchronous import SynchronousMaster
from gcbench.results.sparse import SparseRecorder
from gcbench.scenario.draw_rows import DrawnRows


def master_for(cluster: Cluster, scenario, variant, scheme: Scheme, draws, rec, learner: Learner | None = None,
               first: int = 0) -> SynchronousMaster | AsynchronousMaster:  # fmt: skip
    """The variant's master on this cluster, recording into ``rec``.

    A recorder with a row per iteration gets the draws' straggling and injected delay from iteration ``first`` on
    (a resumed run's earlier rows are its checkpoint's); the masters then write the injected delay each job
    measured over the planned one. Where an asynchronous policy's draws are drawn as its jobs read them, or its
    recorder keeps the cells of the results it uses only (the simulator's), the asynchronous master fills them."""
    every_row = variant.policy.synchronous or not isinstance(draws, DrawnRows)  # (rows drawn as jobs read them)
    if every_row and not isinstance(rec, SparseRecorder):
        rec.straggling[first:], rec.injected[first:] = draws.straggling[first:], draws.injected[first:]
    if variant.policy.synchronous:
        master = SynchronousMaster(cluster, scheme, variant, draws.crash, scenario.stale_work, rec, learner)
        if scenario.topology is not None:  # (a by_code placement is resolved before: the variant's own map)
            master.node_of = scenario.topology.node_of(scenario.workers)
        master.scheduled_dead = scheduled_for_good(scenario)
        return master
    return AsynchronousMaster(
        cluster, variant, draws.crash, rec, learner, straggling=draws.straggling, injected=draws.injected
    )
