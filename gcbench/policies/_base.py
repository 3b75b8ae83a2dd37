"""What every synchronous policy answers: given message arrival times, when does the master stop?

Arrival times are relative to the iteration's start, one row per iteration and
one column per message; inf means the message never comes (crashed for good).
"""

from __future__ import annotations

from typing import ClassVar, Literal, NamedTuple

import numpy as np

from gcbench import stops
from gcbench.coding import Scheme
from gcbench.models import Config

INF = float("inf")


class PolicyOutcome(NamedTuple):
    stop: np.ndarray  # (rows,) seconds after the iteration's start; inf: cannot progress
    reason: np.ndarray  # (rows,) str: why it stopped (gcbench.stops)


class AggregationPolicy(Config):
    """What every policy declares of itself, so callers ask the policy instead of comparing its name."""

    synchronous: ClassVar[bool]  # the master waits for each iteration's messages, decodes once, and steps
    needs_master: ClassVar[bool] = True  # False: no master runs it (allreduce: the ranks all-reduce by themselves)
    real_only: ClassVar[bool] = False  # True: only real mode trains it (gcbench simulate refuses it)

    @property
    def display_name(self) -> str:
        """What a variant's label shows of the policy: its name (a policy may add its own parameters)."""
        return self.name


class SynchronousPolicy(AggregationPolicy):
    """A policy whose master waits, decodes once, and starts the next iteration."""

    fallback: Literal["wait", "approximate"] = "wait"
    # True when the policy stops at a count of messages, whether or not they decode (fastest_k)
    stops_at_a_count: ClassVar[bool] = False

    synchronous: ClassVar[bool] = True

    def stop_times(self, arrivals: np.ndarray, scheme: Scheme) -> PolicyOutcome:
        """Offline (simulator): stop times for rows of known arrival times."""
        raise NotImplementedError

    def stop_now(
        self, scheme: Scheme, received: list[int], elapsed: float, all_arrived: bool, first: float = INF
    ) -> str | None:
        """Online (real master): the stop reason (gcbench.stops) if the master should stop with these messages
        now, else None.

        ``received`` are message ids in arrival order; ``all_arrived``: no further
        message can arrive this iteration (every sender answered, or the rest
        crashed for good); ``first``: when the iteration's first message arrived
        (inf before it). Called after each arrival with its time, and once with
        ``elapsed == wake_at(first)`` exactly when that is finite, before any
        arrival after it. Must agree with ``stop_times``.
        """
        raise NotImplementedError

    def wake_at(self, first: float = INF) -> float:
        """Seconds after the iteration's start at which the master must decide even without a new message,
        given when the first message arrived (inf before it; the master asks again once it has)."""
        return INF

    def stuck_hint(self) -> str:
        """What to change when permanent crashes leave an iteration unable to finish."""
        if self.fallback == "approximate":  # then only a worker-less iteration is stuck
            return "no worker is left to decode from; give failures.downtime"
        return "give failures.downtime or policy.fallback: approximate"

    def _fallback(self, stop: np.ndarray, reason: np.ndarray, arrivals: np.ndarray) -> PolicyOutcome:
        """Rows that cannot finish: with ``approximate``, stop at the last message that does arrive."""
        stuck = ~np.isfinite(stop)
        if stuck.any() and self.fallback == "approximate":
            finite = np.where(np.isfinite(arrivals), arrivals, -np.inf).max(axis=1)
            rescued = stuck & np.isfinite(finite)
            stop = np.where(rescued, finite, stop)
            reason = np.where(rescued, stops.FALLBACK_APPROXIMATE, reason)
        return PolicyOutcome(stop, reason)


_REASONS: dict[str, np.ndarray] = {}  # per stop reason, an object array of it (read only), grown as needed


def constant_reason(reason: str, rows: int) -> np.ndarray:
    """``reason`` on ``rows`` rows: a read-only view of one array per reason (an object array filled on every
    call took 7% of a run at n = 12, more than the decode)."""
    kept = _REASONS.get(reason)
    if kept is None or len(kept) < rows:
        kept = _REASONS[reason] = np.full(max(rows, 1024), reason, dtype=object)
        kept.flags.writeable = False
    return kept[:rows]


def all_arrived(arrivals: np.ndarray) -> np.ndarray:
    """Per row, when the last message arrives (inf if one never does)."""
    return arrivals.max(axis=1)
