"""The real master's online decisions agree with the simulator's offline stop times."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from gcbench.coding import make_scheme
from gcbench.policies import Policy

POLICIES = [
    "wait_all",
    "decodable",
    {"name": "decodable", "fallback": "approximate"},
    {"name": "fastest_k", "k": 3},
    {"name": "deadline", "deadline": 0.5},
    {"name": "deadline", "deadline": 0.5, "fallback": "approximate"},
    {"name": "relative_deadline", "mu": 1.0},
    {"name": "relative_deadline", "mu": 0.2, "wait_for": "decodable"},
    {"name": "relative_deadline", "mu": 1.0, "fewer_than_s": True},
    {"name": "relative_deadline", "mu": 0.0, "wait_for": "decodable", "fewer_than_s": True},
]
SCHEMES = [("uncoded", 0, {}), ("fr", 1, {}), ("cr", 2, {}), ("cyclic_mds", 1, {}), ("cce_fr", 1, {"m": 2})]


def online_stop(policy, scheme, arrivals: np.ndarray) -> tuple[float, str]:
    """Replay arrivals in time order, asking stop_now at each distinct arrival time and once at wake_at(first).

    inf marks a worker crashed for good: once every other message is in, nothing more can arrive."""
    received: list[int] = []
    wake, woken, first = policy.wake_at(), False, INF
    finite = arrivals[np.isfinite(arrivals)]
    for moment in np.unique(finite):
        if not woken and wake < moment:
            woken = True
            if reason := policy.stop_now(scheme, received, wake, False, first):
                return wake, reason
        received += [int(i) for i in np.flatnonzero(arrivals == moment)]
        if first == INF:  # the master asks the policy's wake time again once the first message is in
            first = float(moment)
            wake = wake if woken else policy.wake_at(first)
        if reason := policy.stop_now(scheme, received, float(moment), len(received) == len(finite), first):
            return float(moment), reason
    if not woken and np.isfinite(wake):  # nothing more can arrive, but the master still wakes at wake_at()
        if reason := policy.stop_now(scheme, received, wake, True, first):
            return wake, reason
    return float("inf"), "stuck"


INF = np.inf


@given(
    policy_index=st.integers(0, len(POLICIES) - 1),
    scheme_index=st.integers(0, len(SCHEMES) - 1),
    times=st.lists(st.floats(0.01, 1.0) | st.sampled_from([0.5, 1.0, np.inf]), min_size=6, max_size=6),
)
# found on fresh clones: the deadline passed with nothing in, then everything arrived at once
@example(policy_index=5, scheme_index=0, times=[1.0] * 6)
@example(policy_index=5, scheme_index=1, times=[INF, 1.0, INF, 1.0, 1.0, 1.0])
@example(policy_index=5, scheme_index=0, times=[INF, 1.0, INF, 1.0, 1.0, 1.0])
@example(policy_index=4, scheme_index=1, times=[1.0] * 6)
@example(policy_index=4, scheme_index=2, times=[0.5] * 6)  # everything at the deadline itself
@example(policy_index=5, scheme_index=1, times=[0.1, INF, 0.1, 0.7, 0.1, 0.1])  # decodable at the deadline
def test_online_decisions_match_offline_stop_times(policy_index, scheme_index, times):
    policy = TypeAdapter(Policy).validate_python(POLICIES[policy_index])
    name, s, params = SCHEMES[scheme_index]
    scheme = make_scheme(name, n=6, s=s, **params)
    arrivals = np.array(times)
    offline = policy.stop_times(arrivals[None, :], scheme)
    stop, reason = online_stop(policy, scheme, arrivals)
    if not np.isfinite(offline.stop[0]):  # the simulator reports these as stuck
        assert not np.isfinite(stop), (stop, reason, offline)
        return
    assert stop == offline.stop[0] and reason == offline.reason[0], (stop, reason, offline)
