"""The twin's accuracy: calibrate from the iterations of uncoded and FR only, predict CR, cyclic-MDS, fastest-k
and a deadline policy; and the time `gcbench calibrate` takes on 100,000 worker rows.

Per (backend, scenario), by default one real run of every variant, the variants taking turns of ``--turn``
iterations, with ``--seeds`` replications (each real variant several times, so every measured mean has a 95% CI
over seeds): calibrated from uncoded's and FR s=1's iterations (``--variants``), the others are predicted. A shared
machine drifts between runs: two runs one after the other here differed by 20-33% in a job's compute at one load,
more than the 5% a prediction must meet, so the variants share the run and its drift. ``--separate-runs`` is the
other design: a run of uncoded and FR, then a run of the others. Then the legs (docs/calibration.md): replay
(each variant's mean within 1% of the measured), fitted, and predicted (mean within 5%, aim 2%;
p99 within 10%; the ranking kept wherever measured means differ by more than their 95% CIs). The last line
per (backend, scenario) says which targets held.

The calibration time is reported against a reference measured in the same process: simulating the same rows.

    python benchmarks/calibration.py [--backend torch|ray|both] [--scenario scenarios/cifar10.yaml ...]
        [--iterations 150] [--seeds 0,1] [--data-dir ../shared/data/cifar10-jpeg.tar.gz] [--out DIR]
        [--timing-only] [--cores N] [--reuse] [--device cuda] [--skip-timing] [--drop-first N] [--emulate]

``--cores``: the cores the workers shared, whose contention calibration models where they are fewer than the
workers (default: what each run recorded; runs before gcbench recorded it need it given); ``--reuse``
calibrates the runs already in ``--out`` again, without running them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "cifar10-jpeg.tar.gz"
CALIBRATE_FROM = ["uncoded", "FR s=1"]
# held-out policies a prediction run adds where its scenario has none of their kind
FASTEST_K = "{label: fastest 3, scheme: uncoded, policy: {name: fastest_k, k: 3, fallback: approximate}}"
DEADLINE = "{label: deadline 0.3 s, scheme: cr, s: 1, policy: {name: deadline, deadline: 0.3, fallback: approximate}}"


def real_run(scenario: Path, backend: str, out: Path, variants: list[str], args) -> Path:
    """`gcbench run` of the scenario with these variants (YAML flow mappings) into ``out`` (with ``--reuse``, a
    finished run already there is calibrated again instead)."""
    if args.reuse and (out / "iterations.parquet").is_file():
        print(f"+ reusing {out}", flush=True)
        return out
    command = [sys.executable, "-m", "gcbench", "run", str(scenario), "--backend", backend, "--out", str(out),
               "--iterations", str(args.iterations), "--seeds", args.seeds, "--force",
               "--set", f"variants=[{', '.join(variants)}]",
               "--set", f"training.checkpoint_every={args.turn}"]  # fmt: skip
    command += ["--data-dir", str(args.data_dir)] if args.data_dir else ["--dataset", "synthetic"]
    command += ["--device", args.device] if args.device else []
    command += ["--emulate"] if args.emulate else []
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return out


def flow(variant) -> str:
    """A variant as a YAML flow mapping (``--set variants=[...]``)."""
    import yaml

    data = {k: v for k, v in variant.model_dump(mode="json").items() if v is not None}
    return yaml.safe_dump(data, default_flow_style=True, width=10_000).strip()


def accuracy(scenario: Path, backend: str, args, calibrate_from=CALIBRATE_FROM, other_policies=True) -> list[str]:
    """The legs of the twin's accuracy on one scenario: calibrated from ``calibrate_from``'s iterations, every other
    variant predicted (with ``other_policies``, a fastest-k and a deadline variant added where the scenario has
    none), and the targets held or missed."""
    from gcbench.scenario import load_scenario
    from gcbench.twin.calibrate import calibrate, scenario_yaml
    from gcbench.twin.evaluate import compare, ranking, replay
    from gcbench.twin.measured import read_measured

    out = args.out / f"{scenario.stem}-{backend}"
    variants = load_scenario(scenario)[0].scenario.variants
    calibrating = [flow(v) for v in variants if v.display_label() in calibrate_from]
    held_out = [flow(v) for v in variants if v.display_label() not in calibrate_from]
    policies = {v.policy.name for v in variants}
    if other_policies:
        held_out += [FASTEST_K] * ("fastest_k" not in policies) + [DEADLINE] * ("deadline" not in policies)
    if args.separate_runs:  # the design: a run of the calibrating variants, another of the held-out ones
        calib = real_run(scenario, backend, out / "calibrate", calibrating, args)
        predict = read_measured(real_run(scenario, backend, out / "predict", held_out, args))
        calibration = calibrate([read_measured(calib)], cores=args.cores)
        fitted_on = read_measured(calib)
    else:  # one run, every variant taking turns: the machine's drift between runs is shared by all of them
        both = read_measured(real_run(scenario, backend, out / "interleaved", calibrating + held_out, args))
        both = _without_first(both, args.drop_first)
        calibration = calibrate([both], calibrate_from, args.cores)
        fitted_on, predict = _only(both, calibrate_from), _only(both, None, calibrate_from)
    (out / "calibrated.yaml").write_text(scenario_yaml(calibration))
    legs = {"replay": pd.concat([replay(fitted_on), replay(predict)]),
            "fitted": compare(calibration.scenario, fitted_on),
            "predicted": compare(calibration.scenario, predict)}  # fmt: skip
    how = "separate runs" if args.separate_runs else f"one run, variants taking turns of {args.turn} iterations"
    cores = calibration.scenario.compute.cores
    shared = f"the workers sharing {cores} cores" if cores else "no contention modelled"
    lines = [f"== {scenario.name} on {backend}: calibrated from {', '.join(calibrate_from)}; "
             f"{args.iterations} iterations x seeds {args.seeds} per variant; {how}; {shared}"]  # fmt: skip
    for name, table in legs.items():
        lines.append(f"-- {name}")
        for row in table.itertuples():
            long_run = f"  long run {row.error_long_run:+.1%}" if np.isfinite(row.error_long_run) else ""
            lines.append(f"   {row.variant:<16} measured {row.measured_mean:.4f} [{row.ci_low:.4f}, {row.ci_high:.4f}]"
                         f"  simulated {row.simulated_mean:.4f}  mean {row.error_mean:+.1%}  p50 {row.error_p50:+.1%}"
                         f"  p99 {row.error_p99:+.1%}{long_run}")  # fmt: skip
        tau, kept = ranking(table)
        lines.append(f"   Kendall's tau {tau:.2f}; ranking kept where CIs are apart: {kept}")
    predicted = legs["predicted"]
    verdict = {
        "replay within 1%": bool((legs["replay"]["error_mean"].abs() <= 0.01).all()),
        "predicted means within 5%": bool((predicted["error_mean"].abs() <= 0.05).all()),
        "predicted p99 within 10%": bool((predicted["error_p99"].abs() <= 0.10).all()),
        "ranking kept": ranking(predicted)[1],
    }
    lines.append("   targets: " + "; ".join(f"{what}: {'yes' if held else 'NO'}" for what, held in verdict.items()))
    return lines


def _without_first(run, count: int):
    """The run without each variant's first ``count`` iterations (a run from before the workers warmed up
    before the clock started, whose first iteration holds each process's start-up: docs/gpu.md)."""
    if count == 0:
        return run
    from dataclasses import replace

    keep = lambda frame: frame[frame["iteration"] >= count]  # noqa: E731
    return replace(run, iterations=keep(run.iterations), workers=keep(run.workers))


def _only(run, keep: list[str] | None, drop: list[str] | None = None):
    """The run restricted to some variants (its tables and scenario alike)."""
    from dataclasses import replace

    labels = [label for label in run.variants if (keep is None or label in keep) and label not in (drop or [])]
    variants = [v for v in run.scenario.variants if v.display_label() in labels]
    scenario = run.scenario.model_copy(update={"variants": variants})
    pick = lambda frame: frame[frame["variant"].isin(labels)]  # noqa: E731
    return replace(run, scenario=scenario, iterations=pick(run.iterations), workers=pick(run.workers))


def calibration_time(rows: int = 100_000) -> list[str]:
    """`calibrate` on a simulated run of ``rows`` worker rows, against simulating those rows (same process)."""
    from gcbench.scenario.loading import SweepPoint
    from gcbench.scenario.schema import Scenario
    from gcbench.sim.tasks import Task, run_task
    from gcbench.twin.calibrate import calibrate
    from gcbench.twin.measured import measured_run

    workers = 10
    per_variant = rows // workers // 2
    scenario = Scenario.model_validate({
        "name": "timing", "workers": workers, "iterations": per_variant,
        "compute": {"per_partition": {"distribution": "shifted_exponential", "shift": 0.05, "rate": 20},
                    "fixed": {"distribution": "deterministic", "value": 0.02}},
        "network": {"latency": 0.005, "dispatch": {"distribution": "exponential", "rate": 100}},
        "master": {"between_iterations": {"distribution": "lognormal", "mu": -6, "sigma": 0.4}},
        "straggling": {"model": "independent", "probability": 0.1, "delay": 0.3},
        "variants": [{"label": "uncoded", "scheme": "uncoded", "policy": "wait_all"},
                     {"label": "FR", "scheme": "fr", "s": 1}],
    })  # fmt: skip
    start = time.perf_counter()
    frames = [run_task(SweepPoint({}, scenario), 0, Task(0, i, 0), True) for i in range(2)]
    simulate = time.perf_counter() - start
    iterations = pd.concat([pd.DataFrame(f[0]) for f in frames], ignore_index=True)
    table = pd.concat([pd.DataFrame(f[1]) for f in frames], ignore_index=True)
    start = time.perf_counter()
    calibrate([measured_run(Path("timing"), scenario, iterations, table, "simulated", cut_short=False)])
    seconds = time.perf_counter() - start
    return [f"== calibrate on {len(table):,} worker rows: {seconds:.2f} s (target < 10 s); simulating them took "
            f"{simulate:.2f} s (ratio {seconds / simulate:.2f})"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["torch", "ray", "both"], default="torch")
    parser.add_argument(
        "--scenario",
        type=Path,
        nargs="+",
        default=[ROOT / "scenarios" / "cifar10.yaml", ROOT / "scenarios" / "calibration_markov.yaml"],
    )
    parser.add_argument("--iterations", type=int, default=150)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--data-dir", type=Path, default=DATA if DATA.is_file() else None)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "calibration-benchmark")
    parser.add_argument("--timing-only", action="store_true")
    parser.add_argument(
        "--separate-runs",
        action="store_true",
        help="calibrate from one run and predict another (default: one run, variants interleaved)",
    )
    parser.add_argument("--turn", type=int, default=25, help="iterations of a variant's turn (checkpoint_every)")
    parser.add_argument(
        "--cores",
        type=int,
        default=None,
        help="the cores the workers shared (default: what the runs recorded); 0: model no contention",
    )
    parser.add_argument("--reuse", action="store_true", help="calibrate the runs already in --out again")
    parser.add_argument("--device", default=None, help="the runs' training.device (default: the scenario's)")
    parser.add_argument(
        "--drop-first",
        type=int,
        default=0,
        help="leave out each variant's first N iterations (runs whose workers started cold)",
    )
    parser.add_argument("--emulate", action="store_true", help="run on an emulated cluster of the scenario's topology")
    parser.add_argument("--skip-timing", action="store_true", help="leave out calibrate's time on 100,000 rows")
    args = parser.parse_args()
    if args.cores == 0:
        args.cores = 10**6  # (as many as any run's workers: no contention)
    lines = [] if args.skip_timing else calibration_time()
    print("\n".join(lines), flush=True)
    if not args.timing_only:
        backends = ["torch", "ray"] if args.backend == "both" else [args.backend]
        for scenario in args.scenario:
            for backend in backends:
                found = accuracy(scenario, backend, args)
                print("\n".join(found), flush=True)
                lines += found
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
