"""compute.overhead, Tandon et al.'s second delay model (T = l·Δ + E): closed forms on both engines, its own
random stream, and where the workers table counts it (tolerances: 4.5 standard errors)."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.scenario.build import scheme_for
from gcbench.scenario.draws import draw_run
from gcbench.sim.runner import simulate_points

from simhelpers import assert_mean_matches, durations, point, scenario

DELTA, RATE, N = 0.05, 4.0, 12
MODEL_B = {
    "per_partition": {"distribution": "deterministic", "value": DELTA},
    "overhead": {"distribution": "exponential", "rate": RATE},
}


def harmonic(n: int) -> float:
    return sum(1.0 / i for i in range(1, n + 1))


def run(variants, compute=MODEL_B, iterations=4000, **extra):
    sc = scenario(workers=N, iterations=iterations, compute=compute, variants=variants, **extra)
    return durations(sc, seeds=(0, 1))


@pytest.mark.parametrize("s", [1, 2, 3])
def test_cr_waits_for_load_times_delta_plus_the_n_minus_s_th_overhead(s):
    samples = run([{"scheme": "cr", "s": s}])
    assert_mean_matches(samples, (s + 1) * DELTA + (harmonic(N) - harmonic(s)) / RATE)


@pytest.mark.parametrize("s", [1, 2, 3])
def test_fr_waits_for_load_times_delta_plus_the_slowest_groups_fastest_overhead(s):
    samples = run([{"scheme": "fr", "s": s}])
    groups = N // (s + 1)
    assert_mean_matches(samples, (s + 1) * DELTA + harmonic(groups) / ((s + 1) * RATE))


def test_the_event_engine_adds_the_overhead_too():
    """k_async with k = n restarts every worker after each update: an update is the slowest of n jobs."""
    samples = run([{"scheme": "uncoded", "policy": {"name": "k_async", "k": N}}])
    assert_mean_matches(samples, DELTA + harmonic(N) / RATE)


@pytest.mark.parametrize(
    "variant,load",
    [
        ({"scheme": "cr", "s": 2}, 3),
        ({"scheme": "fr", "s": 3}, 4),
        ({"scheme": "uncoded", "policy": {"name": "k_async", "k": N}}, 1),  # each update a full round
    ],
)
def test_the_overhead_is_scaled_by_neither_the_load_nor_the_speed(variant, load):
    compute = {
        "per_partition": {"distribution": "deterministic", "value": 0.1},
        "overhead": {"distribution": "deterministic", "value": 0.3},
        "speeds": [2.0] * N,
    }
    samples = run([variant], compute=compute, iterations=20)
    np.testing.assert_allclose(samples, load * 0.1 / 2 + 0.3, rtol=1e-12)


def test_adding_an_overhead_leaves_the_other_draws_as_they_were():
    fields = {
        "workers": N,
        "iterations": 50,
        "straggling": {"model": "independent", "probability": 0.3, "slowdown": 2.0},
        "failures": {"model": "crash", "probability": 0.05, "downtime": 1.0},
        "variants": [{"scheme": "cr", "s": 2}],
    }
    plain = scenario(compute={"per_partition": MODEL_B["per_partition"]}, **fields)
    model_b = scenario(compute=MODEL_B, **fields)
    scheme = scheme_for(plain, plain.variants[0])
    before, after = draw_run(plain, scheme, 7), draw_run(model_b, scheme, 7)
    assert (before.overhead == 0).all() and (after.overhead > 0).all()
    np.testing.assert_array_equal(after.straggling, before.straggling)
    np.testing.assert_array_equal(after.crash, before.crash)
    np.testing.assert_allclose(after.injected, before.injected + after.overhead, rtol=1e-12)
    np.testing.assert_allclose(after.busy, before.busy + after.overhead, rtol=1e-12)


@pytest.mark.parametrize("policy", ["decodable", {"name": "k_async", "k": 2}])
def test_the_workers_table_counts_the_overhead_as_injected_delay(policy):
    compute = {**MODEL_B, "overhead": {"distribution": "deterministic", "value": 0.25}}
    p = point(workers=4, iterations=10, compute=compute, variants=[{"scheme": "fr", "s": 1, "policy": policy}])
    _, workers = simulate_points([p])
    ran = workers[workers["compute_start"].notna()]
    assert len(ran) >= 20
    np.testing.assert_allclose(ran["injected_delay"], 0.25)
    np.testing.assert_allclose(ran["compute_end"] - ran["compute_start"], 2 * DELTA + 0.25, rtol=1e-9)


def test_a_bad_overhead_is_one_sentence_naming_the_field(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: bad\nworkers: 4\niterations: 10\nvariants: [{scheme: uncoded}]\n"
        "compute: {per_partition: {distribution: deterministic, value: 0.1}, overhead: {distribution: exponential}}\n"
    )
    result = CliRunner().invoke(app, ["simulate", str(path), "--check"])
    assert result.exit_code == 2
    assert "compute.overhead.rate: Field required" in result.output and "Traceback" not in result.output
