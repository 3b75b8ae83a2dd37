"""Simulator throughput in worker-iterations per second, against references measured in the same run.

- reference: NumPy order statistics, the floor of any synchronous simulation:
  sample an iterations x n matrix of compute times and take the k-th smallest per row;
- naive SimPy: one process per worker per iteration (what a straightforward model does);
- gcbench: synchronous i.i.d. variants (vectorised; the engine alone, as it runs without the
  workers table: no per-worker times), and variants that need every worker event: crashes
  (stepped per iteration), a shared link, and asynchronous policies (the event engine: the one
  master on the SimPy cluster; benchmarks/event_engine.py measures it against SimPy itself).
  A worker-iteration is one row of the workers table (iterations x n); asynchronous policies
  count results delivered (an update uses k of them, not n), so their rate is results per second;
- end to end: what `gcbench simulate` does once the scenario is loaded (every task simulated,
  its iterations and workers tables streamed to Parquet, the summary), in a temporary folder.

Targets: synchronous i.i.d. at n = 100 >= 1/10 of the reference;
event-driven variants >= 300k worker-iterations/s; end to end with the
workers table >= 1/5 of the reference at n = 12, 100, 1000, and the engine alone >= 1/3.
``--clock cpu`` counts the Parquet writer thread's time too (the process's), so there end to end
is the simulation plus the writing; the wall clock overlaps the two where a second core is free.
``--end-to-end`` also times the Parquet writing alone of the same workers table (the ceiling: what
pyarrow's encoder costs, which no end-to-end run with that table can beat).

``--clock cpu`` times with the process's CPU time instead of the wall clock: on a
machine shared with other jobs, time spent waiting for a core is then not counted
(numpy and SimPy run on one thread here, so on an idle machine both clocks agree).

``--asynchronous`` measures only the reference and the asynchronous policies (results per second), and
``--sizes`` picks the cluster sizes (the large asynchronous cases: ``--asynchronous --sizes 1000,4096``).

    python benchmarks/sim_benchmark.py [--seconds 0.5] [--clock wall|cpu] [--end-to-end | --asynchronous]
        [--sizes 12,100,1000] [--updates U]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import simpy

from gcbench.results.stream import TableFile
from gcbench.scenario.build import scheme_for
from gcbench.scenario.loading import SweepPoint
from gcbench.scenario.schema import Scenario
from gcbench.sim.asynchronous import simulate_asynchronous
from gcbench.sim.runner import stream_points
from gcbench.sim.synchronous import simulate_synchronous

COMPUTE = {"per_partition": {"distribution": "shifted_exponential", "shift": 0.1, "rate": 10.0}}


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCKS["wall"]  # what rate() times with (--clock)


def rate(fn, work: int, seconds: float) -> float:
    """Worker-iterations per second of fn() (which does ``work`` of them), best of repeats within a budget."""
    fn()
    best, spent = float("inf"), 0.0
    while spent < seconds:
        start = clock()
        fn()
        elapsed = clock() - start
        best, spent = min(best, elapsed), spent + elapsed
    return work / best


def use_clock(name: str) -> None:
    global clock
    clock = CLOCKS[name]


def reference(n: int, iterations: int, k: int):
    rng = np.random.default_rng(0)

    def run():
        times = 0.1 + rng.exponential(0.1, (iterations, n))
        return np.partition(times, k - 1, axis=1)[:, k - 1]

    return run


def naive_simpy(n: int, iterations: int):
    rng = np.random.default_rng(0)

    def run():
        env = simpy.Environment()

        def master():
            for _ in range(iterations):
                times = 0.1 + rng.exponential(0.1, n)
                workers = [env.process(_worker(env, t)) for t in times]
                yield simpy.AllOf(env, workers)

        env.process(master())
        env.run()

    return run


def _worker(env, seconds):
    yield env.timeout(seconds)


def gcbench_run(n: int, iterations: int, variant: dict, **fields):
    data = {"name": "bench", "workers": n, "iterations": iterations, "compute": COMPUTE, "variants": [variant]}
    scenario = Scenario.model_validate({**data, **fields})
    v = scenario.variants[0]
    scheme = scheme_for(scenario, v)
    if v.policy.synchronous:  # the engine alone: what it computes without the workers table (--no-workers-table)
        return lambda: simulate_synchronous(scenario, v, scheme, 0, worker_times=False)
    return lambda: simulate_asynchronous(scenario, v, scheme, 0)


STRAGGLERS = {"model": "independent", "probability": 0.1, "slowdown": 5.0}
END_TO_END = [("decodable, fr, stragglers", {"scheme": "fr", "s": 3}, {"straggling": STRAGGLERS})]


def end_to_end(n: int, iterations: int, variant: dict, **fields):
    """`gcbench simulate` after loading: the tasks streamed to Parquet with the workers table, then the summary."""
    data = {"name": "bench", "workers": n, "iterations": iterations, "compute": COMPUTE, "variants": [variant]}
    points = [SweepPoint({}, Scenario.model_validate({**data, **fields}))]

    def run():
        folder = Path(tempfile.mkdtemp(prefix="gcbench-bench-"))
        try:
            stream_points(points, folder / "run", jobs=1, with_workers=True).summary()
        finally:
            shutil.rmtree(folder)

    return run


def parquet_alone(n: int, iterations: int, variant: dict, **fields):
    """The ceiling on end to end: only the Parquet writing of the same workers table, built once in memory
    (read back from one end-to-end run, its identity dictionary-encoded again as the recorder hands it over)."""
    data = {"name": "bench", "workers": n, "iterations": iterations, "compute": COMPUTE, "variants": [variant]}
    points = [SweepPoint({}, Scenario.model_validate({**data, **fields}))]
    folder = Path(tempfile.mkdtemp(prefix="gcbench-bench-"))
    try:
        stream_points(points, folder / "run", jobs=1, with_workers=True)
        table = pq.read_table(folder / "run" / "workers.parquet")
    finally:
        shutil.rmtree(folder)
    table = table.set_column(0, "variant", pc.dictionary_encode(table.column("variant")))

    def run():
        target = Path(tempfile.mkdtemp(prefix="gcbench-bench-"))
        try:
            file = TableFile(target / "workers.parquet", "workers")
            file.write(table)
            file.close()
        finally:
            shutil.rmtree(target)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="time budget per measurement")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="wall clock or process CPU time")
    parser.add_argument("--end-to-end", action="store_true", help="only the reference and the end-to-end cases")
    parser.add_argument("--asynchronous", action="store_true", help="only the reference and the asynchronous cases")
    parser.add_argument("--sizes", type=_sizes, default=(12, 100, 1000), help="cluster sizes n, comma-separated")
    parser.add_argument("--updates", type=int, help="updates per asynchronous run (default: 200,000 / (n k))")
    args = parser.parse_args()
    only = args.end_to_end or args.asynchronous
    use_clock(args.clock)
    print(f"worker-iterations per second (best of repeats, {args.clock} clock); ratio = gcbench / NumPy reference")
    print(f"{'n':>5} {'case':<34} {'rate':>12} {'ratio':>7}")
    for n in args.sizes:
        iterations = max(200, 2_000_000 // n)
        work = iterations * n
        ref = rate(reference(n, iterations, n), work, args.seconds)
        print(f"{n:>5} {'NumPy order statistics (reference)':<34} {ref:>12,.0f} {1:>7.2f}")
        if not only:
            naive_iterations = max(20, 100_000 // n)
            naive = rate(naive_simpy(n, naive_iterations), naive_iterations * n, args.seconds)
            print(f"{n:>5} {'naive SimPy, process per worker':<34} {naive:>12,.0f} {naive / ref:>7.3f}")
        s = n // 4
        cases = [
            ("wait_all, uncoded", {"scheme": "uncoded", "policy": "wait_all"}, {}),
            ("fastest_k, uncoded", {"scheme": "uncoded", "policy": {"name": "fastest_k", "k": n - s}}, {}),
            ("decodable, fr", {"scheme": "fr", "s": 3}, {}),
            ("decodable, ignore_stragglers", {"scheme": "ignore_stragglers", "s": s}, {}),
            ("crashes (stepped), fr", {"scheme": "fr", "s": 3}, {"failures": _crashes()}),
            ("shared link, uncoded", {"scheme": "uncoded"}, {"network": _link()}),
        ]
        for label, variant, fields in [] if only else cases:
            its = iterations if "stepped" not in label else max(100, iterations // 20)
            measured = rate(gcbench_run(n, its, variant, **fields), its * n, args.seconds)
            print(f"{n:>5} {label:<34} {measured:>12,.0f} {measured / ref:>7.3f}", flush=True)
        for label, variant, fields in END_TO_END if args.end_to_end else [] if only else cases[:3] + END_TO_END:
            measured = rate(end_to_end(n, iterations, variant, **fields), work, args.seconds)
            print(f"{n:>5} {'end to end, ' + label:<34} {measured:>12,.0f} {measured / ref:>7.3f}", flush=True)
        if args.end_to_end:  # what writing the workers table alone allows: end to end cannot pass it
            label, variant, fields = END_TO_END[0]
            measured = rate(parquet_alone(n, iterations, variant, **fields), work, args.seconds)
            print(f"{n:>5} {'Parquet writing alone (ceiling)':<34} {measured:>12,.0f} {measured / ref:>7.3f}")
        asynchronous = (
            ("k_async, k = n/2", {"name": "k_async", "k": n // 2}, n // 2),
            ("k_batch_async, k = n/2", {"name": "k_batch_async", "k": n // 2}, n // 2),
            ("async (k = 1)", "async", 1),
        )
        for label, policy, k in () if args.end_to_end else asynchronous:
            its = args.updates or max(20, 200_000 // (n * k))
            # an update uses k results, not n: counting its * n "worker-iterations" overstated the rate n / k times
            measured = rate(gcbench_run(n, its, {"scheme": "uncoded", "policy": policy}), its * k, args.seconds)
            print(f"{n:>5} {label + ', results/s':<34} {measured:>12,.0f} {measured / ref:>7.3f}", flush=True)


def _sizes(text: str) -> tuple[int, ...]:
    return tuple(int(size) for size in text.split(","))


def _crashes() -> dict:
    return {"model": "crash", "probability": 0.001, "downtime": 1.0}


def _link() -> dict:
    return {"latency": 0.001, "bandwidth": 1.25e9, "shared_link": True}


if __name__ == "__main__":
    main()
