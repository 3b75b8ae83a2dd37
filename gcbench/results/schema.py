"""Column names and meanings of the results tables (docs/results.md says the same, by hand: keep them in step).

Both modes write these columns; sweep parameters add one column per swept path,
and a run that trains (real, or simulated with training.in_simulator) adds loss, accuracy and compression_error
after them.
"""

import numpy as np

from gcbench import stops

# The policy column of a variant whose scenario names no policy (gcbench.policies.Decodable; a test holds them
# equal): kept here so plotting, which reads results files only, can tell it without importing the policies.
DEFAULT_POLICY = "decodable"

ITERATION_COLUMNS = {
    "variant": "label of the scheme/policy variant, as the summary prints it",
    "scheme": "registered scheme name",
    "s": "stragglers the scheme tolerates",
    "m": "slices per gradient (1 for most schemes)",
    "policy": "aggregation policy name",
    "point": "index of the sweep point (0 without a sweep)",
    "seed": "replication seed",
    "iteration": "iteration index, from 0",
    "start": "seconds since the run started when the iteration started",
    "end": "seconds since the run started when the master stopped waiting",
    "duration": "the iteration's length in seconds (end - start, without the rounding of that subtraction)",
    "messages_used": "messages the master used",
    "bytes_received": (
        "bytes of those messages as sent: messages_used times one message's size, the compressor's payload where "
        "the variant compresses (NaN where no master receives: DDP's all-reduce, the local backend)"
    ),
    "stop": f"why it stopped: {', '.join(stops.SYNCHRONOUS)} (synchronous policies) or "
    f"{', '.join(stops.ASYNCHRONOUS)} (asynchronous ones)",
    "exact": "True when the decode was exact",
    "residual": "Frobenius norm of W R - T for approximate decodes (0 when exact)",
    "staleness": (
        "mean model versions by which the used results were stale (0 for synchronous policies); for a pipelined "
        "scheme that trains, the age in steps of the oldest cached partition gradient the decode used; for a "
        "sequential scheme, the rounds between the decoded job's dispatch and this round (NaN: no job decoded)"
    ),
}

# iterations columns a results directory written by an earlier gcbench lacks: plotting reads them as NaN
LATER_ITERATION_COLUMNS = ("bytes_received",)

# what a run that trains adds to the iterations table, after the columns above (docs/results.md)
TRAINED_COLUMNS = {
    "loss": "the mini-batch loss the used results computed",
    "accuracy": "test accuracy where the run evaluated, else NaN",
    "compression_error": "||decoded - exact decoded|| / ||exact decoded|| where messages were compressed, else NaN",
}

# what a scenario with a topology adds, both modes (docs/results.md): the workers table's ``node``, and the
# iterations table's ``nodes_lost`` and ``lost_nodes``
TOPOLOGY_COLUMNS = {
    "node": "the node the worker ran on (topology.placement; by_code: the variant's own)",
    "nodes_lost": "how many nodes every worker of which crashed or was down this iteration",
    "lost_nodes": "which nodes those were, their indices separated by commas (empty: none)",
}

WORKER_COLUMNS = {
    "variant": "as in the iterations table",
    "point": "as in the iterations table",
    "seed": "as in the iterations table",
    "iteration": "as in the iterations table",
    "worker": "worker index",
    "partitions": "partitions the worker computed (its load)",
    "compute_start": "seconds since the run started when it started computing",
    "compute_end": "when its message was ready (NaN: never, it crashed for good)",
    "injected_delay": "seconds added to its compute time by the models: straggling plus compute.overhead",
    "arrival": "when its message reached the master (NaN: never)",
    "used": "True when the master used its message",
    "straggling": "True when the straggling model slowed it this iteration",
    "failed": "True when it crashed or was down this iteration",
}

# Reproducibility, per column (docs/results.md, "Reproducible"). Every column not named here is exact by
# construction: strings, integers and flags, and times, which come from the run's seeded draws through elementwise
# numpy arithmetic in a fixed order (no BLAS), so they are the same bits on any machine (with the same package
# versions); whether a set decodes, and exactly, is decided by thresholds far above rounding. The columns named here are
# computed by floating-point kernels that differ between machines (numpy's OpenBLAS picks one by CPU; torch has its
# own): the same bits on one machine and kernel, not across. gcbench.testing.tables compares tables by this
# declaration, and states the tolerances across kernels.
KERNEL_DEPENDENT_COLUMNS = {
    "residual": "the decoder's weights: a LAPACK SVD and BLAS products of the coefficient rows",
    "loss": "torch's kernels, on a model trained with decoded gradients (training runs only)",
    "accuracy": "as loss; and so the summary's final_loss, final_accuracy and time_to_target",
    "compression_error": "as loss: the decoded gradient and the exact one, computed by BLAS and torch",
}

MESSAGE_COLUMNS = {
    "variant": "as in the iterations table",
    "point": "as in the iterations table",
    "seed": "as in the iterations table",
    "iteration": "as in the iterations table",
    "worker": "worker index",
    "message": "the message's index among its worker's messages, from 0",
    "message_id": "the message's global id in the scheme (what the decoder and the policy see)",
    "ready": "when the partitions it uses were computed and it was sent",
    "arrival": "when it reached the master",
    "used": "True when the master used it",
}


def nodes_lost(failed: np.ndarray, node_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per iteration (a row of ``failed``: iterations x workers), how many nodes every worker of which failed, and
    which (``lost_nodes``: "1", "0,2"; "" for none), each distinct set of lost nodes written once."""
    nodes = np.unique(node_of)
    down = np.stack([failed[:, node_of == k].all(axis=1) for k in nodes], axis=1)  # iterations x nodes
    count = down.sum(axis=1).astype(np.int64)
    which = np.full(len(down), "", dtype=object)
    lost = count > 0
    if lost.any():
        sets, index = np.unique(down[lost], axis=0, return_inverse=True)
        named = np.array([",".join(str(k) for k in nodes[row]) for row in sets], dtype=object)
        which[lost] = named[index.ravel()]
    return count, which
