"""`gcbench recommend`'s speed: about 100 candidates of 2,000 iterations at n = 12 (target: under 30 s on the
project's 2-core machine), against a reference measured in the same process: one simulation of uncoded training
over as many rows (candidates x iterations) on the vectorised engine.

    python benchmarks/recommend.py [--max-s 6] [--iterations 2000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

CLUSTER = """\
name: c12
workers: 12
iterations: 300
seeds: [0]
compute: {per_partition: {distribution: shifted_exponential, shift: 0.040, rate: 100}, load: scale}
straggling: {model: fixed, workers: [2], slowdown: 6}
network: {latency: 0.0005, bandwidth: 1.25e9}
gradient: {length: 1000000, dtype: float32}
variants:
  - {scheme: uncoded, policy: wait_all}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-s", type=int, default=6)
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()

    from gcbench.scenario.build import scheme_for
    from gcbench.scenario.loading import load_scenario
    from gcbench.sim.synchronous import simulate_synchronous
    from gcbench.twin.candidates import enumerate_candidates, with_variants
    from gcbench.twin.recommend import recommend

    path = Path(tempfile.mkdtemp()) / "c12.yaml"
    path.write_text(CLUSTER)
    scenario = load_scenario(path)[0].scenario
    begun = time.perf_counter()
    candidates = enumerate_candidates(scenario, max_s=args.max_s)
    table, basis = recommend(scenario, candidates, args.iterations)
    seconds = time.perf_counter() - begun
    rows = len(candidates) * args.iterations
    reference = with_variants(scenario, scenario.variants, rows)
    begun = time.perf_counter()
    simulate_synchronous(reference, reference.variants[0], scheme_for(reference, reference.variants[0]), 0)
    baseline = time.perf_counter() - begun
    best = table[table["rank"] == 1][["kind", "candidate", "value", "speedup"]]
    print(best.to_string(index=False))
    print(f"chronic workers named: {basis['chronic_workers']}")
    print(
        f"{len(candidates)} candidates x {args.iterations} iterations at n = {scenario.workers}: {seconds:.1f} s "
        f"(target: under 30 s for 100); one uncoded simulation of the same {rows} rows: {baseline:.2f} s; "
        f"ratio {seconds / baseline:.1f}"
    )


if __name__ == "__main__":
    main()
