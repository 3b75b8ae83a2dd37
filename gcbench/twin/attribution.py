"""Who slowed a run down, and what it cost (docs/attribution.md): per variant, sweep point and worker, how slow the
worker was against the median worker, how often it straggled, ended an iteration or was absorbed by the code,
whether its slowness was chronic or transient, and a what-if replay of the run without its slowness.

It reads results files only (simulated and real runs alike); the what-if rebuilds the variant's scheme and policy
from run.json's scenario and replays the recorded arrival times through the policy's stop rule, the rule both the
simulator's engines and the real master follow (gcbench/master/replay.py, stepped as calibrate's replay steps it,
with one worker changed).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gcbench.errors import GcbenchError
from gcbench.master.replay import replayed_stops, stop_rule
from gcbench.results import slowness as slow
from gcbench.results.schema import WORKER_COLUMNS
from gcbench.results.store import read_results
from gcbench.scenario.build import scheme_for, variant_labelled
from gcbench.scenario.loading import point_scenario
from gcbench.scenario.schema import Scenario, Variant
from gcbench.twin.measured import recorded_message_arrivals

WINDOW = 20  # iterations in the moving average that tells chronic from transient slowness
CHRONIC_SHARE = 0.5  # chronic: straggled in at least half of the iterations of at least half of the windows

COLUMNS = {
    "variant": "the variant's label",
    "point": "the sweep point",
    "worker": "worker index",
    "rank": "1 for the worker whose slowness cost the most (by share, then by how often it straggled)",
    "iterations": "iterations read (every seed's)",
    "compute_p50": "median seconds of compute per partition",
    "compute_p99": "99th percentile of the same",
    "p50_ratio": "compute_p50 over the median worker's",
    "p99_ratio": "compute_p99 over the median worker's",
    "straggled": "share of its jobs it straggled in: slower than 1.5 times the iteration's median worker, or failed",
    "ended": "share of iterations its result was the last one the master used (the one that ended the wait)",
    "absorbed": "share of its jobs it straggled in and the iteration ended without its result",
    "pattern": "chronic, transient or none (the moving-average rule of docs/attribution.md)",
    "bursts": "runs of consecutive iterations it straggled in",
    "longest_burst": "the longest such run, in iterations",
    "mean_burst": "their mean length",
    "speedup_without": "the run's replayed time over the same replay with this worker never slower than the median",
    "share": "the part of the run's whole slowdown (replayed time minus that with no worker slower than the "
    "median) that this worker's slowness accounts for",
    "slowdown": "the variant's replayed time over that with no worker slower than the median (every row alike)",
    "replay_gap": "the replayed time over the recorded one, minus 1: how closely the replay follows the run",
    "share_low": "the share's lower bound: a block bootstrap over the iterations, one-sided at 5% / workers "
    "(Bonferroni over the variant's workers); NaN below 200 iterations (every seed's), too few to judge",
    "share_high": "its upper bound, alike",
    "stands_out": "True where share_low is above the workers' mean share: more than independent, identically "
    "distributed workers would account for (each would be expected to take the mean share)",
    "node": "the worker's node (-1: the run had no topology); on a node row, the node",
    "level": "worker, or node: a row for a node whose workers' slowness together costs more than any one "
    "worker's (its share and speedup_without are its workers' capped together; straggled: the share of "
    "iterations in which any of them straggled; the per-worker columns NaN)",
}
BLOCK = 10  # iterations per bootstrap block: slowness that persists (Markov bursts) mostly stays within one
RESAMPLES = 400
MIN_BLOCKS = 20  # a bootstrap over fewer blocks understates the shares' spread: no verdict below it


@dataclass(frozen=True)
class Seed:
    """One seed's iterations of one variant at one point, as (iterations, workers) grids."""

    straggled: np.ndarray
    present: np.ndarray  # it had a job: computed something, or failed (an asynchronous update's idle workers not)
    used: np.ndarray
    ended: np.ndarray
    per_partition: np.ndarray
    response: np.ndarray  # arrival − start of each worker's job (inf: never arrived)
    messages: np.ndarray | None  # arrival − start per message id, for a scheme sending several per worker
    durations: np.ndarray  # the recorded duration of each iteration (each row of the grids)


def attribute(path: Path) -> pd.DataFrame:
    """The attribution table of the results directory ``path``, refused in one sentence where it cannot be made."""
    path = Path(path)
    if not path.is_dir():
        raise GcbenchError(f"{path}: no such results directory.")
    try:
        iterations, workers, metadata = read_results(path)
        messages_path = path / "messages.parquet"
        messages = pd.read_parquet(messages_path) if messages_path.is_file() else None
    except (OSError, ValueError) as error:
        raise GcbenchError(f"{path}: cannot read its results ({error.__class__.__name__}: {error}).") from None
    if workers is None:
        raise GcbenchError(f"{path}: has no workers.parquet; attribution needs every worker's times.")
    missing = [column for column in WORKER_COLUMNS if column not in workers.columns]
    if missing:
        raise GcbenchError(f"{path}: its workers table lacks the columns {', '.join(missing)}.")
    if "scenario" not in metadata:
        raise GcbenchError(f"{path}: has no run.json with its scenario, so its schemes and policies are unknown.")
    return attribution_table(iterations, workers, metadata, messages, str(path))


def attribution_table(iterations: pd.DataFrame, workers: pd.DataFrame, metadata: dict,
                      messages: pd.DataFrame | None = None, label: str = "the run") -> pd.DataFrame:  # fmt: skip
    """Per variant, sweep point and worker, the columns of ``COLUMNS`` (docs/attribution.md)."""
    points = metadata.get("sweep_points") or [{}]
    try:
        scenarios = [point_scenario(metadata["scenario"], values, label) for values in points]
    except GcbenchError as error:
        raise GcbenchError(f"{label}: run.json's scenario cannot be rebuilt ({error}).") from None
    finished = iterations[iterations["end"].notna()]
    rows = []
    for (name, point), frame in finished.groupby(["variant", "point"], sort=False):
        scenario = scenarios[int(point)]
        variant = _variant(scenario, str(name), label)
        keys = (workers["variant"] == name) & (workers["point"] == point)
        if not keys.any():  # (a variant without worker rows has nothing to attribute)
            continue
        sent = None if messages is None else messages[(messages["variant"] == name) & (messages["point"] == point)]
        rows += _variant_rows(scenario, variant, frame, workers[keys], sent)
    if not rows:
        raise GcbenchError(f"{label}: no iteration finished, so there is nothing to attribute.")
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _variant(scenario: Scenario, label: str, where: str) -> Variant:
    variant = variant_labelled(scenario, label)
    if variant is None:
        raise GcbenchError(f"{where}: its variant '{label}' is not in its run.json scenario.")
    return variant


def _variant_rows(scenario: Scenario, variant: Variant, iterations: pd.DataFrame, workers: pd.DataFrame,
                  messages: pd.DataFrame | None) -> list[dict]:  # fmt: skip
    n = scenario.workers
    scheme = scheme_for(scenario, variant)
    several = scheme.messages_per_worker > 1 and messages is not None
    seeds = []
    for seed, frame in iterations.groupby("seed", sort=True):
        rows = workers[(workers["seed"] == seed) & workers["iteration"].isin(frame["iteration"])]
        rows = rows.sort_values(["iteration", "worker"])
        sent = messages[messages["seed"] == seed] if several else None
        seeds.append(_seed(frame.sort_values("iteration"), rows, sent, n, len(scheme.message_owner)))
    rule = stop_rule(variant.policy)
    node_of = _nodes(workers, n)
    groups = [] if node_of is None else [np.flatnonzero(node_of == k) for k in np.unique(node_of)]
    groups = [group for group in groups if len(group) > 1]  # (a node of one worker is that worker's row)
    stop = lambda a: replayed_stops(rule, scheme, a)  # noqa: E731
    replay = _what_if(seeds, stop, scheme, n, groups) if rule is not None else None
    rows = _rows(variant.display_label(), int(iterations["point"].iloc[0]), seeds, replay, n, node_of)
    nodes = sorted(_node_rows(rows, seeds, replay, groups, node_of), key=lambda row: -row["share"])
    return nodes + rows  # (a node's row first: rank 0, above its workers')


def _nodes(workers: pd.DataFrame, n: int) -> np.ndarray | None:
    """Each worker's node, where the workers table says (a run with a topology), else None."""
    if "node" not in workers.columns:
        return None
    nodes = workers.groupby("worker")["node"].first().reindex(range(n))
    return None if nodes.isna().any() else nodes.to_numpy(dtype=int)


def _node_rows(rows: list[dict], seeds: list[Seed], replay: dict | None, groups: list[np.ndarray],
               node_of: np.ndarray | None) -> list[dict]:  # fmt: skip
    """A row for each node whose workers' slowness, capped together, costs more than any one worker's: slowness
    the node's workers share (a slow host, a throttled NIC), which no worker's own row shows whole."""
    if replay is None or not groups:
        return []
    most = max(np.nan_to_num(row["share"], nan=0.0) for row in rows)
    straggled = np.vstack([s.straggled for s in seeds])
    out = []
    for g, workers in enumerate(groups):
        cost = _cost({**replay, "without": replay["without_nodes"]}, g)
        if not cost["share"] > most + 1e-9:
            continue
        first = rows[0]  # (what every row of the variant shares)
        row = dict.fromkeys(COLUMNS, np.nan) | {
            "variant": first["variant"], "point": first["point"], "iterations": first["iterations"], "worker": -1,
            "rank": 0, "pattern": "", "stands_out": False, "node": int(node_of[workers[0]]), "level": "node",
            "straggled": float(straggled[:, workers].any(axis=1).mean()),
        }  # fmt: skip
        out.append(row | cost)
    return out


def _seed(iterations: pd.DataFrame, rows: pd.DataFrame, messages: pd.DataFrame | None, n: int,
          message_count: int) -> Seed:  # fmt: skip
    failed = slow.failed_grid(rows, n)
    per_partition = slow.compute_per_partition(rows, n)
    straggled = slow.straggled(slow.slowness(per_partition), failed)
    used = slow.grid(rows, rows["used"].to_numpy(dtype=bool), n, fill=False).astype(bool)
    starts = iterations.set_index("iteration")["start"]
    start = rows["iteration"].map(starts).to_numpy(dtype=float)
    arrived = rows["arrival"].notna().to_numpy()  # (a worker back from a crash may still deliver, and did)
    response = slow.grid(rows, np.where(arrived, rows["arrival"].to_numpy(dtype=float) - start, np.inf), n, np.inf)
    grid_messages = None
    if messages is not None:
        grid_messages = recorded_message_arrivals(messages, np.unique(rows["iteration"]), starts, message_count)
    ended = slow.ended_by(slow.used_arrivals(rows, n, messages))
    present = np.isfinite(per_partition) | failed
    durations = iterations.set_index("iteration")["duration"].reindex(np.unique(rows["iteration"])).to_numpy(float)
    return Seed(straggled, present, used, ended, per_partition, response, grid_messages, durations)


def _what_if(seeds: list[Seed], stop, scheme, n: int,
             groups: list[np.ndarray] = ()) -> dict[str, np.ndarray | float] | None:  # fmt: skip
    """The replayed time of the run as recorded (``base``), with every worker at most the iteration's median
    worker (``ideal``), and with each one worker so (``without``, one per worker), and each group of ``groups``
    so together (``without_nodes``: a node's workers): sums over seeds, and per iteration (``per_iteration``:
    base, ideal and each worker's without, in columns, every seed's iterations in turn) for the shares'
    intervals. None where no iteration can be replayed."""
    owner = scheme.message_owner
    base, ideal, without, recorded, replayable = 0.0, 0.0, np.zeros(n), 0.0, 0
    without_nodes = np.zeros(len(groups))
    per_iteration = []
    for seed in seeds:
        typical = np.median(seed.response, axis=1)[:, None]  # inf only where most workers never answered
        capped = np.minimum(seed.response, typical)

        def arrivals(times: np.ndarray, which: np.ndarray, seed=seed, typical=typical) -> np.ndarray:
            """Message arrival times with the workers in ``which`` capped at the median worker's job time."""
            if seed.messages is None:
                return times[:, owner]
            return np.where(which[owner][None, :], np.minimum(seed.messages, typical), seed.messages)

        nobody, everyone = np.zeros(n, bool), np.ones(n, bool)
        replayed = stop(arrivals(seed.response, nobody))
        # an iteration the replay cannot finish (a result it lacks) keeps its recorded time in every replay
        redone = np.isfinite(replayed)

        def each(stops: np.ndarray, redone=redone, seed=seed) -> np.ndarray:
            return np.where(redone, stops, seed.durations)

        def without_slowness(workers, seed=seed, capped=capped, arrivals=arrivals, each=each) -> np.ndarray:
            """The replay with ``workers`` (a worker, or a node's) at most the median worker's job time."""
            which = np.zeros(n, bool)
            which[workers] = True
            times = seed.response.copy()
            times[:, workers] = capped[:, workers]
            return each(stop(arrivals(times, which)))

        columns = [each(replayed), each(stop(arrivals(capped, everyone)))]
        columns += [without_slowness([w]) for w in range(n)]
        for g, workers in enumerate(groups):
            without_nodes[g] += float(without_slowness(workers).sum())
        seed_columns = np.column_stack(columns)
        per_iteration.append(seed_columns)
        base += float(seed_columns[:, 0].sum())
        ideal += float(seed_columns[:, 1].sum())
        without += seed_columns[:, 2:].sum(axis=0)
        recorded += float(seed.durations.sum())
        replayable += int(redone.sum())
    if not replayable:  # no iteration's results finish it under the rule (no arrival recorded): no what-if
        return None
    return {"base": base, "ideal": ideal, "without": without, "recorded": recorded,
            "per_iteration": np.vstack(per_iteration), "without_nodes": without_nodes}  # fmt: skip


def share_intervals(per_iteration: np.ndarray, level: float = 0.05, block: int = BLOCK,
                    resamples: int = RESAMPLES) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Each worker's share of the slowdown, its lower and upper bounds, each one-sided at ``level`` / n
    (Bonferroni over the n workers: the chance that any worker's share is flagged by luck stays under ``level``):
    a block bootstrap over the iterations (``per_iteration``'s rows: base, ideal, then each worker's without),
    blocks of ``block`` consecutive iterations, seeded, so a table is the same on every run."""
    n = per_iteration.shape[1] - 2
    blocks = np.add.reduceat(per_iteration, np.arange(0, len(per_iteration), block), axis=0)
    gained = blocks[:, [0]] - blocks[:, 2:]  # per block and worker: what its slowness cost
    lost = blocks[:, 0] - blocks[:, 1]  # per block: what every worker's slowness cost
    draws = np.random.default_rng(0).integers(0, len(blocks), (resamples, len(blocks)))
    counts = np.zeros((resamples, len(blocks)))
    np.add.at(counts, (np.arange(resamples)[:, None], draws), 1.0)
    totals = counts @ lost
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(totals[:, None] > 0, (counts @ gained) / totals[:, None], 0.0)
    alpha = level / n
    return np.quantile(shares, alpha, axis=0), np.quantile(shares, 1 - alpha, axis=0)


def _rows(label: str, point: int, seeds: list[Seed], replay: dict | None, n: int,
          node_of: np.ndarray | None = None) -> list[dict]:  # fmt: skip
    straggled = np.vstack([s.straggled for s in seeds])
    present = np.maximum(np.vstack([s.present for s in seeds]).sum(axis=0), 1)
    used = np.vstack([s.used for s in seeds])
    per_partition = np.vstack([s.per_partition for s in seeds])
    ended = np.concatenate([s.ended for s in seeds])
    p50, p99 = _quantile(per_partition, 0.5), _quantile(per_partition, 0.99)
    median50, median99 = np.nanmedian(p50), np.nanmedian(p99)
    rows = []
    for w in range(n):
        own = [s.straggled[s.present[:, w], w] for s in seeds]  # its own jobs, in order
        bursts = [length for jobs in own for length in burst_lengths(jobs)]
        row = {
            "variant": label, "point": point, "worker": w, "iterations": len(straggled),
            "compute_p50": p50[w], "compute_p99": p99[w],
            "p50_ratio": p50[w] / median50, "p99_ratio": p99[w] / median99,
            "straggled": straggled[:, w].sum() / present[w], "ended": (ended == w).mean(),
            "absorbed": (straggled[:, w] & ~used[:, w]).sum() / present[w],
            "pattern": pattern(own),
            "bursts": len(bursts), "longest_burst": max(bursts, default=0),
            "mean_burst": float(np.mean(bursts)) if bursts else 0.0,
            "node": -1 if node_of is None else int(node_of[w]), "level": "worker",
        }  # fmt: skip
        row.update(_cost(replay, w))
        rows.append(row)
    _intervals(rows, replay)
    order = sorted(range(n), key=lambda w: (-np.nan_to_num(rows[w]["share"], nan=-1.0), -rows[w]["straggled"], w))
    for rank, w in enumerate(order, start=1):
        rows[w]["rank"] = rank
    return [rows[w] for w in order]


def _cost(replay: dict | None, w: int) -> dict[str, float]:
    if replay is None:
        return dict.fromkeys(("speedup_without", "share", "slowdown", "replay_gap"), np.nan)
    base, ideal, without = replay["base"], replay["ideal"], replay["without"][w]
    total = base - ideal
    return {
        "speedup_without": base / without if without > 0 else np.nan,
        "share": (base - without) / total if total > 1e-12 * base else 0.0,
        "slowdown": base / ideal if ideal > 0 else np.nan,
        "replay_gap": base / replay["recorded"] - 1.0 if replay["recorded"] > 0 else np.nan,
    }


def _intervals(rows: list[dict], replay: dict | None) -> None:
    """Each row's share interval, and whether its worker stands out: its interval above the workers' mean share."""
    if replay is None or len(replay["per_iteration"]) < MIN_BLOCKS * BLOCK:  # (no what-if, or too few iterations)
        for row in rows:
            row.update(share_low=np.nan, share_high=np.nan, stands_out=False)
        return
    low, high = share_intervals(replay["per_iteration"])
    mean = float(np.mean([row["share"] for row in rows]))
    for row, lo, hi in zip(rows, low, high, strict=True):
        row.update(share_low=float(lo), share_high=float(hi), stands_out=bool(lo > mean + 1e-12))


def _quantile(values: np.ndarray, q: float) -> np.ndarray:
    out = np.full(values.shape[1], np.nan)
    for w in range(values.shape[1]):
        finite = values[np.isfinite(values[:, w]), w]
        if finite.size:
            out[w] = np.quantile(finite, q)
    return out


def burst_lengths(straggled: np.ndarray) -> list[int]:
    """Lengths of the runs of consecutive True in one worker's iterations."""
    padded = np.concatenate([[False], np.asarray(straggled, bool), [False]])
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return (edges[1::2] - edges[::2]).tolist()


def pattern(straggled_per_seed: list[np.ndarray], window: int = WINDOW) -> str:
    """chronic: in at least ``CHRONIC_SHARE`` of the moving windows of ``window`` iterations (fewer where a seed
    ran fewer) the worker straggled in at least ``CHRONIC_SHARE`` of the iterations; transient: it straggled, but
    not so; none: it never straggled."""
    if not any(s.any() for s in straggled_per_seed):
        return "none"
    slow_windows = windows = 0
    for straggled in straggled_per_seed:
        width = min(window, len(straggled))
        if width == 0:
            continue
        averages = np.convolve(straggled.astype(float), np.ones(width) / width, mode="valid")
        slow_windows += int((averages >= CHRONIC_SHARE - 1e-12).sum())
        windows += len(averages)
    return "chronic" if windows and slow_windows >= CHRONIC_SHARE * windows else "transient"


def attribute_runs(runs: list, out: Path) -> tuple[dict[Path, pd.DataFrame], list[Path], list[str]]:
    """For runs being plotted (gcbench.plot.runs.Run), each one's attribution table, written to
    ``out/<run>-attribution.csv``; the tables by run path, the files written, and a note for each run that has
    none (no workers table, no scenario to rebuild its policies from)."""
    tables, written, notes = {}, [], []
    for run in runs:
        if run.workers is None:
            notes.append(f"{run.path} has no workers.parquet: no attribution of its slowness to workers")
            continue
        try:
            table = attribute(run.path)
        except GcbenchError as error:
            notes.append(f"no attribution for {run.path}: {error}")
            continue
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{run.stem}-attribution.csv"
        table.to_csv(path, index=False, float_format="%.6g")
        tables[run.path] = table
        written.append(path)
    return tables, written, notes
