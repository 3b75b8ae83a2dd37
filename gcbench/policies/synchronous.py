"""Synchronous policies: wait for all, until decodable, for the fastest k, or until a deadline."""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field, PositiveFloat

from gcbench import stops
from gcbench.coding import Scheme, kth_smallest
from gcbench.policies._base import PolicyOutcome, SynchronousPolicy, all_arrived, constant_reason
from gcbench.policies._registry import register_policy


@register_policy
class WaitAll(SynchronousPolicy):
    """Wait for every worker's message (synchronous SGD)."""

    name: Literal["wait_all"] = "wait_all"

    def stop_times(self, arrivals: np.ndarray, scheme: Scheme) -> PolicyOutcome:
        stop = all_arrived(arrivals)
        return self._fallback(stop, constant_reason(stops.ALL_ARRIVED, len(stop)), arrivals)

    def stop_now(self, scheme: Scheme, received: list[int], elapsed: float, all_arrived: bool) -> str | None:
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
        return self._fallback(stop, constant_reason(stops.DECODABLE, len(stop)), arrivals)

    def stop_now(self, scheme: Scheme, received: list[int], elapsed: float, all_arrived: bool) -> str | None:
        if scheme.can_decode(received):
            return stops.DECODABLE
        return stops.FALLBACK_APPROXIMATE if all_arrived and self.fallback == "approximate" and received else None


@register_policy
class FastestK(SynchronousPolicy):
    """Stop at the k-th message; decode exactly if those decode, else approximately."""

    name: Literal["fastest_k"] = "fastest_k"
    k: Annotated[int, Field(ge=1)]

    def stop_times(self, arrivals: np.ndarray, scheme: Scheme) -> PolicyOutcome:
        stop = kth_smallest(arrivals, min(self.k, arrivals.shape[1]))
        return self._fallback(stop, constant_reason(stops.FASTEST_K, len(stop)), arrivals)

    def stop_now(self, scheme: Scheme, received: list[int], elapsed: float, all_arrived: bool) -> str | None:
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

    def stop_now(self, scheme: Scheme, received: list[int], elapsed: float, all_arrived: bool) -> str | None:
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

    def wake_at(self) -> float:
        return self.deadline
