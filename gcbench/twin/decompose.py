"""A real run's iterations decomposed into what the simulator models (docs/calibration.md, "Decompose"):

- dispatch: a job's iteration start -> its ``compute_start`` (jobs sent as their iteration started), of the
  iterations of a real run that began with none of the previous iteration's abandoned work still going (a job
  still computing, a message still on the wire: TCP sends the bytes it was given, and the next jobs waited for
  it, which the simulator's abandoned work, stopping at once, never does);
- work: ``compute_end - compute_start - injected_delay``, the compute the worker measured, by the job's load;
  a job the master's stop cut short (still computing at the stop: it had neither sent its message by then nor
  ended its compute, nor slept any injected delay, which follows the compute) only says its work was at least
  that: it is right-censored there, never read as a finished job's time (the simulator's tables give such a job
  its whole time: nothing is censored there);
- upload: ``compute_end -> arrival`` of the jobs whose message reached the master;
- between: one iteration's ``end`` -> the next one's ``start``, the master's own time.

Whatever the parts cannot explain is counted, never silently absorbed: rows whose times contradict each other
(a job that started before its iteration, a negative part).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from gcbench.models.contention import cpu_work
from gcbench.twin.measured import MeasuredRun

TOLERANCE = 1e-6  # seconds: clock readings this far apart are the same instant


@dataclass
class Parts:
    """The measured parts of one or more variants' iterations, pooled."""

    dispatch: np.ndarray
    work: np.ndarray  # seconds of measured compute per job
    loads: np.ndarray  # each job's load in uncoded partitions (its partitions times its scheme's partition_share)
    censored: np.ndarray  # bool per job: cut short by the stop (work is a lower bound)
    workers: np.ndarray  # worker of each job
    groups: np.ndarray  # which iteration of which run each job belongs to (an integer per (variant, point, seed,
    # iteration)): the jobs that shared a moment of the machine
    upload: np.ndarray
    between: np.ndarray
    unexplained: dict[str, int] = field(default_factory=dict)  # what the parts cannot explain: rows per reason

    @property
    def jobs(self) -> int:
        return len(self.work)


def decompose(run: MeasuredRun, variants: list[str] | None = None, cores: int | None = None) -> Parts:
    """The parts of the given variants' iterations (default: all of the run's), pooled. With ``cores`` (fewer
    than the workers, who shared them), a job's work is the core-seconds it computed (``cpu_work``), what the
    simulator's ``compute.cores`` shares out again."""
    chosen = run.variants if variants is None else [label for label in variants if label in run.variants]
    workers = run.workers
    if cores is not None:
        workers = workers.assign(core_seconds=_core_seconds(workers, cores, real=run.cut_short))
    rows = workers[workers["variant"].isin(chosen)]
    iterations = run.iterations[run.iterations["variant"].isin(chosen)]
    shares = {label: _partition_share(run, label) for label in chosen}
    return _parts(rows, iterations, run.scenario.stale_work, run.cut_short, shares)


def _core_seconds(rows: pd.DataFrame, cores: int, real: bool = True) -> np.ndarray:
    """Each job's core-seconds over its compute (compute_start to compute_end less its injected delay, a sleep),
    with every job that computed meanwhile sharing the cores. In a ``real`` run that is its iteration's jobs and an
    earlier iteration's still computing (an abandoned job finishing its partition, late work under ``stale_work:
    finish``): counting only its iteration's made a job that ran on into the next iteration seem to have had the
    cores more to itself than it had (a slow node's FR replicas, 6 workers on 2 cores: a p99 of 49.6 ms per
    partition where counting all gives 37.8; docs/calibration.md). The jobs of one variant, point and seed share a
    clock. In the simulator's tables only its iteration's: the model (``compute.cores``) shares the cores among an
    iteration's jobs and lets an abandoned one compute on, beside nothing, so this is its inverse."""
    out = np.full(len(rows), np.nan)
    computing = ~rows["failed"].to_numpy(dtype=bool)
    start = rows["compute_start"].to_numpy(dtype=float)
    end = rows["compute_end"].to_numpy(dtype=float) - rows["injected_delay"].fillna(0.0).to_numpy(dtype=float)
    keys = ["variant", "point", "seed"] if real else ["variant", "point", "seed", "iteration"]
    for index in rows.groupby(keys, sort=False).indices.values():
        mine = index[computing[index]]
        out[mine] = cpu_work(start[mine], end[mine], cores)
    return out


def _partition_share(run: MeasuredRun, label: str) -> float:
    """One of the variant's partitions in uncoded partitions (M-SGC's are n / k of one; 1 for the rest, and for a
    variant the run's scenario no longer names)."""
    from gcbench.scenario.build import scheme_for, variant_labelled

    variant = variant_labelled(run.scenario, label)
    return 1.0 if variant is None else scheme_for(run.scenario, variant).partition_share


def _parts(rows: pd.DataFrame, iterations: pd.DataFrame, stale_work: str, cut_short: bool,
           shares: dict[str, float]) -> Parts:  # fmt: skip
    unexplained: dict[str, int] = {}
    started = rows[~rows["failed"] & np.isfinite(rows["compute_start"]) & np.isfinite(rows["compute_end"])]
    early = started["compute_start"] < started["start"] - TOLERANCE
    _count(unexplained, "jobs that started before their iteration did", early)
    started = started[~early]
    if stale_work == "finish":  # a job queued behind its worker's late work waited for it, not for its dispatch
        started = started[~_queued(started)]
    work = (started["compute_end"] - started["compute_start"] - started["injected_delay"]).to_numpy()
    if "core_seconds" in started:  # (shared cores: the core-seconds each computed)
        work = started["core_seconds"].to_numpy(dtype=float)
    negative = work <= 0
    _count(unexplained, "jobs whose injected delay exceeds their measured time", negative)
    started, work = started[~negative], work[~negative]
    sent = started["arrival"].notna() & (started["arrival"] <= started["end"] + TOLERANCE)
    # a job still computing at the stop was cut short there (abandon) or finished later: either way the part of
    # its time before it stopped is all that is certain. One whose compute ended before the stop computed all of
    # it, its message late on the wire or not (one that slept any injected delay had finished computing too: the
    # sleep comes after the compute)
    computed = started["compute_end"] < started["end"] - TOLERANCE
    censored = (~sent & ~computed & ~started["used"] & (started["injected_delay"] <= 0)).to_numpy() & cut_short
    finished = started[sent.to_numpy()]
    upload = (finished["arrival"] - finished["compute_end"]).to_numpy()
    _count(unexplained, "messages that arrived before they were ready", upload < -TOLERANCE)
    # a real master's next jobs wait for its last iteration's abandoned work to drain: not the dispatch's time
    clean = ~after_leftovers(started, rows) if cut_short else np.ones(len(started), dtype=bool)
    dispatch = (started["compute_start"] - started["start"]).to_numpy()[clean]
    return Parts(
        dispatch=np.maximum(dispatch, 0.0),
        work=work,
        loads=(started["partitions"] * started["variant"].map(shares)).to_numpy(dtype=float),
        censored=censored,
        workers=started["worker"].to_numpy(),
        groups=started.groupby(["variant", "point", "seed", "iteration"], sort=False).ngroup().to_numpy(),
        upload=np.maximum(upload[upload >= -TOLERANCE], 0.0),
        between=_between(iterations),
        unexplained={reason: count for reason, count in unexplained.items() if count},
    )


def _count(unexplained: dict[str, int], reason: str, mask) -> None:
    unexplained[reason] = unexplained.get(reason, 0) + int(np.count_nonzero(mask))


def _queued(rows: pd.DataFrame) -> np.ndarray:
    """Jobs whose worker was still busy with an earlier job when their iteration started."""
    ordered = rows.sort_values(["variant", "point", "seed", "worker", "iteration"])
    previous = ordered.groupby(["variant", "point", "seed", "worker"])["compute_end"].shift(1)
    busy = (previous > ordered["start"] + TOLERANCE).reindex(rows.index)
    return busy.to_numpy(dtype=bool)


def after_leftovers(started: pd.DataFrame, rows: pd.DataFrame) -> np.ndarray:
    """Jobs of an iteration that began while the previous iteration's abandoned work was still going: a job still
    computing, or a message still on its way (TCP sends the bytes it was given), past that iteration's end."""
    late = rows["arrival"].isna() | (rows["arrival"] > rows["end"] + TOLERANCE)
    left = rows[late & ~rows["failed"]].assign(until=lambda f: f["arrival"].fillna(f["compute_end"]))
    keys = ["variant", "point", "seed"]
    last = left.groupby([*keys, "iteration"])["until"].max().rename("until").reset_index()
    last["iteration"] += 1  # (the iteration the leftovers ran into)
    joined = started[[*keys, "iteration", "start"]].merge(last, on=[*keys, "iteration"], how="left")
    return (joined["until"] > joined["start"] + TOLERANCE).to_numpy()


def _between(iterations: pd.DataFrame) -> np.ndarray:
    """The master's time between consecutive iterations of each (variant, point, seed): ``end`` -> next ``start``."""
    gaps = []
    for _, run in iterations.sort_values("iteration").groupby(["variant", "point", "seed"], sort=False):
        consecutive = np.diff(run["iteration"].to_numpy()) == 1
        gap = run["start"].to_numpy()[1:] - run["end"].to_numpy()[:-1]
        gaps.append(gap[consecutive & (gap >= -TOLERANCE)])
    return np.maximum(np.concatenate(gaps), 0.0) if gaps else np.zeros(0)
