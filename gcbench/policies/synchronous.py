"""Synchronous policies: wait for all, until decodable, for the fastest k, or until a deadline."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import Field, PositiveFloat

from gcbench import stops
from gcbench.coding import Scheme, kth_smallest
from gcbench.policies._base import INF, PolicyOutcome, SynchronousPolicy, all_arrived, constant_reason
from gcbench.policies._registry import register_policy


@register_policy
class WaitAll(SynchronousPolicy):
    """Wait for every worker's message (synchronous SGD)."""

    name: Literal["wait_all"] = "wait_all"

    def stop_times(self, arrivals: np.ndarray, scheme: Scheme) -> PolicyOutcome:
        stop = all_arrived(arrivals)
        return self._fallback(stop, constant_reason(stops.ALL_ARRIVED, len(stop)), arrivals)

    def stop_now(
        self, scheme: Scheme, received: list[int], elapsed: float, all_arrived: bool, first: float = INF
    ) -> str | None:
        if not all_arrived:
            return None
        if len(set(received)) == len(scheme.message_owner):
            return stops.ALL_ARRIVED
        return stops.FALLBACK_APPROXIMATE if self.fallback == "approximate" and received else None


@register_policy
class Decodable(SynchronousPolicy):
    """Stop as soon as the received messages decode (the default for coded schemes)."""

    name: Literal["decodable"] = "decodable"

    def stop_times(self, arrivals: np.ndarray, scheme: Scheme) -> PolicyOutcome:
        stop = scheme.decode_times(arrivals)
        if (stop == 0).any():  # (the master decides as a message arrives: a round that needs none ends at the first)
            stop = np.maximum(stop, arrivals.min(axis=1))
        return self._fallback(stop, constant_reason(stops.DECODABLE, len(stop)), arrivals)

    def stop_now(
        self, scheme: Scheme, received: list[int], elapsed: float, all_arrived: bool, first: float = INF
    ) -> str | None:
        if scheme.can_decode(received):
            return stops.DECODABLE
        return stops.FALLBACK_APPROXIMATE if all_arrived and self.fallback == "approximate" and received else None


@register_policy
class FastestK(SynchronousPolicy):
    """Stop at the k-th message; decode exactly if those decode, else approximately."""

    name: Literal["fastest_k"] = "fastest_k"
    stops_at_a_count: ClassVar[bool] = True
    k: Annotated[int, Field(ge=1)]

    def stop_times(self, arrivals: np.ndarray, scheme: Scheme) -> PolicyOutcome:
        stop = kth_smallest(arrivals, min(self.k, arrivals.shape[1]))
        return self._fallback(stop, constant_reason(stops.FASTEST_K, len(stop)), arrivals)

    def stop_now(
        self, scheme: Scheme, received: list[int], elapsed: float, all_arrived: bool, first: float = INF
    ) -> str | None:
        if len(received) >= self.k:
            return stops.FASTEST_K
        return stops.FALLBACK_APPROXIMATE if all_arrived and self.fallback == "approximate" and received else None


@register_policy
class Deadline(SynchronousPolicy):
    """Stop at ``deadline`` seconds (or when all arrived); if what arrived does not decode, apply the fallback.

    Stop reasons: ``all_arrived`` (every message in by the deadline), ``deadline``
    (what arrived by then decodes), else the fallback: ``fallback_wait`` keeps
    waiting until the messages decode; ``fallback_approximate`` decodes what
    arrived by the deadline (waiting for a first message if none did).
    """

    name: Literal["deadline"] = "deadline"
    deadline: PositiveFloat

    def stop_times(self, arrivals: np.ndarray, scheme: Scheme) -> PolicyOutcome:
        complete = all_arrived(arrivals)
        at_deadline = np.minimum(complete, self.deadline)
        decodes_at = scheme.decode_times(arrivals)
        late = decodes_at > at_deadline
        on_time = np.where(complete <= self.deadline, stops.ALL_ARRIVED, stops.DEADLINE)
        if self.fallback == "wait":
            stop = np.where(late, decodes_at, at_deadline)
            reason = np.where(late, stops.FALLBACK_WAIT, on_time)
            return self._fallback(stop, reason.astype(object), arrivals)
        first = arrivals.min(axis=1)
        stop = np.maximum(at_deadline, first)
        reason = np.where(late, stops.FALLBACK_APPROXIMATE, on_time).astype(object)
        return PolicyOutcome(stop, reason)

    def stop_now(
        self, scheme: Scheme, received: list[int], elapsed: float, all_arrived: bool, first: float = INF
    ) -> str | None:
        if elapsed <= self.deadline:
            if len(set(received)) == len(scheme.message_owner):
                return stops.ALL_ARRIVED
            if elapsed < self.deadline:
                return None  # before the deadline only a complete set stops the wait
            if scheme.can_decode(received):
                return stops.DEADLINE
        if self.fallback == "approximate":  # undecodable at the deadline: decode what arrived
            return stops.FALLBACK_APPROXIMATE if received else None
        return stops.FALLBACK_WAIT if elapsed > self.deadline and scheme.can_decode(received) else None

    def wake_at(self, first: float = INF) -> float:
        return self.deadline


@register_policy
class RelativeDeadline(SynchronousPolicy):
    """Stop at (1 + mu) times the first message's time if what arrived by then decodes, else wait for the rest.

    The round rule of Krishnan, Ebrahimi and Khisti's sequential gradient coding code (ICLR 2023): the master
    waits (1 + mu) times the fastest worker's time; the workers not in by then are the stragglers. With
    ``fewer_than_s`` the deadline also needs fewer than s workers missing (that code's rule for its
    gradient-coding baseline, where Tandon et al.'s allows s). Past the deadline, ``wait_for: all`` (the
    code's rule) waits for every message, ``decodable`` until the rule holds. Stop reasons: ``all_arrived``
    (every message in by the deadline, or waited for), ``deadline``, ``fallback_wait``.
    """

    name: Literal["relative_deadline"] = "relative_deadline"
    mu: Annotated[float, Field(ge=0)]
    wait_for: Literal["all", "decodable"] = "all"
    fewer_than_s: bool = False
    fallback: Literal["wait"] = "wait"

    def stop_times(self, arrivals: np.ndarray, scheme: Scheme) -> PolicyOutcome:
        complete = all_arrived(arrivals)
        deadline = (1 + self.mu) * arrivals.min(axis=1)
        ready = self._ready_times(arrivals, scheme)
        on_time = complete <= deadline
        at_deadline = ~on_time & (ready <= deadline)
        if self.wait_for == "all":
            late_stop, late_reason = complete, stops.ALL_ARRIVED
        else:
            late_stop, late_reason = ready, stops.FALLBACK_WAIT
        stop = np.where(on_time, complete, np.where(at_deadline, deadline, late_stop))
        reason = np.where(on_time, stops.ALL_ARRIVED, np.where(at_deadline, stops.DEADLINE, late_reason))
        return PolicyOutcome(stop, reason.astype(object))

    def _ready_times(self, arrivals: np.ndarray, scheme: Scheme) -> np.ndarray:
        """Per row, when the messages in decode (and, with ``fewer_than_s``, fewer than s workers are missing)."""
        ready = scheme.decode_times(arrivals)
        if not self.fewer_than_s:
            return ready
        done = np.stack(
            [arrivals[:, scheme.messages(w)].max(axis=1) for w in range(scheme.n)], axis=1
        )  # each worker's last message
        if scheme.s == 0:  # fewer than none missing: only a complete set
            return np.maximum(ready, done.max(axis=1))
        return np.maximum(ready, kth_smallest(done, scheme.n - scheme.s + 1))

    def stop_now(
        self, scheme: Scheme, received: list[int], elapsed: float, all_arrived: bool, first: float = INF
    ) -> str | None:
        deadline = self.wake_at(first)
        if elapsed <= deadline and len(set(received)) == len(scheme.message_owner):
            return stops.ALL_ARRIVED
        if elapsed < deadline:
            return None
        if elapsed == deadline:
            return stops.DEADLINE if self._ready(scheme, received) else None
        if self.wait_for == "all":
            return stops.ALL_ARRIVED if len(set(received)) == len(scheme.message_owner) else None
        return stops.FALLBACK_WAIT if self._ready(scheme, received) else None

    def _ready(self, scheme: Scheme, received: list[int]) -> bool:
        if not scheme.can_decode(received):
            return False
        if not self.fewer_than_s:
            return True
        got = set(received)
        missing = sum(1 for w in range(scheme.n) if not got.issuperset(scheme.messages(w)))
        return missing == 0 or missing < scheme.s

    def wake_at(self, first: float = INF) -> float:
        return (1 + self.mu) * first

    @property
    def display_name(self) -> str:
        """Its mu and the options that differ from the defaults: variants that differ in them differ in label."""
        options = [f"mu={self.mu:g}"] + (["wait_for=decodable"] if self.wait_for == "decodable" else [])
        return f"{self.name}({', '.join(options + (['fewer_than_s'] if self.fewer_than_s else []))})"
