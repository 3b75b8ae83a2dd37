"""Real-mode coordination overhead, and measured speedups under injected straggling.

Overhead per iteration = the master's iteration time minus the slowest used
worker's compute + injected delay (from the recorded timings): dispatch,
publishing weights, collecting, decoding and the optimizer step. Target: at
most 10 ms at n = 4 and 8. The reference, measured in the same
process, is a bare Ray round trip with the same payloads: put the weights once,
call n actors that each return a gradient-sized array, get them all; the ratio
of the two is what gcbench's coordination adds over Ray itself. Then every variant of a scenario (default
scenarios/cifar10.yaml, synthetic data unless --data-dir) runs for real, and the
speedup of each coded scheme over uncoded training is reported.

With ``--backend torch`` (or ``both``) the overhead is measured on the torch.distributed cluster too, against
a bare gloo round trip with the same payloads: n worker processes, each on a two-rank gloo group of its own,
receive the weights and send back a gradient-sized tensor, the master sending to all before receiving from any.

    python benchmarks/real_overhead.py [--iterations 40] [--data-dir PATH] [--overhead-only | --speedups-only]
        [--backend ray|torch|both] [--ddp]

``--ddp`` adds the DDP all-reduce baseline (``policy: allreduce``) to the speedup runs, under the same
injected straggling.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gcbench.real.ray.start import start_ray
from gcbench.real.run.standalone import run_variant
from gcbench.scenario import load_scenario
from gcbench.scenario.schema import Scenario, Variant
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


def gloo_round_trip(n: int, d: int, rounds: int) -> np.ndarray:
    """Seconds per bare gloo round: d float32 weights sent to n worker processes, d floats back from each."""
    import subprocess
    import sys

    import torch

    from gcbench.real.processes import channel as torch_channel

    store = torch_channel.store(0, 120.0)
    here = str(Path(__file__).parent)
    code = f"import sys; sys.path.insert(0, {here!r}); import real_overhead as r; r._echo(*sys.argv[1:])"
    workers = [subprocess.Popen([sys.executable, "-c", code, str(w), str(store.port), str(d), str(rounds)])
               for w in range(n)]  # fmt: skip
    groups = [_echo_group(store, w, 0) for w in range(n)]
    weights = torch.rand(d)
    back = [torch.empty(d) for _ in range(n)]
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        sends = [pg.send([weights], 1, 0) for pg in groups]
        for pg, out in zip(groups, back, strict=True):
            pg.recv([out], 1, 0).wait()
        for work in sends:
            work.wait()
        times.append(time.perf_counter() - began)
    for worker in workers:
        worker.wait(30)
    return np.array(times)


def _echo_group(store, worker: int, rank: int):
    import datetime

    import torch.distributed as dist

    return dist.ProcessGroupGloo(dist.PrefixStore(f"echo{worker}/", store), rank, 2, datetime.timedelta(seconds=120))


def _echo(worker: str, port: str, d: str, rounds: str) -> None:
    """A bare gloo worker: receive the weights, send back as many floats, ``rounds`` times."""
    import torch

    from gcbench.real.processes import channel as torch_channel

    torch.set_num_threads(1)
    pg = _echo_group(torch_channel.store(int(port), 120.0), int(worker), 1)
    weights = torch.empty(int(d))
    for _ in range(int(rounds)):
        pg.recv([weights], 0, 0).wait()
        pg.send([weights.clone()], 0, 0).wait()


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
    parser.add_argument("--backend", choices=["ray", "torch", "both"], default="ray")
    parser.add_argument("--ddp", action="store_true", help="add the DDP baseline to the speedup runs")
    parser.add_argument("--speedups-only", action="store_true", help="skip the overhead measurement")
    args = parser.parse_args()
    backends = ["ray", "torch"] if args.backend == "both" else [args.backend]
    if "ray" in backends:
        start_ray(None)
    if not args.speedups_only:
        measure_overhead(backends, args.iterations, args.samples)
    if not args.overhead_only:
        measure_speedups(args.scenario, args.iterations, args.data_dir, backends[0], args.ddp)


def measure_overhead(backends: list[str], iterations: int, samples: int) -> None:
    print("coordination overhead per iteration (ms), after 5 warm-up iterations")
    bare_round_trip = {"ray": ray_round_trip, "torch": gloo_round_trip}
    for n in (4, 8):
        for backend in backends:
            scenario = overhead_scenario(n, iterations, samples)
            data = load_data(scenario)
            table, workers = run_variant(scenario, scenario.variants[0], data, 0, backend=backend)
            values = overhead(table, workers)[5:] * 1e3
            d = sum(p.numel() for p in build_model(scenario.training.model, data.classes, 0).parameters())
            bare = np.median(bare_round_trip[backend](n, d, iterations)[5:]) * 1e3
            print(
                f"{backend:<5} n={n}: median {np.median(values):.1f}  p90 {np.percentile(values, 90):.1f}  "
                f"mean {values.mean():.1f}   bare {'Ray' if backend == 'ray' else 'gloo'} round trip {bare:.1f}"
                f"   ratio {np.median(values) / bare:.2f}"
            )


def measure_speedups(path: Path, iterations: int, data_dir: str | None, backend: str, ddp: bool) -> None:
    """Every variant of the scenario (plus the DDP baseline with ``ddp``) trained for real, one after the
    other: mean and median iteration time after 3 warm-up iterations, and the speedup over the first variant."""
    scenario = load_scenario(path)[0].scenario
    training = {"dataset": "cifar10" if data_dir else "synthetic", "data_dir": data_dir}
    variants = [*scenario.variants]
    if ddp:
        variants.append(Variant.model_validate({"label": "DDP", "scheme": "uncoded", "policy": "allreduce"}))
    scenario = scenario.model_copy(
        update={
            "iterations": iterations,
            "variants": variants,
            "training": scenario.training.model_validate({**scenario.training.model_dump(), **training}),
        }
    )
    data = load_data(scenario)
    print(f"\n{scenario.name} on {backend} ({training['dataset']}): iteration time under its injected straggling")
    times = {}
    for variant in scenario.variants:
        table, _ = run_variant(scenario, variant, data, 0, backend=backend)
        times[variant.display_label()] = table["duration"].iloc[3:].to_numpy()
    baseline = next(iter(times.values())).mean()
    for label, values in times.items():
        print(f"{label:<20} mean {values.mean() * 1e3:8.1f} ms  median {np.median(values) * 1e3:8.1f} ms   "
              f"speedup {baseline / values.mean():5.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
