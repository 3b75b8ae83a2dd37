"""Peak memory of `gcbench simulate` with the workers table, in bytes per worker-iteration, and its Parquet size.

Each case runs in a child process (what `gcbench simulate` does after loading the
scenario: the tasks streamed to Parquet, then the summary), and the parent reads
the child's peak resident set from ``os.wait4`` (ru_maxrss, kB on Linux). The
child also reports its resident set after its imports, before simulating, so the
part the simulation adds is printed too. A worker-iteration is one row of the
workers table (iterations x n). Target: at most 64 bytes per
worker-iteration at peak, and n = 1000 x 100,000 completing on a 24 GB machine.

    python benchmarks/sim_memory.py [--cases 100x100000,1000x100000] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCHEME = {"scheme": "fr", "s": 3}  # decodable (the default policy); (s + 1) divides n = 100 and 1000
COMPUTE = {"per_partition": {"distribution": "shifted_exponential", "shift": 0.1, "rate": 10.0}}
STRAGGLING = {"model": "independent", "probability": 0.1, "slowdown": 5.0}


def child(n: int, iterations: int, out: Path) -> None:
    """Simulate one (variant, seed) with the workers table into ``out``; print the baseline RSS as JSON."""
    from gcbench.scenario.loading import SweepPoint
    from gcbench.scenario.schema import Scenario
    from gcbench.sim.runner import stream_points

    data = {"name": "memory", "workers": n, "iterations": iterations, "compute": COMPUTE, "variants": [SCHEME]}
    scenario = Scenario.model_validate({**data, "straggling": STRAGGLING})
    baseline = resident_bytes()
    began = time.perf_counter()
    running = stream_points([SweepPoint({}, scenario)], out, jobs=1, with_workers=True)
    running.summary()
    print(json.dumps({"baseline": baseline, "seconds": time.perf_counter() - began}))


def resident_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def measure(n: int, iterations: int, folder: Path) -> dict:
    out = folder / f"n{n}"
    command = [sys.executable, __file__, "--child", f"{n}x{iterations}", "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    printed = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"the child for n = {n} x {iterations} failed with exit status {process.returncode}")
    report = json.loads(printed.strip().splitlines()[-1])
    on_disk = {name: (out / name).stat().st_size for name in ("iterations.parquet", "workers.parquet")}
    return {"peak": usage.ru_maxrss * 1024, **report, **on_disk}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="100x100000,1000x100000", help="n x iterations, comma-separated")
    parser.add_argument("--out", type=Path, default=None, help="folder for the results (default: a temporary one)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, iterations = map(int, args.child.split("x"))
        child(n, iterations, args.out)
        return
    print(f"{'n x iterations':>16} {'peak RSS':>10} {'B/wi peak':>10} {'B/wi added':>11} {'Parquet B/wi':>13} {'s':>7}")
    with tempfile.TemporaryDirectory(prefix="gcbench-memory-", dir=args.out) as folder:
        for case in args.cases.split(","):
            n, iterations = map(int, case.split("x"))
            found = measure(n, iterations, Path(folder))
            rows = n * iterations
            peak, added = found["peak"] / rows, (found["peak"] - found["baseline"]) / rows
            disk = (found["workers.parquet"] + found["iterations.parquet"]) / rows
            print(
                f"{case:>16} {found['peak'] / 2**30:>8.2f} GiB {peak:>10.1f} {added:>11.1f} {disk:>13.1f}"
                f" {found['seconds']:>7.1f}",
                flush=True,
            )
            for name in ("workers.parquet", "iterations.parquet"):
                (Path(folder) / f"n{n}" / name).unlink()


if __name__ == "__main__":
    main()
