"""The event engine (the one master on the SimPy cluster) in results per second, against SimPy itself.

Measured in the same run (these machines are noisy; only ratios compare across runs):

- SimPy's own rate: bare timeouts with one callback each, the floor of any SimPy model;
- naive SimPy: the same asynchronous policy written the straightforward way, one
  process per worker per job, results through a ``Store`` to a master process
  (and through a ``Resource`` for the shared link, the reference of the link case);
- gcbench: ``simulate_event`` for k_async (k = n/2), k_batch_async, async, and
  k_async with crash failures and with a shared ingress link (``network.link_model``
  events, the default, and resource, the ``simpy.Resource`` link), at n = 100.

Targets: k_async with k = n/2 at n = 100 >= 150k results/s and >= 1.5x the naive model.
The master's cost per result is 1/rate(gcbench) - 1/rate(SimPy callbacks).

``--clock cpu`` times with the process's CPU time, as in sim_benchmark.py (for a shared machine).

    python benchmarks/event_engine.py [--seconds 1.0] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse

import numpy as np
import simpy
from sim_benchmark import CLOCKS, use_clock
from sim_benchmark import rate as best_rate  # best of repeats within a time budget, per unit of work

from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario
from gcbench.sim.event import simulate_event

COMPUTE = {"per_partition": {"distribution": "shifted_exponential", "shift": 0.1, "rate": 10.0}}
N = 100
LINK = {"latency": 0.001, "bandwidth": 1.25e9, "shared_link": True}
LINK_TRANSFER = 4 * 11_200_000 / 1.25e9  # the default gradient's message over the link (seconds)


def simpy_callbacks(n: int, events: int):
    """SimPy's floor: n chains of timeouts, each callback scheduling the next (n events pending, as in a run)."""
    delays = (0.1 + np.random.default_rng(0).exponential(0.1, events)).tolist()

    def run():
        env, left = simpy.Environment(), iter(delays)

        def again(_event):
            delay = next(left, None)
            if delay is not None:
                env.timeout(delay).callbacks.append(again)

        for _ in range(n):
            again(None)
        env.run()

    return run


def naive_k_async(n: int, k: int, updates: int, link: bool = False):
    """k_async the straightforward way: a process per worker per job, a master process taking k results."""
    rng = np.random.default_rng(0)

    def run():
        env = simpy.Environment()
        inbox, ingress = simpy.Store(env), simpy.Resource(env, capacity=1)

        def job(w):
            yield env.timeout(0.1 + rng.exponential(0.1) + 0.001)
            if link:
                with ingress.request() as turn:
                    yield turn
                    yield env.timeout(LINK_TRANSFER)
            yield inbox.put(w)

        def master():
            for w in range(n):
                env.process(job(w))
            for _ in range(updates):
                batch = []
                for _ in range(k):
                    batch.append((yield inbox.get()))
                for w in batch:
                    env.process(job(w))

        env.run(env.process(master()))

    return run


def gcbench_event(policy, iterations: int, **fields):
    data = {"name": "bench", "workers": N, "iterations": iterations, "compute": COMPUTE}
    scenario = Scenario.model_validate({**data, "variants": [{"scheme": "uncoded", "policy": policy}], **fields})
    variant = scenario.variants[0]
    scheme = scheme_for(scenario, variant)
    return lambda: simulate_event(scenario, variant, scheme, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time budget per measurement")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="wall clock or process CPU time")
    args = parser.parse_args()
    use_clock(args.clock)
    k, results = N // 2, 200_000
    updates = results // k
    floor = best_rate(simpy_callbacks(N, results), results, args.seconds)
    naive = best_rate(naive_k_async(N, k, updates), updates * k, args.seconds)
    naive_link = best_rate(naive_k_async(N, k, updates, link=True), updates * k, args.seconds)
    print(f"results per second at n = {N} (best of repeats, {args.clock} clock); ", end="")
    print("master cost = 1/rate - 1/SimPy callback rate")
    print(f"{'case':<40} {'rate':>10} {'/ naive':>8} {'master us':>10}")
    print(f"{'SimPy callbacks (floor)':<40} {floor:>10,.0f}")
    print(f"{'naive SimPy k_async, process per job':<40} {naive:>10,.0f} {1:>8.2f}")
    print(f"{'naive SimPy k_async, shared link':<40} {naive_link:>10,.0f} {1:>8.2f}")
    crashes = {"failures": {"model": "crash", "probability": 0.001, "downtime": 1.0}}
    link = {"network": LINK}
    resource = {"network": {**LINK, "link_model": "resource"}}  # the simpy.Resource link, the textbook model
    cases = [
        ("event engine k_async, k = n/2", {"name": "k_async", "k": k}, k, {}),
        ("event engine k_batch_async, k = n/2", {"name": "k_batch_async", "k": k}, k, {}),
        ("event engine async (k = 1)", {"name": "async"}, 1, {}),
        ("event engine k_async, crash failures", {"name": "k_async", "k": k}, k, crashes),
        ("event engine k_async, shared link", {"name": "k_async", "k": k}, k, link),
        ("  the same, link_model: resource", {"name": "k_async", "k": k}, k, resource),
    ]
    for label, policy, batch, fields in cases:
        iterations = min(results // batch, 4000)  # (k = 1: the tables, iterations x n, would cost more than the run)
        measured = best_rate(gcbench_event(policy, iterations, **fields), iterations * batch, args.seconds)
        cost = (1 / measured - 1 / floor) * 1e6
        reference = naive_link if fields.get("network") else naive
        print(f"{label:<40} {measured:>10,.0f} {measured / reference:>8.2f} {cost:>10.2f}", flush=True)


if __name__ == "__main__":
    main()
