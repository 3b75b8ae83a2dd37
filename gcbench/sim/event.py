"""The event engine: the one master on the SimPy cluster, for every policy.

The master's rules (gcbench/master) are the ones real mode follows; only the
clock is virtual. The vectorised engine (gcbench/sim/synchronous.py) is the fast
path for synchronous policies; tests/test_event_engine.py holds the two equal.
A scenario that trains in the simulator (``training.in_simulator``) runs this
engine with a learner (gcbench/sim/training.py); which engine runs a variant is
gcbench/sim/engines.py's choice.
"""

from __future__ import annotations

import numpy as np

from gcbench.coding import Scheme
from gcbench.master import decoding_quality, master_for
from gcbench.results.recorder import RunRecorder
from gcbench.results.rows import chunks
from gcbench.results.sparse import SparseRecorder
from gcbench.scenario.build import placed
from gcbench.scenario.draw_rows import DrawnRows
from gcbench.scenario.draws import RunDraws, draw_run
from gcbench.scenario.schema import Scenario, Variant
from gcbench.sim.cluster import SimPyCluster
from gcbench.sim.gc_thresholds import young_jobs_collected_young

QUALITY_ELEMENTS = 1 << 20  # worker cells per call of decoding_quality (it reads their rows dense)


def simulate_event(
    scenario: Scenario, variant: Variant, scheme: Scheme, seed: int, cluster_class: type[SimPyCluster] = SimPyCluster
) -> RunRecorder:
    """Run the master on a fresh SimPy cluster fed by the seeded draws; a ``cluster_class`` subclass adds behaviour."""
    scenario = placed(scenario, scheme)  # (topology.placement: by_code, this variant's code's)
    draws = draws_for(scenario, variant, scheme, seed)
    synchronous = variant.policy.synchronous
    cluster = cluster_class(scenario, scheme, draws, link_per_job=synchronous, compressor=variant.compressor)
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
