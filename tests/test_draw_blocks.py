"""The run's draws made a block of rows at a time (gcbench/scenario/draws.py, draw_rows.py) are draw_run's, bit for
bit, whatever the blocks; and an asynchronous run draws the rows its jobs read, not every row."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import gcbench.sim.event as event
from gcbench.models.distributions import DISTRIBUTIONS
from gcbench.scenario.build import scheme_for
from gcbench.scenario.draw_rows import DrawnRows
from gcbench.scenario.draws import DrawBlocks, draw_run
from gcbench.sim.asynchronous import simulate_asynchronous

from simhelpers import scenario

TRACE = Path(__file__).resolve().parents[1] / "scenarios" / "traces" / "synthetic_trace.csv"
EXPONENTIAL = {"distribution": "exponential", "rate": 4.0}
# one instance of every registered distribution (a new one fails test_every_distribution_has_an_example)
DISTRIBUTION_EXAMPLES = {
    "deterministic": {"distribution": "deterministic", "value": 0.5},
    "exponential": EXPONENTIAL,
    "shifted_exponential": {"distribution": "shifted_exponential", "shift": 0.1, "rate": 10.0},
    "pareto": {"distribution": "pareto", "scale": 0.2, "shape": 1.5},
    "lognormal": {"distribution": "lognormal", "mu": -1.0, "sigma": 0.7},
    "weibull": {"distribution": "weibull", "shape": 0.8, "scale": 0.3},
    "empirical": {"distribution": "empirical", "samples": [0.1, 0.2, 0.7]},
    "mixture": {
        "distribution": "mixture",
        "components": [
            {"weight": 3, "of": EXPONENTIAL},
            {"weight": 1, "of": {"distribution": "weibull", "shape": 2, "scale": 1}},
        ],
    },
}
CRASHES = {"model": "crash", "rate": 0.3, "downtime": 0.5}
MARKOV = {"model": "markov", "enter": 0.2, "leave": 0.4, "slowdown": 3.0, "delay": 0.1, "delay_scaling": "load"}
# scenarios that exercise every piece of a block: each stream, the Markov chain's state, a trace's rows, a mixture
CASES = {
    "independent, crash rate, overhead": dict(
        compute={"per_partition": EXPONENTIAL, "overhead": {"distribution": "pareto", "scale": 0.1, "shape": 2.0}},
        straggling={"model": "independent", "probability": 0.3, "slowdown": 2.0},
        failures=CRASHES,
    ),
    "markov, load sum, speeds": dict(
        compute={"per_partition": EXPONENTIAL, "load": "sum", "speeds": [1, 2, 1, 3, 1, 1]},
        straggling=MARKOV,
        failures={"model": "crash", "probability": 0.1},
    ),
    "fixed, trace": dict(
        compute={"trace": {"path": str(TRACE)}}, straggling={"model": "fixed", "workers": [1, 4], "slowdown": 2.0}
    ),
    "mixture compute and overhead": dict(
        compute={"per_partition": DISTRIBUTION_EXAMPLES["mixture"], "overhead": DISTRIBUTION_EXAMPLES["mixture"]},
        straggling=MARKOV,
        failures=CRASHES,
    ),
}
FIELDS = ("straggling", "injected", "busy", "crash", "overhead")


def case(name: str, iterations: int = 37):
    sc = scenario(iterations=iterations, variants=[{"scheme": "fr", "s": 1}], **CASES[name])
    return sc, scheme_for(sc, sc.variants[0])


def test_every_distribution_has_an_example():
    assert set(DISTRIBUTION_EXAMPLES) == set(DISTRIBUTIONS.names())


@pytest.mark.parametrize("name", DISTRIBUTIONS.names())
@given(cuts=st.lists(st.integers(0, 40), max_size=5))
@example(cuts=[1, 1, 7])
def test_a_blockwise_distribution_drawn_in_blocks_is_one_draw(name, cuts):
    """What ``blockwise`` promises: rows drawn block after block from one generator are one draw's rows."""
    distribution = DISTRIBUTIONS.get(name).model_validate(DISTRIBUTION_EXAMPLES[name])
    whole = distribution.sample(np.random.default_rng(3), (40, 5, 2))
    rng, edges = np.random.default_rng(3), sorted({0, 40, *cuts})
    blocks = np.concatenate([distribution.sample(rng, (b - a, 5, 2)) for a, b in pairwise(edges)])
    assert np.array_equal(blocks, whole) == distribution.blockwise or len(edges) == 2


@pytest.mark.parametrize("name", CASES)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=8))
@example(sizes=[1])
def test_blocks_of_any_sizes_are_draw_run(name, sizes):
    sc, scheme = case(name)
    whole, blocks = draw_run(sc, scheme, 5), DrawBlocks(sc, scheme, 5)
    drawn = []
    while blocks.drawn < sc.iterations:
        drawn.append(blocks.next(min(sizes[len(drawn) % len(sizes)], sc.iterations - blocks.drawn)))
    for field in FIELDS:
        assert np.array_equal(np.concatenate([getattr(b, field) for b in drawn]), getattr(whole, field)), field


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("block_rows", [1, 4, 100])
def test_drawn_rows_read_by_row_and_by_pairs_are_draw_run(name, block_rows):
    sc, scheme = case(name)
    whole, rows = draw_run(sc, scheme, 5), DrawnRows(sc, scheme, 5, block_rows)
    assert rows.busy[9] == whole.busy[9].tolist() and rows.crash[2] == whole.crash[2].tolist()
    assert rows.rows_drawn == min(sc.iterations, block_rows * (9 // block_rows + 1))  # no row past the block of 9
    pairs = np.array([0, 36, 9, 20]), np.array([5, 0, 3, 3])
    for field in ("straggling", "injected"):
        assert np.array_equal(getattr(rows, field)[pairs], getattr(whole, field)[pairs]), field
    assert [rows.busy[r] for r in range(sc.iterations)] == whole.busy.tolist()
    with pytest.raises(IndexError):
        rows.busy[sc.iterations]


def test_an_asynchronous_run_draws_the_rows_its_jobs_read_not_every_row(monkeypatch):
    """async (k = 1) at n = 50 over 2,000 updates: a worker runs about 40 jobs, so the rows up to its busiest
    worker's last job are drawn (in blocks of 8 rows), not the 2,000 rows of a full draw. (That the results are
    the full draw's: tests/test_event_engine.py, against the calendar reference on draw_run.)"""
    made: list[DrawnRows] = []

    def drawn_rows(scenario, scheme, seed):
        made.append(DrawnRows(scenario, scheme, seed, block_rows=8))
        return made[-1]

    monkeypatch.setattr(event, "DrawnRows", drawn_rows)
    straggling = {"model": "independent", "probability": 0.3, "slowdown": 2.0}
    sc = scenario(
        workers=50, iterations=2000, variants=[{"scheme": "uncoded", "policy": "async"}], straggling=straggling
    )
    rec = simulate_asynchronous(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 1)
    jobs = rec.used.sum(axis=0) + 1  # a worker's jobs: its used results and the one still running (rows 0..jobs-1)
    assert made[0].rows_drawn == 8 * -(-jobs.max() // 8) < sc.iterations // 10
