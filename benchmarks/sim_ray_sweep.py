"""A sweep's tasks on a local Ray instance (`gcbench simulate --ray`) against `--jobs 2`, in one process.

Both runs stream the same scenario (24 tasks by default: 2 sweep points x 3 variants x 4 seeds, both engines)
to results directories, and the benchmark asserts the tables and the summary are the same. It reports each
run's wall time (the median of ``--repeats`` alternating runs, since these machines are shared and noisy),
the overhead per task, (Ray wall - jobs-2 wall) / tasks (of the medians, and the median of each pair's
difference), and Ray's own cost per task: the wall time of
``--noops`` no-op tasks, sent at once and gathered, divided by their number. Ray is started (and its workers
warmed by one run) before anything is timed, as a long sweep would amortise it; the start is reported apart.

    python benchmarks/sim_ray_sweep.py
    python benchmarks/sim_ray_sweep.py --iterations 5000 --repeats 5
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from gcbench.scenario import load_scenario
from gcbench.sim.runner import stream_points

SWEEP = """\
name: ray-sweep-benchmark
workers: 12
iterations: {iterations}
seeds: [0, 1, 2, 3]
compute: {{per_partition: {{distribution: shifted_exponential, shift: 0.1, rate: 10}}}}
straggling: {{model: independent, probability: 0.2, slowdown: 5}}
variants:
  - {{label: uncoded, scheme: uncoded, policy: wait_all}}
  - {{scheme: cr, s: 2, policy: {{name: fastest_k, k: 9}}}}
  - {{label: 4-async, scheme: uncoded, policy: {{name: k_async, k: 4}}}}
sweep: {{straggling.slowdown: [2, 8]}}
"""


def timed_run(points, out: Path, on_ray: bool) -> float:
    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    running = stream_points(points, out, jobs=None if on_ray else 2, on_ray=on_ray)
    running.summary().to_csv(out / "summary.csv", index=False, float_format="%.17g")
    return time.perf_counter() - began


def assert_same(a: Path, b: Path) -> None:
    for name in ("iterations", "workers"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(a / f"{name}.parquet"), pd.read_parquet(b / f"{name}.parquet"), check_exact=True
        )
    assert (a / "summary.csv").read_bytes() == (b / "summary.csv").read_bytes(), "the summaries differ"


def noop_seconds(count: int) -> float:
    """Ray's wall time per no-op task, ``count`` sent at once and gathered (after one warm-up round)."""
    import ray

    noop = ray.remote(num_cpus=1)(lambda: None)
    ray.get([noop.remote() for _ in range(count)])
    began = time.perf_counter()
    ray.get([noop.remote() for _ in range(count)])
    return (time.perf_counter() - began) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--noops", type=int, default=200)
    args = parser.parse_args()
    from gcbench.real.ray.start import start_ray

    with tempfile.TemporaryDirectory(prefix="sim-ray-") as folder:
        path = Path(folder) / "sweep.yaml"
        path.write_text(SWEEP.format(iterations=args.iterations))
        points = load_scenario(path)
        tasks = sum(len(p.scenario.variants) * len(p.scenario.seeds) for p in points)
        began = time.perf_counter()
        start_ray(None)
        started = time.perf_counter() - began
        warm = timed_run(points, Path(folder) / "ray", on_ray=True)  # Ray's workers start and import gcbench
        walls: dict[str, list[float]] = {"jobs 2": [], "ray": []}
        for _ in range(args.repeats):
            walls["jobs 2"].append(timed_run(points, Path(folder) / "jobs2", on_ray=False))
            walls["ray"].append(timed_run(points, Path(folder) / "ray", on_ray=True))
        assert_same(Path(folder) / "ray", Path(folder) / "jobs2")
        noop = noop_seconds(args.noops)
    jobs2, ray = statistics.median(walls["jobs 2"]), statistics.median(walls["ray"])
    size = sum(
        p.scenario.iterations * p.scenario.workers * len(p.scenario.variants) * len(p.scenario.seeds) for p in points
    )
    print(f"{tasks} tasks, {size:,} worker-iterations in all; results identical (asserted)")
    print(f"Ray start (local instance): {started:.2f} s; first Ray run (workers starting): {warm:.2f} s")
    for name, times in walls.items():
        each = ", ".join(f"{t:.3f}" for t in times)
        print(f"{name:>6}: median {statistics.median(times):.3f} s over {len(times)} runs ({each})")
    paired = statistics.median(r - j for r, j in zip(walls["ray"], walls["jobs 2"], strict=True)) / tasks
    print(f"overhead per task: ({ray:.3f} - {jobs2:.3f}) / {tasks} = {(ray - jobs2) / tasks * 1e3:.1f} ms; the median")
    print(f"  of the runs' paired differences / {tasks}: {paired * 1e3:.1f} ms")
    print(f"Ray dispatch per no-op task: {noop * 1e3:.2f} ms ({args.noops} at once)")


if __name__ == "__main__":
    main()
