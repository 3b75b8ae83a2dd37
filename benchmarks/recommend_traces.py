"""Attribution and `gcbench recommend` on the Alibaba PAI traces (cluster-trace-gpu-v2020, ten workers per job):
per job, the workers attribution names under uncoded training replaying the trace, and what recommend picks.

Reads ``../shared/data/traces/alibaba-pai-2020/job_{1..4}_norm.csv`` (or ``--traces DIR``) and says why it stops
where they are absent. Times are the trace's normalised mini-batch times (0..1000) in milliseconds.

    python benchmarks/recommend_traces.py [--traces DIR] [--max-s 4]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "data" / "traces" / "alibaba-pai-2020"
SCENARIO = """\
name: pai-job-{job}
workers: 10
iterations: {iterations}
compute:
  trace: {{path: {path}, columns: {{worker: worker, iteration: time, time: batch_time_norm}}, time_scale: 0.001,
          load_scaling: proportional}}
network: {{latency: 0.0005, bandwidth: 1.25e9}}
gradient: {{length: 11200000, dtype: float32}}
variants:
  - {{label: uncoded, scheme: uncoded, policy: wait_all}}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--max-s", type=int, default=4)
    args = parser.parse_args()
    files = sorted(args.traces.glob("job_*_norm.csv"))
    if not files:
        raise SystemExit(f"{args.traces}: no job_*_norm.csv here (the shared development data is absent); skipped.")

    from gcbench.scenario.loading import load_scenario
    from gcbench.twin.attribution import attribute
    from gcbench.twin.candidates import enumerate_candidates
    from gcbench.twin.recommend import recommend

    folder = Path(tempfile.mkdtemp())
    for path in files:
        job = path.stem.split("_")[1]
        iterations = int(pd.read_csv(path)["time"].nunique())
        scenario_file = folder / f"job{job}.yaml"
        scenario_file.write_text(SCENARIO.format(job=job, iterations=iterations, path=path.resolve()))
        out = folder / f"job{job}"
        command = [sys.executable, "-m", "gcbench", "simulate", str(scenario_file), "--out", str(out)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        table = attribute(out)
        named = table.head(3)
        print(f"== job {job} ({iterations} iterations): uncoded's slowdown {named['slowdown'].iloc[0]:.2f}x")
        for row in named.itertuples():
            print(f"   worker {row.worker}: {row.pattern}, straggled {row.straggled:.0%}, ended {row.ended:.0%} of "
                  f"iterations, p50 {row.p50_ratio:.2f}x p99 {row.p99_ratio:.2f}x the median worker, "
                  f"{row.share:.0%} of the slowdown (without it {row.speedup_without:.2f}x faster)")  # fmt: skip
        scenario = load_scenario(scenario_file)[0].scenario
        ranked, _ = recommend(scenario, enumerate_candidates(scenario, max_s=args.max_s), iterations)
        for kind, rows in ranked.groupby("kind", sort=False):
            best = rows.iloc[0]
            print(f"   recommend, {kind}: {best['candidate']} {best['value'] * 1000:.1f} ms per iteration "
                  f"({best['speedup']:.2f}x uncoded): {best['reason']}")  # fmt: skip


if __name__ == "__main__":
    main()
