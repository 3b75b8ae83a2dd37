"""Whole nodes lost: which sets of lost nodes a scheme still decodes exactly under a placement of its workers, and
``by_code``, the placement that keeps the most of them decodable.

A node holds some of the n workers (``node_of[w]``: worker w's node); losing it loses every message of each of
its workers. A placement survives k node losses when every set of k lost nodes leaves messages that decode the
gradient exactly (``Scheme.can_decode`` and ``Scheme.decode_quality``: an approximate code's estimate does not
count). ``survival`` counts, for every k, the share of the k-node sets that stay decodable and names a smallest set
that does not.

``by_code`` starts from ``spread`` (worker w on node w mod K) and improves it by swapping two workers of different
nodes while a swap makes the placement better: first more node losses survived whatever nodes are lost, then a
larger share of decodable sets at the first size not survived, then at the next; for an approximate code, then a
smaller mean residual. Every node keeps spread's count of workers, and by_code is spread where no swap improves
on it. Where a scheme's structure already lands on distinct nodes what a node must not hold together (FR's
replicas of a group, consecutive workers of the cyclic codes: spread deals them out in turn), no swap helps and
``by_code`` is ``spread``; where any n - s workers decode (CR, cyclic-MDS) every placement is as good.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

MAX_SETS = 20_000  # node sets a survival count visits; beyond, the search refuses rather than run for minutes
SEARCH_BUDGET = 200_000  # decodability checks the swap search may spend; beyond, by_code stays spread


@dataclass(frozen=True)
class Survival:
    """How a placement of a scheme's workers fares when whole nodes are lost.

    ``shares[k]``: the share of the sets of k lost nodes (k = 0..K) after which the messages left decode exactly;
    ``survives``: the most nodes that may be lost, whichever they are, with the gradient still exact (-1: not even
    with every node up, an approximate code that is never exact); ``worst``: a smallest set of lost nodes that is
    not decodable (None where every set short of all nodes is); ``residuals[k]``: the mean residual of the decode
    over the sets of k lost nodes (0 where all are exact; an approximate code's error otherwise), k = 0..K-1."""

    node_of: tuple[int, ...]
    shares: tuple[float, ...]
    survives: int
    worst: tuple[int, ...] | None
    residuals: tuple[float, ...]

    @property
    def nodes(self) -> int:
        return len(self.shares) - 1

    def score(self, residuals: bool = False) -> tuple[float, ...]:
        """What ``by_code`` maximises: the losses survived, then the shares beyond them, in order; with
        ``residuals`` (an approximate code's), then the smaller mean residuals, fewest nodes lost first."""
        extra = tuple(-r for r in self.residuals) if residuals else ()
        return (float(self.survives), *self.shares[self.survives + 1 :], *extra)


def survival(scheme, node_of) -> Survival:
    """Every set of lost nodes checked: whether the workers left decode exactly."""
    node_of = np.asarray(node_of, dtype=int)
    if len(node_of) != scheme.n:
        raise ValueError(f"a placement of {len(node_of)} workers for a scheme of {scheme.n}")
    nodes = int(node_of.max()) + 1
    total = sum(comb(nodes, k) for k in range(nodes + 1))
    if total > MAX_SETS:
        raise ValueError(f"{nodes} nodes have {total:,} sets of lost nodes, more than the {MAX_SETS:,} checked")
    messages = [scheme.messages(w) for w in range(scheme.n)]
    shares, residuals, survives, worst = [], [], None, None
    for k in range(nodes + 1):
        decodable, residual = 0, 0.0
        for lost in combinations(range(nodes), k):
            left = [m for w in range(scheme.n) if node_of[w] not in lost for m in messages[w]]
            exact, error = scheme.decode_quality(left) if left else (False, float("inf"))
            exact = exact and scheme.can_decode(left)  # (a threshold code decodes from enough messages only)
            decodable += exact
            residual += error
            if not exact and worst is None:
                worst = lost
        shares.append(decodable / comb(nodes, k))
        if k < nodes:
            residuals.append(residual / comb(nodes, k))
        if survives is None and decodable < comb(nodes, k):
            survives = k - 1
    survives = nodes if survives is None else survives
    return Survival(tuple(int(v) for v in node_of), tuple(shares), survives, worst, tuple(residuals))


def spread(workers: int, nodes: int) -> np.ndarray:
    """Worker w on node w mod K (the topology's ``spread``)."""
    return np.arange(workers) % nodes


def by_code(scheme, nodes: int) -> Survival:
    """The placement of ``scheme``'s workers on ``nodes`` nodes that survives the most node losses (the module's
    docstring gives the search), and its survival."""
    approximate = not scheme.exact  # (an exact code's residual after a loss it cannot decode is no aim)
    best = survival(scheme, spread(scheme.n, nodes))
    sets = 2**nodes
    pairs = scheme.n * (scheme.n - 1) // 2
    if best.survives >= nodes - 1 or pairs * sets > SEARCH_BUDGET:
        return best
    improved = True
    while improved:
        improved = False
        for a, b in combinations(range(scheme.n), 2):
            if best.node_of[a] == best.node_of[b]:
                continue
            trial = list(best.node_of)
            trial[a], trial[b] = trial[b], trial[a]
            candidate = survival(scheme, trial)
            if candidate.score(approximate) > best.score(approximate):
                best, improved = candidate, True
                if best.survives >= nodes - 1:
                    return best
    return best
