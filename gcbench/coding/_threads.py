"""One BLAS thread for the coding layer's linear algebra and vector sums.

The coding layer's BLAS work is small (weights from an r x mk system, conditioning checks) or memory-bound
(a decode reads every message once): a second BLAS thread saves little and, on a machine whose cores are
busy with other processes (the simulator's workers, a training job), it waits to be scheduled: OpenBLAS's
default two threads made CR's conditioning check at n = 100, s = 2 take 273 s of wall time against 4 s on
one thread, and a 10-message decode in simulated training 13 ms, each BLAS call waiting for the second
thread (docs/coding.md, docs/architecture.md).

``one_blas_thread()`` holds every BLAS the process has loaded (numpy's and scipy's OpenBLAS are two
libraries) to one thread inside the call and restores each one's count after. It uses threadpoolctl,
which the [real] extra installs; without it BLAS keeps its own thread count (set OPENBLAS_NUM_THREADS=1,
or install threadpoolctl, to get the one-thread behaviour).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@functools.cache
def _blas_libraries(scipy_loaded: bool) -> tuple:
    """threadpoolctl's controllers of the loaded BLAS libraries (empty without threadpoolctl).

    Finding the libraries costs 1.6 ms, so it is done once; scipy.linalg loads its own OpenBLAS when first
    imported (the decode's axpy imports it), so the search is redone once after that import.
    """
    try:
        from threadpoolctl import ThreadpoolController  # optional: the [real] extra installs it
    except ImportError:
        return ()
    return tuple(ThreadpoolController().select(user_api="blas").lib_controllers)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Every loaded BLAS on one thread inside the block; each library's own count restored after."""
    libraries = _blas_libraries("scipy.linalg" in sys.modules)
    previous = [library.get_num_threads() for library in libraries]
    changed = [library for library, count in zip(libraries, previous, strict=True) if count != 1]
    for library in changed:
        library.set_num_threads(1)
    try:
        yield
    finally:
        for library, count in zip(libraries, previous, strict=True):
            if library in changed:
                library.set_num_threads(count)


def on_one_blas_thread(function: F) -> F:
    """The function, run inside ``one_blas_thread()``."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_blas_thread():
            return function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
