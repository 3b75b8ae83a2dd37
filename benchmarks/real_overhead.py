"""Real-mode coordination overhead, and measured speedups under injected straggling.

Overhead per iteration = the master's iteration time minus the slowest used
worker's compute + injected delay (from the recorded timings): dispatch,
publishing weights, collecting, decoding and the optimizer step. Target: at
most 10 ms at n = 4 and 8 (issue #4). The reference, measured in the same
process, is a bare Ray round trip with the same payloads: put the weights once,
call n actors that each return a gradient-sized array, get them all; the ratio
of the two is what gcbench's coordination adds over Ray itself. Then every variant of a scenario (default
scenarios/cifar10.yaml, synthetic data unless --data-dir) runs for real, and the
speedup of each coded scheme over uncoded training is reported.

    python benchmarks/real_overhead.py [--iterations 40] [--data-dir PATH] [--overhead-only]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gcbench.real.runner import run_variant, start_ray
from gcbench.scenario import load_scenario
from gcbench.scenario.schema import Scenario
from gcbench.training.data import load_data
from gcbench.training.models import build_model


def overhead(iterations: pd.DataFrame, workers: pd.DataFrame) -> np.ndarray:
    used = workers[workers["used"]].assign(busy=lambda w: w["compute_end"] - w["compute_start"])
    slowest = used.groupby("iteration")["busy"].max()
    return (iterations.set_index("iteration")["duration"] - slowest).to_numpy()


class _Echo:
    def gradient(self, weights: np.ndarray) -> np.ndarray:
        return np.array(weights, copy=True)


def ray_round_trip(n: int, d: int, rounds: int) -> np.ndarray:
    """Seconds per bare Ray round: publish d float32 weights, n actor calls returning d floats each, get all."""
    import ray

    actors = [ray.remote(num_cpus=0)(_Echo).remote() for _ in range(n)]
    weights = np.random.default_rng(0).random(d, dtype=np.float32)
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        ref = ray.put(weights)
        ray.get([actor.gradient.remote(ref) for actor in actors])
        times.append(time.perf_counter() - began)
    for actor in actors:
        ray.kill(actor)
    return np.array(times)


def overhead_scenario(n: int, iterations: int, samples: int = 16) -> Scenario:
    return Scenario.model_validate(
        {
            "name": f"overhead-{n}",
            "workers": n,
            "iterations": iterations,
            "compute": {"per_partition": {"distribution": "deterministic", "value": 0.01}},
            "variants": [{"scheme": "uncoded", "policy": "wait_all"}],
            "training": {"dataset": "synthetic", "batch_size": samples * n, "device": "cpu", "eval_every": 10**6},
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--scenario", type=Path, default=Path("scenarios/cifar10.yaml"))
    parser.add_argument("--data-dir", default=None, help="a CIFAR-10 copy (default: synthetic data)")
    parser.add_argument("--overhead-only", action="store_true", help="skip the speedup runs")
    parser.add_argument("--samples", type=int, default=16, help="samples per worker per iteration (default 16)")
    args = parser.parse_args()
    start_ray(None)
    print("coordination overhead per iteration (ms), after 5 warm-up iterations")
    for n in (4, 8):
        scenario = overhead_scenario(n, args.iterations, args.samples)
        data = load_data(scenario)
        table, workers = run_variant(scenario, scenario.variants[0], data, 0)
        values = overhead(table, workers)[5:] * 1e3
        d = sum(p.numel() for p in build_model(scenario.training.model, data.classes, 0).parameters())
        bare = np.median(ray_round_trip(n, d, args.iterations)[5:]) * 1e3
        print(
            f"n={n}: median {np.median(values):.1f}  p90 {np.percentile(values, 90):.1f}  mean {values.mean():.1f}"
            f"   bare Ray round trip {bare:.1f}   ratio {np.median(values) / bare:.2f}"
        )
    if args.overhead_only:
        return
    scenario = load_scenario(args.scenario)[0].scenario
    training = {"dataset": "cifar10" if args.data_dir else "synthetic", "data_dir": args.data_dir}
    scenario = scenario.model_copy(
        update={
            "iterations": args.iterations,
            "training": scenario.training.model_validate({**scenario.training.model_dump(), **training}),
        }
    )
    data = load_data(scenario)
    print(f"\n{scenario.name}: mean iteration time under injected straggling ({args.iterations} iterations)")
    means = {}
    for variant in scenario.variants:
        table, _ = run_variant(scenario, variant, data, 0)
        means[variant.display_label()] = table["duration"].iloc[3:].mean()
    baseline = next(iter(means.values()))
    for label, mean in means.items():
        print(f"{label:<20} {mean * 1e3:8.1f} ms   speedup {baseline / mean:5.2f}x")


if __name__ == "__main__":
    main()
