"""Links shared fairly: when each of a set of flows ends, each flow crossing its node's link and then one link
every node shares (the master's NIC), at max-min fair rates (a fluid model of TCP).

At every instant, the flows crossing a link share it equally, unless a flow is held back elsewhere: a node's
active flows each get min(node rate / their count, level), where the level is the one rate that fills the
shared link (water filling: the flows of nodes whose own share is lower than the level keep their share, and
the rest split what is left equally). Between two events (a flow joins, a flow ends) the rates are constant,
so a flow ends at ``now + remaining / rate``. tests/test_fair_share.py holds it to progressive filling, and
benchmarks/emulated_cluster.py's second part shows TCP flows on a shaped link sharing it this way.

Both engines use these functions: the vectorised one steps every iteration's flows together, a row an
iteration (``finish_times``); the SimPy cluster keeps one row of flows as they come and go
(gcbench/sim/links.py: ``FairShareLink``), with ``rates`` and ``ending``.
"""

from __future__ import annotations

import numpy as np

INF = float("inf")


def rates(active: np.ndarray, node: np.ndarray, node_rate: np.ndarray, shared_rate: float,
          joined: np.ndarray | None = None, unfairness: float = 0.0) -> np.ndarray:  # fmt: skip
    """Each flow's rate, bytes per second (0 where not active): ``active`` (rows x flows) which flows are
    sending, ``node`` (flows) the node each crosses, ``node_rate`` (nodes) each node's link (inf: unshaped),
    ``shared_rate`` the link every flow then crosses (inf: unshaped). With ``unfairness`` u > 0, a link's
    flows share it in proportion to weights: 1 for the one that joined it first (``joined``, rows x flows: when
    each flow reached its node's link; ties by column), 1 - u for each of the others. TCP shares a link so: the
    flow already sending keeps more of it while the ones that join later split the rest about equally
    (docs/emulation.md measured both)."""
    if unfairness > 0:
        return _weighted_rates(active, node, node_rate, shared_rate, joined, unfairness)
    count = np.zeros((active.shape[0], node_rate.size))
    for k in range(node_rate.size):  # (nodes are few: a loop over them beats a scatter over the flows)
        count[:, k] = active[:, node == k].sum(axis=1)
    present = count > 0
    with np.errstate(divide="ignore"):
        share = np.where(present, node_rate / np.where(present, count, 1.0), INF)  # each node's flows' own share
    level = _level(share, count, shared_rate)
    node_share = np.minimum(share, level[:, None])
    return np.where(active, node_share[:, node], 0.0)


def _weighted_rates(active: np.ndarray, node: np.ndarray, node_rate: np.ndarray, shared_rate: float,
                   joined: np.ndarray, unfairness: float) -> np.ndarray:  # fmt: skip
    """``rates`` where a link's flows share it by weights of their order of joining (the first 1, the others
    1 - u): on its node's link a flow gets the node's rate times its weight over its node's active weights, and
    through the shared link at most ``level`` times its weight there (weighted water filling, the flows as its
    units)."""
    keep = 1.0 - unfairness
    order = np.argsort(np.where(active, joined, INF), axis=1, kind="stable")
    node_rank, shared_rank = np.zeros(active.shape), np.zeros(active.shape)
    rows = np.arange(active.shape[0])[:, None]
    sorted_active = np.take_along_axis(active, order, axis=1)
    shared_rank[rows, order] = np.cumsum(sorted_active, axis=1) - sorted_active
    for k in range(node_rate.size):
        on_k = sorted_active & (node[order] == k)
        node_rank[rows, order] = np.where(on_k, np.cumsum(on_k, axis=1) - on_k, node_rank[rows, order])
    node_weight = np.where(active, np.where(node_rank == 0, 1.0, keep), 0.0)
    shared_weight = np.where(active, np.where(shared_rank == 0, 1.0, keep), 0.0)
    total = np.zeros((active.shape[0], node_rate.size))
    for k in range(node_rate.size):
        total[:, k] = node_weight[:, node == k].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cap = np.where(active, node_rate[node] * node_weight / total[:, node], INF)  # (inf x weight: an unshaped one)
        per_weight = np.where(active, cap / shared_weight, INF)
    level = _level(per_weight, shared_weight, shared_rate)
    with np.errstate(invalid="ignore"):  # (an inactive flow: no weight, inf per weight)
        return np.where(active, shared_weight * np.minimum(per_weight, level[:, None]), 0.0)


def _level(share: np.ndarray, count: np.ndarray, shared_rate: float) -> np.ndarray:
    """Per row, the rate that fills the shared link (inf where the nodes' own shares leave it unfilled)."""
    rows = share.shape[0]
    if shared_rate == INF or not count.any():
        return np.full(rows, INF)
    order = np.argsort(share, axis=1, kind="stable")
    share, count = np.take_along_axis(share, order, axis=1), np.take_along_axis(count, order, axis=1)
    with np.errstate(invalid="ignore"):  # (an unshaped node's share is inf: only read after the level)
        used = np.where(count > 0, share * count, 0.0)
    before = np.zeros_like(used)
    np.cumsum(used[:, :-1], axis=1, out=before[:, 1:])  # what the nodes below each one take
    after = np.cumsum(count[:, ::-1], axis=1)[:, ::-1]  # flows of each node and those above it
    with np.errstate(divide="ignore", invalid="ignore"):
        candidate = (shared_rate - before) / after
    fills = (after > 0) & (candidate <= share)
    first = np.argmax(fills, axis=1)
    found = fills[np.arange(rows), first]
    return np.where(found, candidate[np.arange(rows), first], INF)


def ending(now: np.ndarray, remaining: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """When each flow would end at its present rate (inf where it is not sending)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rate > 0, now[..., None] + remaining / rate, INF)


def sent(rate: np.ndarray, elapsed) -> np.ndarray:
    """Bytes each flow sent in ``elapsed`` seconds at ``rate``: none for an unshaped flow's (inf), which ends as
    it starts, so no time passes for it."""
    return np.where(rate < INF, rate, 0.0) * elapsed


def finish_times(reach: np.ndarray, size: float, node: np.ndarray, node_rate: np.ndarray, shared_rate: float,
                 unfairness: float = 0.0, burst: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """When each flow of ``size`` bytes ends, having reached its node's link at ``reach`` (rows x flows; inf:
    never sent); a row's flows share the links (``rates``), rows never do. A flow whose ``node`` is -1 crosses
    no link (a worker on the master's own node): it ends as it reaches. ``burst`` (nodes; None: none): each
    node's link's token bucket (``Buckets``), full as each row begins."""
    reach = np.asarray(reach, dtype=float)
    finish = np.full(reach.shape, INF)
    local = node < 0
    finish[:, local] = reach[:, local]
    if local.all():
        return finish
    node = np.where(local, 0, node)
    waiting = np.isfinite(reach) & ~local  # not yet on the link, and will be
    active = np.zeros(reach.shape, dtype=bool)
    remaining = np.full(reach.shape, float(size))
    now = np.where(waiting, reach, INF).min(axis=1)
    buckets = None if burst is None else Buckets(burst, node_rate, reach.shape[0])
    while True:
        joining = waiting & (reach <= now[:, None])
        if buckets is not None:
            buckets.join(joining, active, node, remaining, now)
        active |= joining
        waiting &= ~joining
        rate = rates(active, node, node_rate, shared_rate, reach, unfairness)
        end = ending(now, remaining, rate)
        soonest = end.min(axis=1)
        following = np.where(waiting, reach, INF).min(axis=1)
        step = np.minimum(soonest, following)
        moving = np.isfinite(step)
        if not moving.any():
            return finish
        elapsed = np.where(moving, step - now, 0.0)
        remaining -= sent(rate, elapsed[:, None])
        ends = active & (end <= step[:, None])
        finish[ends] = np.broadcast_to(step[:, None], finish.shape)[ends]
        active &= ~ends
        if buckets is not None:
            buckets.idle(ends, active, node, step)
        now = np.where(moving, step, now)


class Buckets:
    """Each node link's token bucket, per row: ``burst`` bytes deep, refilled at the link's rate while it idles.

    A flow that joins an idle link first takes what the bucket holds (at once: its first bytes cross as it
    joins), then the link's rate; flows joining an idle link together take it in column order (by worker, as the
    SimPy link orders them). While a link sends, its bucket stays empty (it refills as fast as the link drains
    it); once its last flow ends it refills from empty, or from what a message smaller than the bucket left."""

    def __init__(self, burst: np.ndarray, node_rate: np.ndarray, rows: int) -> None:
        self.burst, self.rate = np.asarray(burst, dtype=float), node_rate
        self.tokens = np.broadcast_to(self.burst, (rows, self.burst.size)).copy()
        self.since = np.full((rows, self.burst.size), -INF)  # when each link last went idle

    def join(self, joining: np.ndarray, active: np.ndarray, node: np.ndarray, remaining: np.ndarray,
             now: np.ndarray) -> None:  # fmt: skip
        """Flows ``joining`` now: those on an idle link take its bucket's bytes off their ``remaining``."""
        for k in np.flatnonzero((self.burst > 0) & (self.rate < INF)):
            on_k = np.flatnonzero(node == k)
            arriving = joining[:, on_k].any(axis=1)
            if not arriving.any():
                continue
            idle = arriving & ~active[:, on_k].any(axis=1)
            with np.errstate(invalid="ignore"):  # (-inf idle since: a full bucket)
                refilled = np.minimum(self.burst[k], self.tokens[:, k] + self.rate[k] * (now - self.since[:, k]))
            self.tokens[:, k] = np.where(idle, refilled, np.where(arriving, 0.0, self.tokens[:, k]))
            for column in on_k:  # (in column order)
                free = np.where(joining[:, column], np.minimum(self.tokens[:, k], remaining[:, column]), 0.0)
                remaining[:, column] -= free
                self.tokens[:, k] -= free

    def idle(self, ends: np.ndarray, active: np.ndarray, node: np.ndarray, step: np.ndarray) -> None:
        """Links whose last flow ended at ``step`` start to refill."""
        for k in np.flatnonzero(self.burst > 0):
            on_k = np.flatnonzero(node == k)
            emptied = ends[:, on_k].any(axis=1) & ~active[:, on_k].any(axis=1)
            self.since[:, k] = np.where(emptied, step, self.since[:, k])
