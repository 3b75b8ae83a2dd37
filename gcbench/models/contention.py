"""Contention: workers that share a machine's cores compute more slowly the more of them compute at once.

With ``compute.cores`` C, the jobs of one iteration (one draw row of a synchronous run) share C cores as a
processor-sharing queue does, each from its start (its dispatch): while a of them compute, each progresses at
min(1, C / a) of its own speed, and a job leaves the queue when its compute is done (the injected delay that
follows, a sleep, takes no core). Started together, with works w(1) <= ... <= w(n) sorted, the k-th to finish
does so at

    t(k) = t(k - 1) + (w(k) - w(k - 1)) * max(1, (n - k + 1) / C),

which ``processor_sharing`` computes for every row at once (staggered starts are stepped from event to event). A
job the master abandons stops computing in a real run; here it computes on, which changes no used result's time
under ``stale_work: abandon`` (a job that finishes after the stop is not used, and those that finish before it
shared the cores with it until then either way). ``cpu_work`` is the inverse the calibration needs: the
core-seconds a job computed, from the compute intervals of its iteration's jobs (docs/calibration.md,
"Decompose").
"""

from __future__ import annotations

import numpy as np


def processor_sharing(work: np.ndarray, cores: int, starts: np.ndarray | None = None) -> np.ndarray:
    """Seconds each job of each row (rows x jobs of ``work``, seconds of compute alone) takes, from its start, when
    a row's jobs share ``cores`` cores; ``starts`` (rows x jobs, seconds from the row's beginning; None: all at 0)
    staggers them, as a dispatch does."""
    work = np.asarray(work, dtype=float)
    n = work.shape[-1]
    if n <= cores:
        return work.copy()
    if starts is None or not np.any(starts):
        order = np.argsort(work, axis=-1, kind="stable")
        ordered = np.take_along_axis(work, order, axis=-1)
        steps = np.diff(ordered, axis=-1, prepend=0.0)
        slowdown = np.maximum(1.0, np.arange(n, 0, -1) / cores)  # while n - k + 1 compute, each at cores / that
        finished = np.cumsum(steps * slowdown, axis=-1)
        out = np.empty_like(finished)
        np.put_along_axis(out, order, finished, axis=-1)
        return out
    return _staggered(np.atleast_2d(work), cores, np.atleast_2d(np.asarray(starts, dtype=float))).reshape(work.shape)


def _staggered(work: np.ndarray, cores: int, starts: np.ndarray) -> np.ndarray:
    """``processor_sharing`` with staggered starts: every row stepped from event to event (a start or a finish;
    two per job, a job within 1e-9 of its work counted done), all rows at once."""
    rows = np.arange(len(work))
    remaining, now = work.copy(), starts.min(axis=1)
    started, done = starts <= now[:, None], np.zeros(work.shape, dtype=bool)
    out = np.full(work.shape, np.nan)
    for _ in range(4 * work.shape[1]):  # (two events a job; a near tie may take a step of its own)
        active = started & ~done
        if done.all():
            break
        computing = active.sum(axis=1)
        rate = np.minimum(1.0, cores / np.maximum(computing, 1))
        left = np.where(active, remaining, np.inf)
        first = left.argmin(axis=1)
        to_finish = left[rows, first] / rate
        to_start = np.where(started, np.inf, starts).min(axis=1) - now
        step = np.minimum(to_finish, to_start)
        step = np.where(np.isfinite(step), step, 0.0)
        remaining -= np.where(active, (rate * step)[:, None], 0.0)
        now = now + step
        finishes = to_finish <= to_start
        remaining[rows[finishes], first[finishes]] = 0.0  # (exactly: rounding leaves no sliver)
        ended = active & (remaining <= 1e-9 * work)
        out[ended] = (now[:, None] - starts)[ended]
        done |= ended
        started |= starts <= now[:, None]
    return out


def cpu_work(start: np.ndarray, end: np.ndarray, cores: int) -> np.ndarray:
    """Core-seconds each job computed over its compute interval [start, end) when every job listed shares
    ``cores`` cores: the integral of min(1, cores / computing) over the interval, with computing counted from all
    the intervals (jobs whose times are not finite take no part)."""
    start, end = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    known = np.isfinite(start) & np.isfinite(end) & (end > start)
    moments = np.concatenate([start[known], end[known]])
    changes = np.concatenate([np.ones(known.sum()), -np.ones(known.sum())])
    order = np.argsort(moments, kind="stable")
    moments, computing = moments[order], np.cumsum(changes[order])
    # computing[i]: jobs computing on [moments[i], moments[i + 1]); each at rate min(1, cores / computing)
    rates = np.minimum(1.0, cores / np.maximum(computing[:-1], 1.0))
    core_seconds = np.concatenate([[0.0], np.cumsum(np.diff(moments) * rates)])  # up to each moment
    out = np.full(len(start), np.nan)
    out[known] = np.interp(end[known], moments, core_seconds) - np.interp(start[known], moments, core_seconds)
    return out
