"""Simulated seconds to a target accuracy per scheme, on the timing of two shipped scenarios, trained in the simulator.

The numbers of docs/coding.md's "Which scheme wins". Each case keeps a shipped scenario's cluster (workers,
compute, straggling, network, message size) and its variants, adds a pipelined (stale), an approximate and a
stochastic code, and trains softmax regression on synthetic data inside the simulator, as
scenarios/trained_sweep.yaml does:

- ``scenarios/stragglers.yaml`` at a mild (3x) and a severe (24x) slowdown;
- ``scenarios/heavy_tail.yaml`` at Pareto tail index 1.5 (infinite variance) and 2.5.

Each case runs twice, once per ``stale_work``: with ``abandon`` (the shipped scenarios' setting) the master
abandons a straggler's job when it moves on, which suits the exact codes but leaves a pipelined code's
gradients as old as the worker's last finished job; with ``finish`` every job completes, so a pipelined
gradient is at most s steps old, at the price of a straggler starting its next job late (every variant
pays it). For each case and sweep point it prints a Markdown table: per setting, the mean simulated
iteration, the simulated seconds to the target test accuracy (the end of the first evaluation, every 5
iterations, at or above it) and that time's speedup over uncoded training with the same setting, and the
largest staleness. Seed 0 only unless ``--seeds``.

    python benchmarks/scheme_family.py                 # about 10 minutes of CPU (one process)
    python benchmarks/scheme_family.py --jobs 2 --iterations 60
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from gcbench.results import summarize
from gcbench.scenario import load_scenario
from gcbench.sim.runner import simulate_points

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.9
TRAINING = {
    "in_simulator": True,
    "dataset": "synthetic",
    "model": "softmax",
    "batch_size": 240,
    "learning_rate": 0.00003,  # with momentum 0.9, as in scenarios/trained_sweep.yaml
    "eval_every": 5,
    "target_accuracy": TARGET,
}
ADDED = [  # beside each scenario's own variants: stale, approximate and stochastic codes
    {"label": "pipelined FR s=2", "scheme": "pipelined_fr", "s": 2},
    {"label": "pipelined CR s=2", "scheme": "pipelined_cr", "s": 2},
    {"label": "FRC d=3 s=6", "scheme": "frc", "s": 6, "d": 3},
    {"label": "SGC d=3 s=6", "scheme": "sgc", "s": 6, "d": 3},
]
CASES = {
    "stragglers": ("straggling.slowdown", [3, 24]),
    "heavy_tail": ("compute.per_partition.shape", [1.5, 2.5]),
}


def case_points(name: str, iterations: int, seeds: list[int], stale_work: str):
    """The scenario's sweep points with the simulator training, the added variants and the chosen sweep."""
    path = ROOT / "scenarios" / f"{name}.yaml"
    own = load_scenario(path)[0].scenario.variants
    variants = [v.model_dump(exclude_unset=True, exclude_none=True) for v in own] + ADDED
    column, values = CASES[name]
    overrides = {
        "iterations": iterations,
        "seeds": seeds,
        "stale_work": stale_work,
        "training": TRAINING,
        "variants": variants,
        "sweep": {column: values},
    }
    return load_scenario(path, overrides), column


def measured(name: str, args, stale_work: str) -> pd.DataFrame:
    """The case's summary with one setting, the largest staleness added, indexed by sweep value and variant."""
    points, column = case_points(name, args.iterations, args.seeds, stale_work)
    iterations, _ = simulate_points(points, jobs=args.jobs, with_workers=False)
    summary = summarize(iterations, [column], TARGET).set_index([column, "variant"], drop=False)
    summary["staleness_max"] = iterations.groupby([column, "variant"])["staleness"].max()
    return summary


def cells(rows: pd.DataFrame, variant: str) -> list[str]:
    """Mean iteration, seconds to target, speedup over uncoded to target (one setting, one sweep point)."""
    row, uncoded = rows.loc[variant], rows.loc["uncoded", "time_to_target"]
    if row.time_to_target != row.time_to_target:  # NaN: never reached
        return [f"{row['mean']:.3f}", "not reached", "-"]
    return [f"{row['mean']:.3f}", f"{row.time_to_target:.2f}", f"{uncoded / row.time_to_target:.2f}x"]


def table(runs: dict[str, pd.DataFrame], column: str) -> str:
    """One Markdown table per sweep point, a group of columns per stale_work setting."""
    blocks, first = [], next(iter(runs.values()))
    header = " | ".join(f"{k}: mean it. (s) | {k}: s to {TARGET:.0%} | {k}: speedup" for k in runs)
    for value in first[column].unique():
        lines = [
            f"{column} = {value}",
            "",
            f"| variant | {header} | staleness max |",
            "|---|" + "---:|" * (3 * len(runs) + 1),
        ]
        for variant in first.loc[value, "variant"]:
            numbers = [c for summary in runs.values() for c in cells(summary.loc[value], variant)]
            staleness = "/".join(f"{summary.loc[(value, variant), 'staleness_max']:.0f}" for summary in runs.values())
            lines.append(f"| {variant} | {' | '.join(numbers)} | {staleness} |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--seeds", type=lambda text: [int(s) for s in text.split(",")], default=[0])
    parser.add_argument("--jobs", type=int, default=1, help="parallel processes (default 1: a shared machine)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    args = parser.parse_args()
    for name in args.cases.split(","):
        began = time.perf_counter()
        runs = {stale_work: measured(name, args, stale_work) for stale_work in ("abandon", "finish")}
        print(f"## {name} ({args.iterations} iterations, seeds {args.seeds})\n")
        print(table(runs, CASES[name][0]))
        print(f"\n({time.perf_counter() - began:.0f} s of wall time)\n", flush=True)


if __name__ == "__main__":
    main()
