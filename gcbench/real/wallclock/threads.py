"""How many threads a real run's processes compute on: torch's and every BLAS library's alike.

A worker computes on one thread (its process is one of several sharing the machine's cores); the master decodes
and steps on the cores its local workers leave free, and evaluates on all of them. torch's thread count is not
enough: numpy's and scipy's OpenBLAS keep their own, one a core by default, and an OpenBLAS thread spins for a
while after each call it splits. A worker whose compressor takes a norm (QSGD) then had a spinning second thread
after every message, taking the core another worker was computing on: on 4 workers and 2 cores each worker's
gradients took 72-88 ms a job under QSGD against 31-45 ms uncompressed, while the gradient's own thread CPU time
was the same (25 ms); with BLAS held to one thread they took 42 ms, and QSGD's compress 2.7 ms instead of 14.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from threadpoolctl import threadpool_limits

from gcbench.cluster import cluster_class

# the variables BLAS libraries read when they load: a library a process loads later starts on the same count
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

EVALUATION_THREADS = torch.get_num_threads()  # the evaluation uses every core; the master's step fewer


def limit_process_threads(count: int) -> None:
    """This process computes on ``count`` threads from now on: torch's, every BLAS it has loaded, and any it
    loads later (through the variables they read as they load)."""
    torch.set_num_threads(count)
    for variable in BLAS_THREAD_VARIABLES:
        os.environ[variable] = str(count)
    threadpool_limits(limits=count, user_api="blas")


@contextmanager
def compute_threads(count: int) -> Iterator[None]:
    """torch and every loaded BLAS on ``count`` threads inside the block; their counts restored after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        with threadpool_limits(limits=count, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(previous)


def master_threads(workers: int, backend: str = "ray") -> int:
    """Threads for the master's decode and step: the cores its local workers leave free.

    On a single-node cluster (the torch backend's always is) the workers share this machine's cores; spare
    threads in the master would only spin against them.
    """
    if not cluster_class(backend).single_node():
        return torch.get_num_threads()
    return max(1, (os.cpu_count() or 1) - workers)
