"""The asynchronous recorder keeps only the cells its results write, and reads back as the dense arrays would."""

from __future__ import annotations

import numpy as np

from gcbench.results.sparse import SparseCells
from gcbench.scenario.build import scheme_for
from gcbench.sim.asynchronous import simulate_asynchronous
from gcbench.sim.synchronous import simulate_synchronous

from simhelpers import scenario


def test_sparse_cells_read_back_what_a_dense_array_holds_after_the_same_writes():
    rng = np.random.default_rng(3)
    shape = (50, 7)
    dense, sparse = np.full(shape, np.nan), SparseCells(shape, float, 0.0)
    dense[:], sparse[:] = np.nan, np.nan
    for step in range(400):
        if step % 3 == 0:  # single cells (as failures are noted), some written again later
            row, column, value = int(rng.integers(50)), int(rng.integers(7)), float(rng.random())
            dense[row, column] = sparse[row, column] = value
        else:  # a batch with repeated cells: the last write wins in both
            rows, columns = rng.integers(0, 50, 5), rng.integers(0, 7, 5)
            values = rng.random(5)
            dense[rows, columns] = values
            sparse[rows, columns] = values
    assert np.array_equal(np.asarray(sparse), dense, equal_nan=True)
    assert np.array_equal(sparse[10:20], dense[10:20], equal_nan=True)
    assert np.array_equal(sparse[33], dense[33], equal_nan=True)
    assert np.array_equal(sparse[np.array([2, 5, 41])], dense[[2, 5, 41]], equal_nan=True)
    assert np.array_equal(sparse[np.array([41, 2])], dense[[41, 2]], equal_nan=True)
    assert sparse.cells() <= 50 * 7


def test_an_asynchronous_run_keeps_cells_for_its_results_not_for_every_worker_of_every_update():
    sc = scenario(workers=200, iterations=300, variants=[{"scheme": "uncoded", "policy": "async"}])
    rec = simulate_asynchronous(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    # k = 1: one result per update, so one cell per update in each array (the dense arrays held 200)
    assert rec.used.cells() == rec.compute_start.cells() == 300
    assert rec.iteration_columns()["messages_used"].tolist() == [1] * 300
    assert np.isnan(rec.worker_columns(np.ones(200))["arrival"]).sum() == 300 * 199


def test_without_worker_times_the_vectorised_engine_gives_the_same_iterations():
    straggling = {"model": "independent", "probability": 0.2, "slowdown": 3.0}
    sc = scenario(workers=8, iterations=200, variants=[{"scheme": "fr", "s": 1}], straggling=straggling)
    v, scheme = sc.variants[0], scheme_for(sc, sc.variants[0])
    full, alone = simulate_synchronous(sc, v, scheme, 0), simulate_synchronous(sc, v, scheme, 0, worker_times=False)
    for name, column in full.iteration_columns().items():
        assert np.array_equal(alone.iteration_columns()[name], column, equal_nan=name == "bytes_received"), name
    assert alone.compute_start.shape[0] == 1  # no (iterations x n) times kept
