"""What every master shares once a run's tables are filled: exactness and residual, and the "stuck" error."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from gcbench import stops
from gcbench.coding import Scheme
from gcbench.errors import GcbenchError
from gcbench.results.messages import sends_several, used_message_ids
from gcbench.results.recorder import RunRecorder


class RunStuck(GcbenchError):
    """An iteration can never finish under the variant's policy (e.g. permanent crashes)."""


SimulationStuck = RunStuck  # the simulator's name for it


class ClusterTimeout(RunStuck):
    """A wall-clock cluster delivered nothing the master could use within ``training.timeout``."""


def decoding_quality(rec: RunRecorder, scheme: Scheme, rows: np.ndarray | None = None) -> None:
    """Exact or approximate per iteration (of ``rows``, default all), with the residual of approximate decodes."""
    rows = np.arange(rec.iterations) if rows is None else np.asarray(rows, dtype=np.int64)
    if scheme.sequential:  # a round ends only once the job due decodes, from its results over its rounds
        rec.exact[rows], rec.residual[rows] = True, 0.0
        return
    reason, failed = rec.reason[rows], rec.failed[rows]
    guaranteed = scheme.exact & np.isin(reason, [stops.DECODABLE, stops.ALL_ARRIVED]) & ~failed.any(axis=1)
    rec.exact[rows] = guaranteed
    pending = rows[~guaranteed]
    if rec.messages is not None or sends_several(scheme):  # a worker's messages may be used in part
        for t in pending:
            rec.exact[t], rec.residual[t] = scheme.decode_quality(used_message_ids(rec, scheme, t))
        return
    if scheme.symmetric:  # one decoding per distinct count of received messages
        counts = rec.used[pending].sum(axis=1)
        for count in np.unique(counts):
            exact, residual = scheme.decode_quality(np.arange(count))
            rec.exact[pending[counts == count]] = exact
            rec.residual[pending[counts == count]] = residual
        return
    for t in pending:
        rec.exact[t], rec.residual[t] = scheme.decode_quality(np.flatnonzero(rec.used[t]))


def stuck_iteration(label: str, t: int, scheme: Scheme, policy, dead: Iterable[int], answered: int,
                    node_of=None, scheduled: bool = False) -> SimulationStuck:  # fmt: skip
    """Iteration t can never finish: who crashed for good (``dead``), how many workers ``answered``, and why that
    is too few; with each worker's node (``node_of``, a topology's), the nodes lost whole, by name (their workers
    not named twice). ``scheduled``: crashes for good of ``failures.schedule`` are among them, and the hint says
    to give its entries a downtime (the model's does not apply to them)."""
    dead = sorted(int(w) for w in dead)
    lost = "" if node_of is None else lost_nodes(dead, node_of)
    whole = node_of is not None and lost and all(_on_lost_node(w, dead, node_of) for w in dead)
    named = "" if whole else f" ({name_workers(dead)})"
    hint = policy.stuck_hint()
    if scheduled:
        hint = hint.replace("give failures.downtime", "give the failures.schedule entries a downtime")
    return SimulationStuck(
        f"variant '{label}': iteration {t} can never finish ({lost}{len(dead)} of {scheme.n} workers crashed for "
        f"good{named}, {answered} answered; too many for {scheme.name} with s={scheme.s} under "
        f"{policy.name}); {hint}."
    )


def _on_lost_node(w: int, dead: list[int], node_of) -> bool:
    return all(other in dead for other in range(len(node_of)) if node_of[other] == node_of[w])


def lost_nodes(dead: list[int], node_of) -> str:
    """'node 1 lost (workers 2 and 3); ': the nodes every worker of which is dead (empty: none)."""
    nodes = sorted({int(node_of[w]) for w in dead})
    whole = [k for k in nodes if all(w in dead for w in range(len(node_of)) if node_of[w] == k)]
    parts = [f"node {k} lost ({name_workers([w for w in range(len(node_of)) if node_of[w] == k])})" for k in whole]
    return "; ".join(parts) + "; " if parts else ""


def certainly_stuck(scenario, variant, scheme: Scheme) -> RunStuck | None:
    """The error every run of this variant raises, whatever its draws, where the scenario alone shows that it can
    never finish; None where that is left to chance (a crash only likely is never predicted).

    What is certain: with crash probability 1 and no downtime every worker crashes for good in its first job,
    so nothing ever arrives, and the master stops at iteration (or update) 0 with this sentence; and a schedule's
    crashes for good (``failures.schedule``, downtime null) that leave a synchronous policy that waits (no
    approximate fallback) too few workers to decode from stop the run in the first iteration they do."""
    failures = scenario.failures
    if getattr(failures, "probability", None) != 1.0 or getattr(failures, "downtime", 0.0) is not None:
        return _scheduled_stuck(scenario, variant, scheme)
    label, policy = variant.display_label(), variant.policy
    if getattr(policy, "real_only", False):  # no master runs it (allreduce)
        return None
    if policy.synchronous:
        return stuck_iteration(label, 0, scheme, policy, range(scheme.n), 0)
    return stuck_update(label, 0, policy)


def _scheduled_stuck(scenario, variant, scheme: Scheme) -> RunStuck | None:
    """The iteration a synchronous policy without an approximate fallback can never finish because of the
    scheduled crashes for good alone (the workers of a node named: the scenario as this variant places them)."""
    policy = variant.policy
    forever = sorted((e for e in getattr(scenario.failures, "schedule", []) if e.downtime is None),
                     key=lambda e: e.iteration)  # fmt: skip
    # (the policies that wait for their messages whatever the time: a deadline's stop depends on when they come)
    if not forever or policy.name not in ("wait_all", "decodable", "fastest_k") or policy.fallback != "wait":
        return None
    node_of = None if scenario.topology is None else scenario.topology.node_of(scenario.workers)
    dead: set[int] = set()
    for entry in forever:
        dead |= {entry.worker} if entry.worker is not None else {int(w) for w in np.flatnonzero(node_of == entry.node)}
        left = [m for w in range(scheme.n) if w not in dead for m in scheme.messages(w)]
        if policy.stop_now(scheme, left, 0.0, all_arrived=True, first=0.0) is None:  # (every one left answered)
            answered = scheme.n - len(dead)
            return stuck_iteration(variant.display_label(), entry.iteration, scheme, policy, dead, answered, node_of,
                                   scheduled=True)  # fmt: skip
    return None


def scheduled_for_good(scenario) -> set[int]:
    """The workers ``failures.schedule`` crashes for good (downtime null), its nodes' workers included (the
    scenario as the variant places them)."""
    node_of = None if scenario.topology is None else scenario.topology.node_of(scenario.workers)
    forever = (entry for entry in getattr(scenario.failures, "schedule", []) if entry.downtime is None)
    return {int(w) for e in forever for w in ([e.worker] if e.node is None else np.flatnonzero(node_of == e.node))}


def name_workers(workers: list[int], most: int = 10, noun: str = "worker") -> str:
    """'worker 2', 'workers 1 and 2', 'workers 0, 1 and 3'; beyond ``most``, the first ones and how many more
    (``noun``: what they are called, DDP's ranks say 'rank')."""
    if not workers:
        return f"no {noun}"
    if len(workers) == 1:
        return f"{noun} {workers[0]}"
    if len(workers) > most:
        return f"{noun}s {', '.join(map(str, workers[:most]))} and {len(workers) - most} more"
    return f"{noun}s {', '.join(map(str, workers[:-1]))} and {workers[-1]}"


def timed_out_iteration(t: int, timeout: float, answered: int, n: int) -> ClusterTimeout:
    return ClusterTimeout(
        f"iteration {t}: the messages received within {timeout:g} s do not decode "
        f"({answered} of {n} workers answered); raise training.timeout or check the cluster."
    )


def timed_out_update(version: int, timeout: float) -> ClusterTimeout:
    return ClusterTimeout(
        f"update {version}: no result arrived within {timeout:g} s; raise training.timeout or check the cluster."
    )


def stuck_update(label: str, version: int, policy) -> SimulationStuck:
    if policy.distinct and policy.batch > 1:
        why = f"too many workers crashed for good: {policy.name} waits for {policy.batch} distinct workers' results"
    else:
        why = "every worker crashed for good"
    return SimulationStuck(f"variant '{label}': update {version} can never finish ({why}); give failures.downtime.")
