"""Fairly shared links (gcbench/models/fair_share.py) against the textbook: progressive filling for the rates,
and a flow-by-flow event loop over them for the finish times."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcbench.models.fair_share import finish_times, rates

INF = float("inf")


def progressive_filling(nodes: list[int], node_rate: list[float], shared: float) -> list[float]:
    """Max-min fair rates: raise every unfrozen flow's rate together until a link fills, freeze its flows, repeat."""
    rate = [0.0] * len(nodes)
    frozen = [False] * len(nodes)
    links = [([i for i, k in enumerate(nodes) if k == node], capacity) for node, capacity in enumerate(node_rate)]
    links.append((list(range(len(nodes))), shared))
    while not all(frozen):
        room = []
        for flows, capacity in links:
            free = [i for i in flows if not frozen[i]]
            if free and capacity < INF:
                room.append((capacity - sum(rate[i] for i in flows)) / len(free))
        if not room:  # no finite link holds the rest back
            return [INF if not frozen[i] else rate[i] for i in range(len(nodes))]
        step = min(room)
        for i in range(len(nodes)):
            if not frozen[i]:
                rate[i] += step
        for flows, capacity in links:
            if capacity < INF and sum(rate[i] for i in flows) >= capacity * (1 - 1e-12):
                for i in flows:
                    frozen[i] = True
    return rate


def event_loop(reach: list[float], size: float, nodes: list[int], node_rate: list[float], shared: float):
    """Flow by flow: at each event (a flow reaches its link, or one ends), rates from progressive filling."""
    finish = [INF] * len(reach)
    remaining = {}
    pending = sorted((t, i) for i, t in enumerate(reach) if t < INF)
    now = pending[0][0] if pending else INF
    while pending or remaining:
        while pending and pending[0][0] <= now:
            remaining[pending.pop(0)[1]] = size
        active = sorted(remaining)
        if not active:
            now = pending[0][0]
            continue
        rate = progressive_filling([nodes[i] for i in active], node_rate, shared)
        ends = [now + remaining[i] / r if r > 0 else INF for i, r in zip(active, rate, strict=True)]
        step = min(min(ends), pending[0][0] if pending else INF)
        for i, r, end in zip(active, rate, ends, strict=True):
            if end <= step * (1 + 1e-12):
                finish[i] = step
                del remaining[i]
            else:
                remaining[i] -= r * (step - now)
        now = step
    return finish


RATES = st.sampled_from([1.0, 2.0, 3.0, 5.0, 8.0, INF])


@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=8),
    st.lists(RATES, min_size=4, max_size=4),
    RATES,
)
def test_rates_are_progressive_filling_s(nodes, node_rate, shared):
    got = rates(np.ones((1, len(nodes)), dtype=bool), np.array(nodes), np.array(node_rate), shared)[0]
    np.testing.assert_allclose(got, progressive_filling(nodes, node_rate, shared), rtol=1e-9)


@given(
    st.lists(st.tuples(st.integers(-1, 2), st.sampled_from([0.0, 0.5, 1.0, 2.5, INF])), min_size=1, max_size=7),
    st.lists(RATES, min_size=3, max_size=3),
    RATES,
)
def test_finish_times_are_the_event_loop_s(flows, node_rate, shared):
    nodes, reach = [k for k, _ in flows], [t for _, t in flows]
    got = finish_times(np.array([reach]), 4.0, np.array(nodes), np.array(node_rate), shared)[0]
    local = [i for i, k in enumerate(nodes) if k < 0]
    crossing = [i for i in range(len(flows)) if i not in local]
    expected = np.array(reach, dtype=float)
    expected[crossing] = event_loop([reach[i] for i in crossing], 4.0, [nodes[i] for i in crossing], node_rate, shared)
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_rows_never_share_a_link():
    """Two rows of the same flows give each row's own times, as each row alone does."""
    reach = np.array([[0.0, 1.0, 0.5], [2.0, 0.0, INF]])
    nodes, node_rate = np.array([0, 0, 1]), np.array([2.0, 4.0])
    both = finish_times(reach, 4.0, nodes, node_rate, 3.0)
    for row in range(2):
        alone = finish_times(reach[row : row + 1], 4.0, nodes, node_rate, 3.0)[0]
        np.testing.assert_allclose(both[row], alone, rtol=1e-12)
    assert both[1, 2] == INF  # never sent, never arrives


@pytest.mark.parametrize("shared", [INF, 6.0])
def test_unshaped_links_deliver_at_once(shared):
    """No finite link: a message arrives as it reaches the link; behind an ingress alone, it takes size / rate."""
    got = finish_times(np.array([[0.5]]), 3.0, np.array([0]), np.array([INF]), shared)[0, 0]
    assert got == (0.5 if shared == INF else 0.5 + 3.0 / shared)


# -- unfairness: a link's flows weighted by their order of joining -------------------------------------------------


@pytest.mark.parametrize("u", [0.0, 0.25, 0.5, 0.9])
@pytest.mark.parametrize("where", ["node", "ingress"])
def test_two_flows_at_once_end_at_2_less_u_and_2_transfers(u, where):
    """Weights 1 and 1 - u: the first joiner ends at (2 - u) b / r, the second, alone then, at 2 b / r (the link
    never idles); u = 0 is fair sharing (both at 2 b / r). Ties join in column order."""
    b, r = 3.0, 2.0
    if where == "node":  # two flows through one node's link
        nodes, node_rate, shared = np.array([0, 0]), np.array([r]), INF
    else:  # one flow a node, through the master's ingress
        nodes, node_rate, shared = np.array([0, 1]), np.array([INF, INF]), r
    got = finish_times(np.zeros((1, 2)), b, nodes, node_rate, shared, unfairness=u)[0]
    np.testing.assert_allclose(got, [(2 - u) * b / r, 2 * b / r], rtol=1e-12)


def test_the_flow_that_joined_first_keeps_the_larger_share():
    """Flow 1 joins first though it is the second column; it takes the weight 1, flow 0 the weight 1 - u."""
    got = finish_times(np.array([[0.5, 0.0]]), 4.0, np.array([0, 0]), np.array([1.0]), INF, unfairness=0.5)[0]
    # flow 1 alone for 0.5 s (0.5 sent), then 2/3 and 1/3 of the link: flow 1's 3.5 left take 5.25 s
    np.testing.assert_allclose(got, [8.0, 5.75], rtol=1e-12)


def weighted_filling(cap: np.ndarray, weight: np.ndarray, shared: float) -> np.ndarray:
    """Each flow min(cap, level x weight), the level found by bisection so that the flows fill the shared link."""
    if shared == INF or np.minimum(cap, INF).sum() <= shared:
        return cap
    low, high = 0.0, shared / weight.min()
    for _ in range(200):
        level = (low + high) / 2
        low, high = (level, high) if np.minimum(cap, level * weight).sum() < shared else (low, level)
    return np.minimum(cap, high * weight)


@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=8),
    st.lists(RATES, min_size=4, max_size=4),
    RATES,
    st.sampled_from([0.1, 0.4, 0.8]),
)
def test_weighted_rates_split_each_link_by_the_order_of_joining_s(nodes, node_rate, shared, u):
    """A node's link split among its flows by weights (1 for its first, 1 - u for the others), then the ingress
    filled, weighted as much (1 for the first of all, 1 - u for the others), each flow held to its node's share
    (columns join in order)."""
    flows = len(nodes)
    got = rates(np.ones((1, flows), dtype=bool), np.array(nodes), np.array(node_rate), shared,
                np.arange(flows, dtype=float)[None, :], u)[0]  # fmt: skip
    node_rank = [sum(1 for j in range(i) if nodes[j] == nodes[i]) for i in range(flows)]
    node_weight = np.array([1.0 if k == 0 else 1 - u for k in node_rank])
    total = {k: sum(node_weight[i] for i in range(flows) if nodes[i] == k) for k in set(nodes)}
    cap = np.array([node_rate[nodes[i]] * node_weight[i] / total[nodes[i]] for i in range(flows)])
    expected = weighted_filling(cap, np.array([1.0] + [1 - u] * (flows - 1)), shared)
    np.testing.assert_allclose(got, expected, rtol=1e-9)


@given(st.integers(1, 6), st.sampled_from([0.0, 0.3, 0.7]))
def test_flows_of_one_link_end_by_their_total_over_its_rate_whatever_u_s(flows, u):
    """The link never idles while a flow is on it: the last of n flows joined together ends at n b / r."""
    got = finish_times(np.zeros((1, flows)), 2.0, np.zeros(flows, dtype=int), np.array([4.0]), INF, u)[0]
    assert got.max() == pytest.approx(flows * 2.0 / 4.0, rel=1e-12)
    assert list(np.argsort(got, kind="stable")) == list(range(flows))  # the earlier in the order, the sooner
