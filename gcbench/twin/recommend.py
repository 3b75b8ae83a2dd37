"""Which scheme for this cluster (docs/recommend.md): the candidates (gcbench/twin/candidates.py) simulated on one
set of draws (common random numbers: every candidate sees the same seeds, so their differences are not noise),
ranked by mean iteration time with 95% CIs (exact, approximate and stale candidates apart), or, where the scenario
trains in the simulator, by the time to its target accuracy (all together); each with its speedup over uncoded and
a one-line reason."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gcbench.errors import GcbenchError
from gcbench.results.summary import mean_confidence_interval
from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario
from gcbench.twin.attribution import attribution_table
from gcbench.twin.candidates import KINDS, REFERENCE, Candidate, uncoded_candidate

DEFAULT_ITERATIONS = 2000
COLUMNS = {
    "rank": "1 for the best; exact, approximate and stale candidates are ranked apart unless the scenario trains",
    "candidate": "the candidate's label: scheme(s=...)/policy",
    "scheme": "registered scheme name",
    "s": "stragglers the scheme tolerates",
    "policy": "aggregation policy (with k for fastest_k and k_async)",
    "kind": "exact (every update the full, fresh gradient), approximate, or stale (a pipelined or sequential code)",
    "metric": "what ranks it: mean iteration seconds, or seconds to the target accuracy",
    "value": "the metric's value (inf: never reached the target)",
    "ci_low": "its 95% confidence interval, lower end (over seeds, or 10 batch means of one seed)",
    "ci_high": "upper end",
    "p99": "99th percentile iteration seconds",
    "exact_share": "share of iterations whose decode was exact",
    "speedup": "uncoded's value over this candidate's",
    "reason": "why it ranks where it does, in a line",
}


def recommend(scenario: Scenario, candidates: list[Candidate], iterations: int = DEFAULT_ITERATIONS,
              progress: Callable[[int, int], None] | None = None) -> tuple[pd.DataFrame, dict]:  # fmt: skip
    """The ranked table (``COLUMNS``, best first) and what it was ranked on (metric, seeds, iterations, target,
    the reference's chronic workers)."""
    trains = scenario.training.in_simulator
    target = scenario.training.target_accuracy
    if trains and target is None:
        raise GcbenchError(
            "the scenario trains in the simulator, so recommend ranks by the time to training.target_accuracy; "
            "give one (a fraction of 1), or set training.in_simulator: false to rank by iteration time."
        )
    seeds = list(scenario.seeds)
    reference = next((c for c in candidates if c.variant.display_label() == REFERENCE), None)
    if reference is None:  # filtered out: simulated all the same, for the speedups and the chronic workers
        reference = uncoded_candidate(scenario)
    rows, chronic, reference_value = [], {}, np.nan
    for candidate in [reference, *[c for c in candidates if c is not reference]]:
        single = candidate.scenario(scenario, iterations)
        recorders = [_simulate(single, seed) for seed in seeds]
        row = _row(candidate, recorders, seeds, target if trains else None)
        if candidate is reference:
            reference_value = row["value"]
            chronic = _chronic_workers(single, recorders[0], seeds[0])
            if candidate not in candidates:
                continue
        row["signature"] = hashlib.sha1(np.concatenate([r.duration for r in recorders]).tobytes()).hexdigest()
        rows.append((candidate, row))
        if progress is not None:
            progress(len(rows), len(candidates))
    rows, merged = _merged(rows)
    table = pd.DataFrame([row for _, row in rows])
    table["speedup"] = reference_value / table["value"]
    table["reason"] = [_reason(c, row, scenario.workers, chronic) + _same(c, merged) for c, row in rows]
    table = _ranked(table, apart=not trains)
    basis = {
        "metric": table["metric"].iloc[0],
        "seeds": seeds,
        "iterations": iterations,
        "target_accuracy": target if trains else None,
        "chronic_workers": {str(w): share for w, share in chronic.items()},
        "candidates": len(table),
        "merged": {label: [m.variant.display_label() for m in same] for label, same in merged.items()},
        "near_ties": near_ties(table),
        "kinds": list(dict.fromkeys(table["kind"])),
    }
    return table[list(COLUMNS)], basis


def _merged(rows: list[tuple[Candidate, dict]]) -> tuple[list[tuple[Candidate, dict]], dict]:
    """One row for the candidates of one kind whose every iteration took the same time on the common draws: the
    s a scheme's timing does not depend on (bcc's), or one code under two names (the heterogeneous code at equal
    speeds is FR; ignoring s stragglers is waiting for the fastest n - s): the first, with those it stands for.
    So no two rows of the ranking are the same candidate, and a near tie is between codes that differ."""
    kept, merged, first = [], {}, {}
    for candidate, row in rows:
        key = (candidate.kind, candidate.delay, row.pop("signature"))  # (a later update is not alike)
        if key in first:
            merged.setdefault(first[key], []).append(candidate)
            continue
        first[key] = candidate.variant.display_label()
        kept.append((candidate, row))
    return kept, merged


def _same(candidate: Candidate, merged: dict) -> str:
    same = merged.get(candidate.variant.display_label(), [])
    if not same:
        return ""
    scheme = candidate.variant.scheme
    if candidate.delay and all(c.variant.scheme == scheme for c in same):  # the same s, other (burst, window, lambda)
        tuples = [tuple(c.variant.scheme_params()[k] for k in ("burst", "window", "lam")) for c in same]
        return f" ((burst, window, lam) = {', '.join(str(t).replace(' ', '') for t in tuples)} run the same)"
    alike = [c for c in same if c.variant.scheme == scheme and c.variant.policy == candidate.variant.policy
             and c.placement == candidate.placement]  # fmt: skip
    others = [c.variant.display_label() for c in same if c not in alike]
    parts = [f"s = {', '.join(str(c.variant.s) for c in alike)} run the same"] if alike else []
    if others:
        parts.append(f"{', '.join(others)} run{'s' if len(others) == 1 else ''} the same iterations")
    return f" ({'; '.join(parts)})"


def _simulate(scenario: Scenario, seed: int):
    from gcbench.sim.engines import engine_for, simulate_with

    variant = scenario.variants[0]
    return simulate_with(engine_for(scenario, variant), scenario, variant, scheme_for(scenario, variant), seed)


def _row(candidate: Candidate, recorders: list, seeds: list[int], target: float | None) -> dict:
    variant = candidate.variant
    durations = np.concatenate([r.duration for r in recorders])
    policy = variant.policy.name + (f"(k={variant.policy.k})" if hasattr(variant.policy, "k") else "")
    row = {
        "candidate": variant.display_label(), "scheme": variant.scheme, "s": variant.s, "policy": policy,
        "kind": candidate.kind,
        "p99": float(np.quantile(durations, 0.99)),
        "exact_share": float(np.mean(np.concatenate([r.exact for r in recorders]))),
    }  # fmt: skip
    if target is None:
        frame = pd.DataFrame({"seed": np.repeat(seeds, [len(r.duration) for r in recorders]), "duration": durations})
        low, high = mean_confidence_interval(frame)
        row.update(metric="mean iteration seconds", value=float(durations.mean()), ci_low=low, ci_high=high)
        return row
    reached = np.array([_time_to(r, target) for r in recorders])
    value, low, high = _mean_interval(reached)
    row.update(metric=f"seconds to {target:.1%} accuracy", value=value, ci_low=low, ci_high=high)
    return row


def _time_to(recorder, target: float) -> float:
    hits = np.flatnonzero(np.nan_to_num(recorder.accuracy, nan=-1.0) >= target)
    return float(recorder.end[hits[0]]) if hits.size else np.inf


def _mean_interval(values: np.ndarray) -> tuple[float, float, float]:
    """Mean over seeds with a Student-t 95% interval (inf where a seed never reached it; NaN interval with one)."""
    if not np.isfinite(values).all():
        return np.inf, np.nan, np.nan
    centre = float(values.mean())
    if len(values) < 2:
        return centre, np.nan, np.nan
    from scipy.special import stdtrit

    half = stdtrit(len(values) - 1, 0.975) * values.std(ddof=1) / np.sqrt(len(values))
    return centre, max(centre - half, 0.0), centre + half


def _chronic_workers(scenario: Scenario, recorder, seed: int) -> dict[int, float]:
    """The uncoded reference's chronic workers (gcbench/twin/attribution.py) with their shares of its slowdown."""
    n = scenario.workers
    label = scenario.variants[0].display_label()
    keys = {"variant": label, "point": 0, "seed": seed}
    iterations = pd.DataFrame({**keys, **recorder.iteration_columns()})
    loads = np.ones(n)
    workers = pd.DataFrame({**keys, **recorder.worker_columns(loads)})
    table = attribution_table(iterations, workers, {"scenario": scenario.model_dump(mode="json")})
    chronic = table[table["pattern"] == "chronic"]
    return {int(row.worker): float(row.share) for row in chronic.itertuples()}


NEAR = 0.10  # a candidate predicted within 10% of its kind's best is a near tie: a calibrated twin errs by more


def near_ties(table: pd.DataFrame) -> dict[str, list[str]]:
    """Per kind (or for all, ranked together), the candidates predicted within ``NEAR`` of the best, best first."""
    ties = {}
    for kind, rows in table.groupby("kind" if table["rank"].duplicated().any() else np.zeros(len(table)), sort=False):
        best = rows["value"].min()
        close = rows[(rows["value"] <= best * (1 + NEAR)) & np.isfinite(rows["value"])]
        if len(close) > 1:
            ties[str(kind) if isinstance(kind, str) else "all"] = close.sort_values("rank")["candidate"].tolist()
    return ties


def _ranked(table: pd.DataFrame, apart: bool) -> pd.DataFrame:
    order = ["kind", "value", "p99", "candidate"] if apart else ["value", "p99", "candidate"]
    table = table.sort_values(order, key=lambda c: c.map(KINDS.index) if c.name == "kind" else c)
    table = table.reset_index(drop=True)
    table["rank"] = table.groupby("kind").cumcount() + 1 if apart else np.arange(1, len(table) + 1)
    return table


def _reason(candidate: Candidate, row: dict, n: int, chronic: dict[int, float]) -> str:
    variant, s = candidate.variant, candidate.variant.s
    policy = variant.policy
    if variant.display_label() == REFERENCE:
        return f"no redundancy: every iteration waits for the slowest of the {n} workers"
    if variant.scheme == "uncoded":  # fastest-k or k-async over uncoded partitions
        dropped = n - policy.k
        how = "waits for the fastest" if policy.synchronous else "each update applies the first"
        return f"{how} {policy.k} of {n} and drops the other {dropped}'s partitions: approximate, no extra compute"
    if candidate.delay:
        p = variant.scheme_params()
        return (
            f"tolerates up to {p['lam']} distinct straggler{'s' if p['lam'] != 1 else ''} in any {p['window']} rounds "
            f"(bursts of {p['burst']}); "
            f"pays {candidate.load:.3g}x the compute of uncoded; each job's exact gradient applied {candidate.delay} "
            f"round{'s' if candidate.delay > 1 else ''} late"
        )
    parts = []
    if not candidate.exact and not candidate.pipelined:  # it does not tolerate stragglers: it leaves them out
        share = row["exact_share"]
        how = ("an approximate code that decoded exactly in every simulated iteration" if share == 1 else
               f"approximately (exactly in {share:.0%} of the simulated iterations)")  # fmt: skip
        parts.append(f"decodes without waiting for its slowest workers: {how}")
    elif chronic and s >= len(chronic):
        named = ", ".join(f"worker {w}" for w in chronic)
        parts.append(f"tolerates any {s} straggler{'s' if s > 1 else ''} per iteration, {named}'s chronic slowness "
                     "among them")  # fmt: skip
    else:
        parts.append(f"tolerates any {s} straggler{'s' if s > 1 else ''} per iteration")
    if candidate.pipelined:
        steps = "1 step" if s == 1 else f"{s} steps"
        parts.append(
            f"computes {candidate.load:.3g} partition a step and decodes from cached gradients up to {steps} old"
        )
    elif candidate.exact:
        parts.append(f"pays {candidate.load:.3g}x the compute of uncoded for it")
    else:
        parts.append(f"computes {candidate.load:.3g}x what uncoded does")
    if candidate.m > 1:
        parts.append(f"uploads 1/{candidate.m} of a gradient per message")
    return "; ".join(parts)


def cluster_of(source: Path, overrides: dict[str, Any]) -> tuple[Scenario, str]:
    """The scenario to weigh candidates on: the file's, or a real run's calibrated one, with the command line's
    ``overrides``; and where it came from, in words."""
    from gcbench.scenario.loading import load_scenario, read_yaml

    overrides = dict(overrides)
    if source.is_dir():
        from gcbench.scenario.loading import with_overrides
        from gcbench.twin.calibrate import calibrate
        from gcbench.twin.measured import read_measured

        scenario = calibrate([read_measured(source)]).scenario
        if overrides:
            scenario = with_overrides(scenario, source, overrides)
        return scenario, f"{source} (calibrated)"
    if not source.exists():
        raise GcbenchError(f"{source}: no such scenario file or results directory.")
    sweep = read_yaml(source).get("sweep")
    if isinstance(sweep, dict) and set(sweep) & set(overrides):  # a field the command line fixes is not swept
        overrides["sweep"] = {path: values for path, values in sweep.items() if path not in overrides}
    points = load_scenario(source, overrides)
    if len(points) > 1:
        raise GcbenchError(
            f"{source}: sweeps {', '.join(points[0].values)} over {len(points)} points, and recommend weighs "
            "candidates on one cluster; fix the swept fields with --set PATH=VALUE."
        )
    return points[0].scenario, str(source)


def write_recommendation(table: pd.DataFrame, basis: dict, origin: str, scenario: Scenario, top: int,
                         out: Path) -> list[Path]:  # fmt: skip
    """recommend.json (the basis, the top ``top`` per kind and every row), recommend.csv and the figure of every
    candidate's prediction, in ``out``; the paths written."""
    import json

    from gcbench.plot import style
    from gcbench.plot.make import save_figure
    from gcbench.plot.recommend import candidates_figure

    records = json.loads(table.to_json(orient="records"))  # NaN and inf as null
    document = {"source": origin, "scenario": scenario.model_dump(mode="json"), **basis,
                "top": [r for r in records if r["rank"] <= top], "ranked": records}  # fmt: skip
    path = out / "recommend.json"
    path.write_text(json.dumps(document, indent=1) + "\n")
    table.to_csv(out / "recommend.csv", index=False, float_format="%.6g")
    style.apply()
    figure = save_figure(candidates_figure(table, top), out / "recommend", ("png", "pdf"), "")
    return [path, out / "recommend.csv", *figure.files]
