"""The simulator against closed-form order statistics (tolerances: 4.5 standard errors)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from simhelpers import assert_mean_matches, durations, scenario


def harmonic(n: int) -> float:
    return sum(1.0 / i for i in range(1, n + 1))


SHIFT, RATE, N = 0.2, 3.0, 12
SHIFTED_EXP = {"per_partition": {"distribution": "shifted_exponential", "shift": SHIFT, "rate": RATE}}


def run(variants, compute=SHIFTED_EXP, iterations=4000, **extra):
    sc = scenario(workers=N, iterations=iterations, compute=compute, variants=variants, **extra)
    return durations(sc, seeds=(0, 1))


def test_wait_all_is_shift_plus_harmonic_over_rate():
    samples = run([{"scheme": "uncoded", "policy": "wait_all"}])
    assert_mean_matches(samples, SHIFT + harmonic(N) / RATE)


@pytest.mark.parametrize("k", [1, 6, 11])
def test_fastest_k_is_the_kth_order_statistic(k):
    samples = run([{"scheme": "uncoded", "policy": {"name": "fastest_k", "k": k}}])
    assert_mean_matches(samples, SHIFT + (harmonic(N) - harmonic(N - k)) / RATE)


@pytest.mark.parametrize("s", [1, 2, 3])
def test_cr_waits_for_the_n_minus_s_th_of_load_scaled_times(s):
    samples = run([{"scheme": "cr", "s": s}])
    load = s + 1
    assert_mean_matches(samples, load * (SHIFT + (harmonic(N) - harmonic(s)) / RATE))


@pytest.mark.parametrize("s", [1, 2, 3])
def test_fr_is_the_slowest_groups_fastest_worker(s):
    samples = run([{"scheme": "fr", "s": s}])
    groups, load = N // (s + 1), s + 1
    # min of s+1 exponentials is Exp((s+1) rate); the max of `groups` of them adds H_groups / ((s+1) rate)
    assert_mean_matches(samples, load * (SHIFT + harmonic(groups) / ((s + 1) * RATE)))


DETERMINISTIC = {"per_partition": {"distribution": "deterministic", "value": 0.1}}


@pytest.mark.parametrize("scaling", ["once", "load"])
@pytest.mark.parametrize("scheme,s", [("fr", 2), ("cr", 2), ("uncoded", 0)])
def test_both_delay_models_match_their_closed_forms(scheme, s, scaling):
    p, delay = 0.3, 1.0
    straggling = {"model": "independent", "probability": p, "delay": delay, "delay_scaling": scaling}
    samples = run([{"scheme": scheme, "s": s}], compute=DETERMINISTIC, straggling=straggling)
    load = s + 1
    penalty = delay * (load if scaling == "load" else 1)
    if scheme == "fr":
        stuck = 1 - (1 - p**load) ** (N // load)  # some group straggles entirely
    elif scheme == "cr":
        stuck = 1 - stats.binom.cdf(s, N, p)  # more than s stragglers
    else:
        stuck = 1 - (1 - p) ** N
    assert_mean_matches(samples, 0.1 * load + penalty * stuck)


EXPONENTIAL = {"per_partition": {"distribution": "exponential", "rate": RATE}}


@pytest.mark.parametrize("k", [1, 4, 9])
def test_k_async_matches_k_sync_for_exponential_times(k):
    """Dutta et al.: memoryless times make K-async's iteration the K-th order statistic."""
    samples = run([{"scheme": "uncoded", "policy": {"name": "k_async", "k": k}}], compute=EXPONENTIAL)
    assert_mean_matches(samples, (harmonic(N) - harmonic(N - k)) / RATE)


@pytest.mark.parametrize("k", [1, 4, 20])
def test_k_batch_async_is_k_over_n_rate(k):
    """Dutta et al.: all n workers always busy, results form a Poisson process of rate n * rate."""
    samples = run([{"scheme": "uncoded", "policy": {"name": "k_batch_async", "k": k}}], compute=EXPONENTIAL)
    assert_mean_matches(samples, k / (N * RATE))


def test_async_is_one_over_n_rate():
    samples = run([{"scheme": "uncoded", "policy": "async"}], compute=EXPONENTIAL)
    assert_mean_matches(samples, 1 / (N * RATE))


def test_shared_link_queues_every_message():
    """All messages ready together: the last of n leaves after n transfers."""
    network = {"latency": 0.01, "bandwidth": 1e6, "shared_link": True}
    sc = scenario(
        workers=N, iterations=5, compute=DETERMINISTIC, network=network, gradient={"length": 1000, "dtype": "float32"}
    )
    transfer = 4000 / 1e6
    assert durations(sc) == pytest.approx([0.1 + 0.01 + N * transfer] * 5, rel=1e-12)
    assert math.isclose(transfer, 0.004)


# The times around the compute a calibrated scenario models (gcbench calibrate): a job's dispatch and the master's
# time between iterations, in both engines.
DISPATCH_RATE = 25.0


@pytest.mark.parametrize("engine", ["vectorised", "event"])
def test_deterministic_dispatch_and_master_time_shift_every_iteration(engine):
    """Compute c, dispatch d, master time m: each iteration lasts d + c and starts d + c + m after the last."""
    c, d, m = 0.1, 0.03, 0.007
    sc = scenario(
        workers=4, iterations=6, compute=DETERMINISTIC, engine=engine,
        network={"dispatch": {"distribution": "deterministic", "value": d}},
        master={"between_iterations": {"distribution": "deterministic", "value": m}},
    )  # fmt: skip
    rec = simulate(sc)
    assert rec.duration == pytest.approx([d + c] * 6, rel=1e-12)
    assert rec.start == pytest.approx([t * (d + c + m) for t in range(6)], rel=1e-12)
    assert rec.compute_start == pytest.approx(rec.start[:, None] + d + 0 * rec.compute_start, rel=1e-12)


@pytest.mark.parametrize("engine", ["vectorised", "event"])
@pytest.mark.parametrize("k", [1, 6, 12])
def test_an_exponential_dispatch_adds_its_order_statistic(engine, k):
    """Deterministic compute c after an Exp(rate) dispatch: the k-th fastest of n is c + (H_n - H_{n-k}) / rate."""
    sc = scenario(
        workers=N, iterations=3000, compute=DETERMINISTIC, engine=engine,
        network={"dispatch": {"distribution": "exponential", "rate": DISPATCH_RATE}},
        variants=[{"scheme": "uncoded", "policy": {"name": "fastest_k", "k": k}}],
    )  # fmt: skip
    assert_mean_matches(simulate(sc).duration, 0.1 + (harmonic(N) - harmonic(N - k)) / DISPATCH_RATE)


@pytest.mark.parametrize("engine", ["vectorised", "event"])
def test_the_master_time_between_iterations_is_its_distribution_s(engine):
    """The gaps between one iteration's end and the next one's start are the master's draws: their mean is the
    distribution's, and they leave the iterations' durations as they were."""
    between = {"distribution": "shifted_exponential", "shift": 0.002, "rate": 400.0}
    sc = scenario(
        workers=N, iterations=3000, compute=SHIFTED_EXP, engine=engine, master={"between_iterations": between}
    )
    rec, plain = simulate(sc), simulate(sc.model_copy(update={"master": type(sc.master)()}))
    assert_mean_matches(rec.start[1:] - rec.end[:-1], 0.002 + 1 / 400.0)
    assert rec.duration == pytest.approx(plain.duration, rel=1e-12)  # common random numbers: only the gaps differ


def simulate(sc):
    """One run of the scenario's first variant on the engine it names (auto: the vectorised one)."""
    from gcbench.scenario.build import scheme_for
    from gcbench.sim.engines import engine_for, simulate_with

    variant = sc.variants[0]
    return simulate_with(engine_for(sc, variant), sc, variant, scheme_for(sc, variant), 0)


@pytest.mark.parametrize("engine", ["vectorised", "event"])
@pytest.mark.parametrize("s", [1, 2])
def test_a_fixed_part_is_added_once_per_job_whatever_its_load(engine, s):
    """CR's load is s + 1: with per-partition c and a fixed f, every job takes f + (s + 1) c (wait_all)."""
    c, f = 0.1, 0.04
    compute = {**DETERMINISTIC, "fixed": {"distribution": "deterministic", "value": f}, "speeds": [1.0, 1, 1, 1, 1, 2]}
    sc = scenario(
        workers=6, iterations=4, compute=compute, engine=engine,
        variants=[{"scheme": "cr", "s": s, "policy": "wait_all"}],
    )  # fmt: skip
    rec = simulate(sc)
    busy = rec.compute_end - rec.compute_start
    assert busy[:, :5] == pytest.approx(np.full((4, 5), f + (s + 1) * c), rel=1e-12)
    assert busy[:, 5] == pytest.approx(np.full(4, (f + (s + 1) * c) / 2), rel=1e-12)  # the speed scales it too


@pytest.mark.parametrize("engine", ["vectorised", "event"])
def test_a_shared_factor_multiplies_every_worker_s_compute_in_its_iteration(engine):
    """compute.shared: one draw per iteration multiplies every worker's compute: with a deterministic per-partition
    time c, wait_all's iteration is c times that iteration's factor, whose mean is the distribution's."""
    shared = {"distribution": "lognormal", "mu": -0.02, "sigma": 0.2}
    sc = scenario(workers=N, iterations=3000, compute={**DETERMINISTIC, "shared": shared}, engine=engine,
                  variants=[{"scheme": "uncoded", "policy": "wait_all"}])  # fmt: skip
    rec = simulate(sc)
    busy = rec.compute_end - rec.compute_start
    assert busy == pytest.approx(np.repeat(busy[:, :1], N, axis=1), rel=1e-12)  # every worker alike per iteration
    assert_mean_matches(rec.duration, 0.1 * math.exp(-0.02 + 0.2**2 / 2))


@pytest.mark.parametrize("engine", ["vectorised", "event"])
@pytest.mark.parametrize(("policy", "expected"), [("wait_all", 0.6), ({"name": "fastest_k", "k": 1}, 0.3),
                                                  ({"name": "fastest_k", "k": 2}, 0.5)])  # fmt: skip
def test_workers_sharing_one_core_finish_as_a_processor_sharing_queue_says(engine, policy, expected):
    """compute.cores: 1; three workers of speeds 1, 1/2 and 1/3 need 0.1, 0.2 and 0.3 s of the core: sharing it,
    the first is done at 3 x 0.1 = 0.3 s, the second 2 x 0.1 later, the third 0.1 after that (0.6 s)."""
    compute = {**DETERMINISTIC, "speeds": [1.0, 0.5, 1 / 3], "cores": 1}
    sc = scenario(workers=3, iterations=4, compute=compute, engine=engine, variants=[{"scheme": "uncoded",
                  "policy": policy}])  # fmt: skip
    rec = simulate(sc)
    assert rec.duration == pytest.approx(np.full(4, expected), rel=1e-12)
    busy = rec.compute_end - rec.compute_start
    assert busy[0] == pytest.approx([0.3, 0.5, 0.6], rel=1e-12)


@pytest.mark.parametrize("engine", ["vectorised", "event"])
def test_as_many_cores_as_workers_change_nothing_and_fewer_share_them_finish_by_finish(engine):
    sc = scenario(workers=N, iterations=500, compute=SHIFTED_EXP, engine=engine,
                  variants=[{"scheme": "uncoded", "policy": "wait_all"}])  # fmt: skip
    alone = simulate(sc)
    shared = lambda cores: sc.model_copy(update={"compute": sc.compute.model_copy(update={"cores": cores})})  # noqa: E731
    assert simulate(shared(N)).duration == pytest.approx(alone.duration, rel=1e-12)
    # N jobs on N / 2 cores, stepped finish by finish: while a > N / 2 compute, each at (N / 2) / a of its speed
    halved = simulate(shared(N // 2))
    for row, work in zip(halved.duration, alone.compute_end - alone.compute_start, strict=True):
        now, done, left = 0.0, 0.0, sorted(work)
        for i, w in enumerate(left):
            now += (w - done) * max(1.0, (N - i) / (N // 2))
            done = w
        assert row == pytest.approx(now, rel=1e-9)
