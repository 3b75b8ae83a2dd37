"""Sequential gradient coding trained in the simulator on a serverless delay profile: the time to a target accuracy
of no coding, gradient coding (the repository's fewer-than-s rule and Tandon's), SR-SGC and M-SGC, delayed
gradients included, each at the parameters the authors' search picks on the same delays.

The cluster is the first ``--workers`` workers of the repository's ``sam-gc-cnn_profile_est_desktop_long``
profile (AWS Lambda, 30 rounds, replayed in a loop) under its load model (the base-load profile plus the design's
load times base_comp.pkl's slope), with the authors' round rule (``relative_deadline``, mu). For each design the
search (gcbench/testing/sgc_replay.py, every admissible parameter) picks the fastest over ``--jobs`` jobs; then one
scenario trains them all in the simulator (softmax on synthetic data, as scenarios/trained_sweep.yaml) and
`gcbench simulate` reports the simulated seconds to the target accuracy. Every design trains on the same
mini-batches: the batch is the least common multiple of 8n and M-SGC's k = n((W - 1)(lambda + 1) + B) partitions.

    python benchmarks/sgc_training.py [--repository DIR] [--region Canada] [--workers 32] [--mu 1.0]
                                      [--code cyclic_mds] [--iterations 300] [--target 0.9] [--out DIR]

Real-valued codes are ill conditioned at n = 256 beyond a few stragglers (gcbench refuses them), so the search
keeps the fastest parameters gcbench builds; ``--workers 256 --code fr`` runs the whole profile with FR's code.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
FOLDER = "delay_profiles/sam-gc-cnn_profile_est_desktop_long"
PROFILE = "w256-n30-l0_000-b2048-cno_forloop-{region}.pkl"


def best(design: str, delays, jobs: int, mu: float, base_compute: float, usable) -> tuple:
    """The fastest parameters of ``design`` on the (workers x rounds) base-load delays that ``usable`` accepts."""
    from gcbench.testing.sgc_replay import search

    found = sorted(search(design, delays, jobs, mu, 0.0, base_compute), key=lambda row: row[2])
    return next((params, runtime) for params, _, runtime, _ in found if usable(params))


def buildable(name: str, n: int, s: int, **params) -> bool:
    """Whether gcbench builds the scheme (a real-valued code at large n and s may be ill conditioned)."""
    from gcbench.coding import SchemeParameterError, make_scheme

    try:
        make_scheme(name, n=n, s=s, **params)
    except SchemeParameterError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", type=Path, default=ROOT.parent / "Sequential-Gradient-Coding-2")
    parser.add_argument("--region", default="Canada")
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--mu", type=float, default=1.0)
    parser.add_argument("--jobs", type=int, default=20, help="jobs the parameter search weighs (30 rounds profiled)")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument(
        "--code",
        default="cyclic_mds",
        choices=("cyclic_mds", "fr", "cr"),
        help="the gradient code of GC, of SR-SGC's jobs and of M-SGC's groups (fr: always well conditioned, (s+1) | n)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    folder = args.repository / FOLDER
    profile = folder / PROFILE.format(region=args.region)
    for path in (profile, folder / "base_comp.pkl"):
        if not path.is_file():
            raise SystemExit(f"skipped: {path} is absent (give a clone of the repository with --repository).")

    from gcbench.coding.sequential import tolerated
    from gcbench.models.delay_profiles import read_base_compute, read_profile

    n, mu = args.workers, args.mu
    delays = read_profile(profile).T[:n]  # the first n workers, as the trace replays them
    base_compute = read_base_compute(folder / "base_comp.pkl", args.region)
    code = args.code
    gc, gc_runtime = best("gc", delays, args.jobs, mu, base_compute, lambda p: buildable(code, n, p[0]))
    tandon, tandon_runtime = best("gc_tandon", delays, args.jobs, mu, base_compute,
                                  lambda p: buildable(code, n, p[0]))  # fmt: skip
    sr, sr_runtime = best("sr_sgc", delays, args.jobs, mu, base_compute,
                          lambda p: p[2] < n and buildable(code, n, tolerated(*p)))  # fmt: skip
    m, m_runtime = best("m_sgc", delays, args.jobs, mu, base_compute,
                        lambda p: p[2] < n and buildable("m_sgc", n, p[2], burst=p[0], window=p[1], lam=p[2],
                                                         code=code))  # fmt: skip
    B, W, lam = sr
    mB, mW, mlam = m
    batch = math.lcm(8 * n, n * ((mW - 1) * (mlam + 1) + mB))
    rule = {"name": "relative_deadline", "mu": mu}
    variants = [
        {"label": "no coding", "scheme": "uncoded", "policy": "wait_all"},
        {"label": f"GC s={gc[0]} (fewer than s)", "scheme": code, "s": gc[0],
         "policy": {**rule, "fewer_than_s": True}},
        {"label": f"GC s={tandon[0]} (Tandon)", "scheme": code, "s": tandon[0], "policy": rule},
        {"label": f"SR-SGC B={B} W={W} lam={lam}", "scheme": "sr_sgc", "s": tolerated(B, W, lam), "burst": B,
         "window": W, "lam": lam, "code": code, "policy": rule},
        {"label": f"M-SGC B={mB} W={mW} lam={mlam}", "scheme": "m_sgc", "s": mlam, "burst": mB, "window": mW,
         "lam": mlam, "code": code, "policy": rule},
    ]  # fmt: skip
    scenario = {
        "name": "sgc_training", "workers": n, "iterations": args.iterations, "seeds": [0], "stale_work": "abandon",
        "gradient": {"length": 30730, "dtype": "float32"},
        "compute": {"trace": {"path": str(profile), "load_scaling": "base_compute", "base_load": 0.0,
                              "base_compute": {"path": str(folder / "base_comp.pkl"), "region": args.region}}},
        "network": {"latency": 0.0, "bandwidth": None},
        "variants": variants,
        "training": {"in_simulator": True, "dataset": "synthetic", "model": "softmax", "batch_size": batch,
                     "learning_rate": 0.00003, "eval_every": 5, "target_accuracy": args.target},
    }  # fmt: skip
    out = args.out or Path(tempfile.mkdtemp(prefix="sgc_training-"))
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sgc_training.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    print(f"{profile.name}: the first {n} workers, mu = {mu}; search over {args.jobs} jobs (runtimes under the "
          f"repository's rules): GC {gc_runtime:.3f} s at s={gc[0]}, Tandon GC {tandon_runtime:.3f} s at "
          f"s={tandon[0]}, SR-SGC {sr_runtime:.3f} s at {sr}, M-SGC {m_runtime:.3f} s at {m}; "
          f"batch {batch}")  # fmt: skip
    command = [sys.executable, "-m", "gcbench", "simulate", str(path), "--out", str(out / "run"), "--force"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    summary = pd.read_csv(out / "run" / "summary.csv")
    columns = ["variant", "mean", "final_accuracy", "time_to_target"]
    print(f"trained {args.iterations} rounds (softmax, synthetic data); simulated seconds to {args.target:.0%} "
          f"test accuracy:")  # fmt: skip
    print(summary[columns].to_string(index=False, float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
