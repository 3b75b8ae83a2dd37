"""Attribution and `gcbench recommend` against a real cluster: a chronic slow worker and random stragglers.

1. A probe run of uncoded training and FR (s = 2; two loads, so calibration can tell the per-partition compute from
   the fixed part) on torch.distributed worker processes here (or Ray), uncoded's slowness attributed to workers:
   the chronic worker must be named first, with its share of the slowdown.
2. `gcbench recommend PROBE` (calibrated from the probe) ranks the candidates.
3. Its top exact choice, the next four exact candidates and uncoded, run for real: one run per seed, the variants
   taking turns of ``--turn`` iterations (interleaved, so the machine's drift is shared), ``--seeds`` runs. The
   regret: the top choice's measured mean iteration time over the best measured, minus 1 (target: within 5%).

    python benchmarks/recommend_real.py [--backend torch|ray] [--workers 6] [--probe 200] [--iterations 100]
        [--seeds 0,1,2] [--turn 20] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

CLUSTER = """\
name: chronic
description: one chronic slow worker (2) and random stragglers; softmax on synthetic data
workers: {workers}
iterations: {probe}
seeds: [0]
compute:
  per_partition: {{distribution: deterministic, value: 0.005}}
  overhead:  # random stragglers: one job in four sleeps 0.08 s more
    distribution: mixture
    components:
      - {{weight: 0.75, of: {{distribution: deterministic, value: 0.0}}}}
      - {{weight: 0.25, of: {{distribution: deterministic, value: 0.08}}}}
straggling: {{model: fixed, workers: [2], delay: 0.05, delay_scaling: load}}  # worker 2: 50 ms more per partition
training: {{dataset: synthetic, model: softmax, batch_size: {batch}, learning_rate: 0.00003, eval_every: 1000,
           checkpoint_every: {turn}, device: cpu, timeout: 120}}
variants:  # the probe: two loads, so calibration can tell the per-partition compute from the fixed part
  - {{label: uncoded, scheme: uncoded, policy: wait_all}}
  - {{label: probe FR s=2, scheme: fr, s: 2}}
"""


def gcbench(*args: str) -> str:
    command = [sys.executable, "-m", "gcbench", *args]
    print("+", " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def variant_yaml(row: dict) -> str:
    """A ranked candidate of recommend.json as a YAML flow mapping."""
    name, _, k = row["policy"].partition("(k=")
    policy = f"{{name: {name}, k: {k.rstrip(')')}}}" if k else name
    d = f", d: {row['s'] + 1}" if "d=" in row["candidate"] else ""
    return f"{{label: '{row['candidate']}', scheme: {row['scheme']}, s: {row['s']}, policy: {policy}{d}}}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="torch", choices=["torch", "ray"])
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--probe", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--turn", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp()) / "recommend-real")
    args = parser.parse_args()

    from gcbench.twin.attribution import attribute

    args.out.mkdir(parents=True, exist_ok=True)
    scenario = args.out / "chronic.yaml"
    batch = 10 * args.workers  # 10 samples a partition: the real compute is small beside the stragglers
    scenario.write_text(CLUSTER.format(workers=args.workers, probe=args.probe, batch=batch, turn=args.turn))
    probe, picked, measured = args.out / "probe", args.out / "recommend", args.out / "verify"
    for old in (probe, picked, measured):  # (a real run's directory holds checkpoints --force does not replace)
        shutil.rmtree(old, ignore_errors=True)
    gcbench("run", str(scenario), "--backend", args.backend, "--out", str(probe), "--force")
    table = attribute(probe)
    print("-- attribution of the probe (uncoded):")
    shown = ["worker", "pattern", "straggled", "ended", "p50_ratio", "share", "speedup_without"]
    print(table[table["variant"] == "uncoded"].head(3)[shown].to_string(index=False))

    print(gcbench("recommend", str(probe), "--out", str(picked), "--force", "--top", "5"))
    ranked = json.loads((picked / "recommend.json").read_text())["ranked"]
    exact = [row for row in ranked if row["kind"] == "exact"][:5]
    chosen = exact + [row for row in ranked if row["candidate"] == "uncoded" and row not in exact]
    variants = "[" + ", ".join(variant_yaml(row) for row in chosen) + "]"
    gcbench("run", str(scenario), "--backend", args.backend, "--out", str(measured), "--force",
            "--iterations", str(args.iterations), "--seeds", args.seeds, "--set", f"variants={variants}")  # fmt: skip
    iterations = pd.read_parquet(measured / "iterations.parquet")
    per_seed = iterations.groupby(["variant", "seed"])["duration"].mean().unstack()
    means = per_seed.mean(axis=1)
    predicted = {row["candidate"]: row["value"] for row in chosen}
    print(f"-- measured ({args.backend}, {args.workers} workers, {args.iterations} iterations x seeds {args.seeds}, "
          f"turns of {args.turn}) against predicted mean iteration seconds:")  # fmt: skip
    for row in chosen:
        label = row["candidate"]
        seeds = " ".join(f"{v:.4f}" for v in per_seed.loc[label])
        print(f"   {label:<22} predicted {predicted[label]:.4f}  measured {means[label]:.4f}  (per seed {seeds})"
              f"  error {predicted[label] / means[label] - 1:+.1%}")  # fmt: skip
    top = chosen[0]["candidate"]
    best = means.idxmin()
    regret = means[top] / means[best] - 1
    print(f"top choice {top}: measured {means[top]:.4f}; best measured {best}: {means[best]:.4f}; regret {regret:.1%} "
          f"(target: within 5%)")  # fmt: skip


if __name__ == "__main__":
    main()
