"""The wire, fitted: each node's latency and uplink bandwidth from the uploads of runs that sent messages of two
sizes or more (docs/calibration.md, "On a wire").

A message of b bytes ready at r reaches its node's link at r + L_k and then crosses it, shared fairly with the
other messages on it and through the master's ingress (gcbench/models/fair_share.py), as the simulator models
it. One size cannot tell L_k from b / B_k (any split of one upload time fits), so the fit needs variants whose
messages differ in size: two compressors (none and fp16), or a code and its CCE variant. Every message of an
iteration is replayed through the fluid model with candidate links, from its measured ready time, and the links
that bring the replayed arrivals closest to the measured ones (least squares, robust to a few outliers) are the
fit. Workers on the master's node cross no link: their uploads give node 0's latency alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from gcbench.coding import Scheme
from gcbench.errors import GcbenchError
from gcbench.models.fair_share import finish_times
from gcbench.models.wire import MASTER_NODE
from gcbench.scenario.build import scheme_for
from gcbench.scenario.draws import message_bytes, message_delay
from gcbench.twin.measured import MeasuredRun

INF = float("inf")


@dataclass(frozen=True)
class LinkFit:
    """Per node (index: the node; without a topology, one link every worker has its own copy of): the latency
    and the uplink's bandwidth (inf for the master's node, which has no link), and the sizes the fit saw."""

    latency: np.ndarray
    bandwidth: np.ndarray
    sizes: list[int]
    messages: int
    unfairness: float = 0.0  # how unequally a link's flows share it (fitted where messages shared a link)
    burst: np.ndarray | None = None  # each node's uplink's token bucket, bytes: the run's record, not fitted


@dataclass
class _Group:
    """One variant's messages: each row an iteration, each column a worker (NaN: no message arrived)."""

    size: float
    codec: float  # seconds the variant's compressing and decompressing add to each message, as the model has it
    ready: np.ndarray
    arrival: np.ndarray
    link_of: np.ndarray  # each worker's uplink: its node, or -1 on the master's (no link); a variant's own by_code


def message_sizes(run: MeasuredRun, variants: list[str]) -> dict[str, tuple[int, float]]:
    """Bytes of each variant's messages, and the seconds its compressor's modelled costs add to each (one
    message a worker; variants that send several are left out)."""
    sizes, scenario = {}, run.scenario
    for variant in scenario.variants:
        label = variant.display_label()
        if label not in variants:
            continue
        scheme: Scheme = scheme_for(scenario, variant)
        if scheme.messages_per_worker == 1:
            codec = message_delay(scenario, scheme, variant.compressor) - scenario.network.latency
            sizes[label] = (message_bytes(scenario, scheme, variant.compressor), codec)
    return sizes


def links_section(fit: LinkFit, scenario) -> dict:
    """The scenario's ``network`` links as fitted: one link's latency and bandwidth each worker has, or node 0's
    latency and every other node's own (the master's ingress as the runs had it)."""
    if scenario.topology is None:
        return {"latency": float(fit.latency[0]), "bandwidth": float(fit.bandwidth[0])}
    nodes = {
        k: {"bandwidth": float(fit.bandwidth[k]), "latency": float(fit.latency[k])}
        | ({} if fit.burst is None or not fit.burst[k] else {"burst": float(fit.burst[k])})
        for k in range(1, len(fit.bandwidth))
        if np.isfinite(fit.bandwidth[k])
    }
    section = {"latency": float(fit.latency[MASTER_NODE]), "nodes": nodes, "unfairness": fit.unfairness}
    if scenario.network.master.ingress is not None:
        section["master"] = {"ingress": scenario.network.master.ingress}
    return section


def describe_links(fit: LinkFit, scenario) -> str:
    """One sentence: the fitted links, per node."""
    each = [f"latency {fit.latency[0] * 1e3:.3f} ms, {fit.bandwidth[0] / 1e6:.4g} MB/s each worker"] if (
        scenario.topology is None
    ) else [f"node 0 (the master's) latency {fit.latency[0] * 1e3:.3f} ms"] + [
        f"node {k} latency {fit.latency[k] * 1e3:.3f} ms, {fit.bandwidth[k] / 1e6:.4g} MB/s"
        for k in range(1, len(fit.bandwidth)) if np.isfinite(fit.bandwidth[k])
    ]  # fmt: skip
    if scenario.topology is not None:
        each.append(f"unfairness {fit.unfairness:.2f} (0: a link's flows share it equally)")
    if fit.burst is not None:
        bursts = sorted({f"{b:,.0f}" for b in fit.burst[1:] if b})
        each.append(f"uplinks' token buckets of {' and '.join(bursts)} bytes, as run.json records them")
    sizes = " and ".join(f"{size:,}" for size in fit.sizes)
    return f"links fitted to {fit.messages} messages of {sizes} bytes: {'; '.join(each)}."


def fit_links(runs: list[MeasuredRun], variants: list[str] | None = None) -> LinkFit:
    """Each node's latency and uplink bandwidth, fitted to the runs' uploads; refused in one sentence where the
    runs' messages have one size only."""
    scenario = runs[0].scenario
    n, topology = scenario.workers, scenario.topology
    links = 1 if topology is None else topology.nodes  # without a topology: one link, each worker a copy of it
    groups = [group for run in runs for group in _groups(run, variants)]
    sizes = sorted({int(group.size) for group in groups})
    if len(sizes) < 2:
        raise GcbenchError(
            "calibrating the links needs messages of two sizes or more (latency and bandwidth cannot be told apart "
            f"from one), and the runs' messages all have {sizes[0] if sizes else 0:,} bytes; add a variant with "
            "another compressor (fp16, for example) or a CCE code."
        )
    ingress = scenario.network.master.ingress or INF
    # the buckets the emulated cluster's uplinks had (run.json): a message's first bytes crossed at once
    recorded = runs[0].bursts if topology is not None else None
    burst = None if recorded is None or len(recorded) != links or not any(recorded) else np.array(recorded)
    crossing = [k for k in range(links) if any((group.link_of == k).any() for group in groups)]
    local = any(bool((group.link_of < 0).any()) for group in groups)
    # messages share a link (a node's, or the ingress): the order they joined it in weighs (network.unfairness)
    most = max(((group.link_of == k).sum() for group in groups for k in crossing), default=0)
    shared = topology is not None and bool(most > 1 or ingress < INF)

    def unpack(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        latency, bandwidth = np.zeros(links), np.full(links, INF)
        for i, k in enumerate(crossing):
            latency[k], bandwidth[k] = values[2 * i], np.exp(values[2 * i + 1])
        return latency, bandwidth

    def residuals(values: np.ndarray) -> np.ndarray:
        latency, bandwidth = unpack(values)
        master = values[2 * len(crossing)] if local else 0.0
        unfairness = values[-1] if shared else 0.0
        errors = []
        for group in groups:
            delay = np.where(group.link_of < 0, master, latency[np.maximum(group.link_of, 0)])
            reach = np.where(np.isnan(group.arrival), INF, group.ready + (delay + group.codec))
            if topology is None:  # each worker its own copy of the one link
                node, rates = np.arange(n), np.full(n, bandwidth[0])
            else:
                node, rates = group.link_of, bandwidth
            replayed = finish_times(reach, group.size, node, rates, ingress, unfairness, burst)
            seen = ~np.isnan(group.arrival)
            errors.append((replayed - group.arrival)[seen])
        return np.concatenate(errors)

    start = np.append(_start(groups, crossing, local, shares=topology is not None), [0.0] * shared)
    bounds = ([0.0, np.log(1.0)] * len(crossing) + [0.0] * local + [0.0] * shared,
              [10.0, np.log(1e12)] * len(crossing) + [10.0] * local + [0.95] * shared)  # fmt: skip
    # plain least squares from the first guess, then a robust pass from there (a few outliers, a worker's hiccup,
    # weigh less); the robust loss alone, its gradient flat far from the fit, stalled short of it
    first = optimize.least_squares(residuals, start, bounds=bounds, x_scale="jac")
    fitted = optimize.least_squares(residuals, first.x, bounds=bounds, loss="soft_l1", f_scale=1e-3, x_scale="jac")
    latency, bandwidth = unpack(fitted.x)
    if local:
        latency[MASTER_NODE] = fitted.x[2 * len(crossing)]
    unfairness = float(fitted.x[-1]) if shared else 0.0
    seen = int(sum((~np.isnan(g.arrival)).sum() for g in groups))
    return LinkFit(latency, bandwidth, sizes, seen, unfairness, burst)


def _groups(run: MeasuredRun, variants: list[str] | None) -> list[_Group]:
    """Each (variant, seed, point)'s messages, a row an iteration."""
    chosen = run.variants if variants is None else [label for label in variants if label in run.variants]
    sizes = message_sizes(run, chosen)
    n, groups = run.scenario.workers, []
    uplinks = _uplinks(run.scenario)
    rows = run.workers[run.workers["variant"].isin(sizes)]
    for (label, _, _), frame in rows.groupby(["variant", "seed", "point"], sort=False):
        ready = frame.pivot(index="iteration", columns="worker", values="compute_end").reindex(columns=range(n))
        arrival = frame.pivot(index="iteration", columns="worker", values="arrival").reindex(columns=range(n))
        ready, arrival = ready.to_numpy(dtype=float, copy=True), arrival.to_numpy(dtype=float, copy=True)
        arrival[np.isnan(ready)] = np.nan
        ready = np.where(np.isnan(ready), 0.0, ready)
        size, codec = sizes[label]
        groups.append(_Group(float(size), codec, ready, arrival, uplinks[label]))
    return groups


def _uplinks(scenario) -> dict[str, np.ndarray]:
    """Each variant's workers' uplinks (their node, or -1 on the master's; without a topology, the one link), as
    the variant places them (``by_code``: each its own)."""
    from gcbench.scenario.build import placed

    n, uplinks = scenario.workers, {}
    for variant in scenario.variants:
        if scenario.topology is None:
            uplinks[variant.display_label()] = np.zeros(n, dtype=int)
            continue
        node_of = placed(scenario, scheme_for(scenario, variant)).topology.node_of(n)
        uplinks[variant.display_label()] = np.where(node_of == MASTER_NODE, -1, node_of)
    return uplinks


def _start(groups: list[_Group], crossing: list[int], local: bool, shares: bool) -> np.ndarray:
    """A first guess from the lines through each link's median uploads at each size, its workers' messages taken
    to share the link all the way (so the bandwidth is their count over the line's slope)."""
    values = []
    for k in crossing:
        on = [g for g in groups if (g.link_of == k).any()]
        points = [(g.size, np.nanmedian((g.arrival - g.ready)[:, g.link_of == k]) - g.codec) for g in on]
        points = [(size, upload) for size, upload in points if np.isfinite(upload)]
        sizes, uploads = np.array([p[0] for p in points]), np.array([p[1] for p in points])
        slope, latency = np.polyfit(sizes, uploads, 1) if len(set(sizes)) > 1 else (uploads.mean() / sizes.mean(), 0)
        sharing = max(int((g.link_of == k).sum()) for g in on) if shares else 1
        values += [min(max(latency, 0.0), 10.0), np.log(sharing / max(slope, 1e-12))]
    if local:
        uploads = np.concatenate([(g.arrival - g.ready - g.codec)[:, g.link_of < 0].ravel() for g in groups])
        values.append(min(max(float(np.nanmedian(uploads)), 0.0), 10.0))
    return np.array(values)
