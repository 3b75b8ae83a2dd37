"""Wall time per simulated iteration of a scenario that trains in the simulator (default: the shipped sweep).

For each variant: the trained run's milliseconds per iteration (update), and two references measured in the
same process, since absolute times move with the machine's load: the same variant untrained on the event
engine (what the training adds), and one partition gradient (``shard_gradient``, the unit of a worker's
compute), so "gradients per iteration" says how many partition gradients' time each iteration costs.
Times are this process's CPU time (``time.process_time``: the runs are single-threaded), which a shared
machine's load disturbs far less than wall time; the last line gives the wall time too.

    python benchmarks/trained_sim.py                      # scenarios/trained_sweep.yaml as shipped
    python benchmarks/trained_sim.py --iterations 50 --scenario my.yaml
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from gcbench.scenario import load_scenario
from gcbench.scenario.build import scheme_for
from gcbench.sim.event import simulate_event
from gcbench.sim.training import cached_data, one_torch_thread, simulate_training

ROOT = Path(__file__).resolve().parents[1]


def partition_gradient_seconds(scenario, repeats: int = 200) -> float:
    """Best-of-5 mean time of one partition gradient of the scenario's model and batch, on one thread."""
    import torch

    from gcbench.training.batches import PartitionSampler
    from gcbench.training.gradients import shard_gradient
    from gcbench.training.models import build_model

    data = cached_data(scenario)
    sampler = PartitionSampler(len(data.train_labels), scenario.workers, scenario.training.batch_size, 0)
    shard = sampler.shard_data(data.train_images, data.train_labels)[0]
    model = build_model(scenario.training.model, data.classes, 0)
    best = np.inf
    with one_torch_thread():
        for _ in range(5):
            began = time.process_time()
            for batch in range(repeats):
                shard_gradient(model, shard, sampler, batch, 0, torch.device("cpu"))
            best = min(best, (time.process_time() - began) / repeats)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "trained_sweep.yaml")
    parser.add_argument("--iterations", type=int, default=None, help="default: the scenario's")
    args = parser.parse_args()
    point = load_scenario(args.scenario, {"iterations": args.iterations} if args.iterations else None)[-1]
    scenario = point.scenario
    loaded = time.perf_counter()
    cached_data(scenario)
    print(f"data loaded in {time.perf_counter() - loaded:.2f} s of wall time (once per process)")
    gradient = partition_gradient_seconds(scenario)
    print(f"one partition gradient ({scenario.training.model}): {gradient * 1e3:.3f} ms")
    print(f"{'variant':<24} {'trained ms/it':>14} {'untrained ms/it':>16} {'gradients/it':>13}")
    total, iterations, wall = 0.0, 0, time.perf_counter()
    for variant in scenario.variants:
        scheme = scheme_for(scenario, variant)
        began = time.process_time()
        simulate_training(scenario, variant, scheme, 0)
        trained = (time.process_time() - began) / scenario.iterations
        began = time.process_time()
        simulate_event(scenario, variant, scheme, 0)
        untrained = (time.process_time() - began) / scenario.iterations
        total, iterations = total + trained * scenario.iterations, iterations + scenario.iterations
        label = variant.display_label()
        print(f"{label:<24} {trained * 1e3:>14.2f} {untrained * 1e3:>16.3f} {trained / gradient:>13.1f}")
    wall = time.perf_counter() - wall
    print(
        f"all variants trained: {total:.1f} s of CPU for {iterations} iterations, {total / iterations * 1e3:.2f} ms "
        f"per iteration; {wall:.1f} s of wall time for them and their untrained references"
    )


if __name__ == "__main__":
    main()
