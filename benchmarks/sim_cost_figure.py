"""What a simulation costs, against n and iterations, with and without the workers table: docs/sim_cost.png.

Each point is one `gcbench simulate` after loading (one variant, `fr` s = 3 with
independent stragglers, one seed: every task simulated, its tables streamed to
Parquet in a temporary folder, the summary), timed in CPU seconds of the whole
process (the Parquet writer thread included), the best of ``--repeats``. CPU
seconds, not wall: on a machine shared with other jobs the wall clock counts the
wait for a core; on an idle one the wall time is at most this (the writer
overlaps the simulation where a second core is free). The NumPy reference
(an iterations x n matrix of shifted-exponential times and its k-th smallest per
row, benchmarks/sim_benchmark.py) is timed in the same process.

    python benchmarks/sim_cost_figure.py [--sizes 12,100,1000] [--iterations 300,3000,30000] [--out docs/sim_cost.png]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from gcbench.scenario.loading import SweepPoint
from gcbench.scenario.schema import Scenario
from gcbench.sim.runner import stream_points

COMPUTE = {"per_partition": {"distribution": "shifted_exponential", "shift": 0.1, "rate": 10.0}}
STRAGGLING = {"model": "independent", "probability": 0.1, "slowdown": 5.0}


def simulate_seconds(n: int, iterations: int, with_workers: bool, repeats: int) -> float:
    """CPU seconds of the best of ``repeats`` runs."""
    data = {"name": "cost", "workers": n, "iterations": iterations, "compute": COMPUTE,
            "variants": [{"scheme": "fr", "s": 3}], "straggling": STRAGGLING}  # fmt: skip
    points = [SweepPoint({}, Scenario.model_validate(data))]
    return best_of(lambda folder: stream_points(points, folder, jobs=1, with_workers=with_workers).summary(), repeats)


def reference_seconds(n: int, iterations: int, repeats: int) -> float:
    rng = np.random.default_rng(0)
    return best_of(lambda _: np.partition(0.1 + rng.exponential(0.1, (iterations, n)), n - 4, axis=1), repeats)


def best_of(run, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        folder = Path(tempfile.mkdtemp(prefix="gcbench-cost-"))
        try:
            start = time.process_time()
            run(folder / "run")
            best = min(best, time.process_time() - start)
        finally:
            shutil.rmtree(folder)
    return best


def figure(rows: list[tuple[int, int, float, float, float]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.8))
    sizes = sorted({r[0] for r in rows})
    for colour, n in zip(plt.rcParams["axes.prop_cycle"].by_key()["color"], sizes, strict=False):
        mine = [r for r in rows if r[0] == n]
        its = [r[1] for r in mine]
        left.loglog(its, [r[2] for r in mine], "o-", color=colour, label=f"n = {n}, workers table")
        left.loglog(its, [r[3] for r in mine], "s--", color=colour, label=f"n = {n}, --no-workers-table")
    left.set(xlabel="iterations", ylabel="CPU seconds", title="one variant, one seed")
    left.legend(fontsize=7)
    largest = max(r[1] for r in rows)
    at = [r for r in rows if r[1] == largest]
    for column, style, label in ((2, "o-", "workers table"), (3, "s--", "--no-workers-table"), (4, "^:", "NumPy ref.")):
        right.loglog([r[0] for r in at], [r[column] * 1e9 / (r[0] * r[1]) for r in at], style, label=label)
    right.set(xlabel="workers n", ylabel="ns per worker-iteration", title=f"{largest:,} iterations")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=80)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="12,100,1000", help="cluster sizes n (multiples of 4), comma-separated")
    parser.add_argument("--iterations", default="300,3000,30000", help="iterations, comma-separated")
    parser.add_argument("--repeats", type=int, default=2, help="runs per point (the best is kept)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "docs" / "sim_cost.png")
    args = parser.parse_args()
    rows = []
    print(f"{'n':>5} {'iterations':>10} {'with table s':>13} {'without s':>10} {'NumPy ref s':>12} {'ns/wi with':>11}")
    for n in map(int, args.sizes.split(",")):
        for iterations in map(int, args.iterations.split(",")):
            with_table = simulate_seconds(n, iterations, True, args.repeats)
            without = simulate_seconds(n, iterations, False, args.repeats)
            reference = reference_seconds(n, iterations, args.repeats)
            rows.append((n, iterations, with_table, without, reference))
            per = with_table * 1e9 / (n * iterations)
            print(f"{n:>5} {iterations:>10} {with_table:>13.3f} {without:>10.3f} {reference:>12.4f} {per:>11.1f}")
    figure(rows, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
