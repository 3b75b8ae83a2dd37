"""SR-SGC (gcbench/coding/sequential.py) run by the master: a job decoded rounds after its dispatch.

The master on the event engine, given a delay profile and the authors' round rule (relative_deadline), ends every
round where gcbench/testing/sgc_replay.py's replay of their code does; every job decodes exactly from the results its
rounds received, under every straggler pattern the (B, W, lambda) model admits (exhaustive for small n,
Hypothesis beyond); a pattern outside the model is waited out; what the scheme cannot run is one sentence."""

from __future__ import annotations

import copy
import itertools
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.coding import make_scheme
from gcbench.coding.sequential import LOST, SelectiveRepeatRounds, tolerated
from gcbench.testing.sgc_replay import SelectiveRepeatReplay

runner = CliRunner()


def bursty_delays(workers: int, rounds: int, seed: int) -> np.ndarray:
    """(workers x rounds) delays near 1 s, with bursts in which one or two workers take 3 to 4 s for a few rounds."""
    rng = np.random.default_rng(seed)
    delays = rng.uniform(0.9, 1.1, (workers, rounds))
    for _ in range(rounds // 3):
        w, r, length = rng.integers(workers), rng.integers(rounds), rng.integers(1, 4)
        delays[w, r : r + length] = rng.uniform(3.0, 4.0)
    return delays


def write_profile(path: Path, delays: np.ndarray) -> Path:
    """A delay profile in the repository's format: per round, every worker's started and finished times."""
    rounds = [
        {"round": r, "results": [{"worker_id": w, "started": 0.5, "finished": 0.5 + float(delays[w, r])}
                                 for w in range(delays.shape[0])]}
        for r in range(delays.shape[1])
    ]  # fmt: skip
    path.write_bytes(pickle.dumps(rounds))
    return path


def simulate(tmp_path: Path, delays: np.ndarray, variants: str, extra: str = "") -> pd.DataFrame:
    write_profile(tmp_path / "p.pkl", delays)
    scenario = tmp_path / "sr.yaml"
    scenario.write_text(
        f"name: sr\nworkers: {delays.shape[0]}\niterations: {delays.shape[1]}\nstale_work: abandon\n"
        "compute: {trace: {path: p.pkl, load_scaling: none}}\nnetwork: {latency: 0.0, bandwidth: null}\n"
        f"{extra}variants:\n{variants}"
    )
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "run"), "--force"])
    assert result.exit_code == 0, result.output
    return pd.read_parquet(tmp_path / "run" / "iterations.parquet")


@pytest.mark.parametrize(("burst", "window", "lam"), [(1, 2, 2), (2, 3, 2), (1, 3, 3)])
@pytest.mark.parametrize("mu", [0.2, 1.0])
def test_the_master_ends_rounds_where_the_authors_code_does(tmp_path, burst, window, lam, mu):
    workers, rounds = 6, 40
    delays = bursty_delays(workers, rounds, seed=burst * 10 + lam)
    s = tolerated(burst, window, lam)
    policy = f"{{name: relative_deadline, mu: {mu}}}"
    variant = f"  - {{scheme: sr_sgc, s: {s}, burst: {burst}, window: {window}, lam: {lam}, policy: {policy}}}\n"
    table = simulate(tmp_path, delays, variant)
    replay = SelectiveRepeatReplay(burst, window, lam).replay(delays, rounds - burst, mu)
    # the replay's last B rounds only finish its jobs; before them the two run the same rounds
    np.testing.assert_allclose(table["duration"][: rounds - burst], replay.durations[: rounds - burst], rtol=1e-12)
    # the profile makes rounds wait, lose results and repeat tasks
    assert replay.waits > 0 and (replay.state == LOST).any()
    assert any((replay.state[:, r] == r - burst).any() for r in range(burst, rounds))
    staleness = table["staleness"].to_numpy()
    assert np.isnan(staleness[:burst]).all() and (staleness[burst:] == burst).all()
    assert table["exact"].all()


def test_wait_all_waits_for_every_worker_and_decodable_ends_rounds_sooner_on_short_bursts(tmp_path):
    """On a profile of short bursts; under long ones a greedy `decodable` can lose overall (docs/coding.md)."""
    delays = bursty_delays(6, 40, seed=3)
    variants = (
        "  - {label: own, scheme: sr_sgc, s: 1, burst: 1, window: 2, lam: 2}\n"
        "  - {label: theirs, scheme: sr_sgc, s: 1, burst: 1, window: 2, lam: 2,"
        " policy: {name: relative_deadline, mu: 1}}\n"
        "  - {label: all, scheme: sr_sgc, s: 1, burst: 1, window: 2, lam: 2, policy: wait_all}\n"
    )
    table = simulate(tmp_path, delays, variants)
    total = table.groupby("variant")["duration"].sum()
    assert total["own"] < total["theirs"] < total["all"]
    waited = table[table["variant"] == "all"]["duration"].to_numpy()
    np.testing.assert_allclose(waited, delays.max(axis=0), rtol=1e-12)  # wait_all: every worker, every round


def fitting_patterns(state, r: int, n: int):
    for bits in itertools.product([False, True], repeat=n):
        late = np.array(bits)
        if state.fits(r, late):
            yield late


def check_round(scheme, state: SelectiveRepeatRounds, r: int, late: np.ndarray) -> None:
    """Round r's stragglers fit the model: the round may end, and the job due decodes exactly (its per-job code's
    weights on the workers whose results for it came in, over its rounds)."""
    assert state.fits(r, late) and state.can_end(r, late), (r, state.served)
    state.end(r, late)
    job, burst = state.due(r), state.B
    if job is None:
        return
    served = state.served[:, [job, job + burst]] == job
    assert not (served[:, 0] & served[:, 1]).any()  # a repeat is by a worker whose result was lost
    ids = [m for w in np.flatnonzero(served.any(axis=1)) for m in scheme.messages(int(w))]
    decoding = scheme.decoding(ids)
    decoded = decoding.weights @ scheme.rows[list(decoding.message_ids)]
    np.testing.assert_allclose(decoded, np.ones((1, scheme.n)), atol=1e-9)


def sr_sgc(n: int, burst: int, window: int, lam: int):
    return make_scheme("sr_sgc", n=n, s=tolerated(burst, window, lam), burst=burst, window=window, lam=lam)


@pytest.mark.parametrize(("burst", "window", "lam"), [(1, 2, 2), (1, 2, 1), (2, 3, 2), (1, 3, 3)])
def test_every_pattern_the_model_admits_decodes_every_job_exhaustively_at_n_4(burst, window, lam):
    n, depth = 4, 4
    scheme = sr_sgc(n, burst, window, lam)

    assert walk_patterns(scheme, scheme.rounds(depth), 0, depth, check_round) > 20


def walk_patterns(scheme, state, r: int, depth: int, check, began=lambda state, r: None) -> int:
    """Every path of straggler patterns the model admits from round r to ``depth``, each round checked (``check``)
    on a copy of the bookkeeping; ``began`` sees each round's tasks. The number of paths."""
    if r == depth:
        return 1
    state.begin(r)
    began(state, r)
    paths = 0
    for late in list(fitting_patterns(state, r, scheme.n)):
        child = copy.deepcopy(state)
        check(scheme, child, r, late)
        paths += walk_patterns(scheme, child, r + 1, depth, check, began)
    return paths


@given(data=st.data(), n=st.integers(5, 10), params=st.sampled_from([(1, 2, 2), (2, 3, 3), (1, 3, 4), (2, 5, 4)]))
def test_every_pattern_the_model_admits_decodes_every_job(data, n, params):
    scheme, rounds = sr_sgc(n, *params), 12
    state = scheme.rounds(rounds)
    for r in range(rounds):  # each round's stragglers drawn among those that fit the model, given the past
        state.begin(r)
        late = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        if not state.fits(r, late):
            late[:] = False  # outside the model: the master waits it out (everyone arrives)
        check_round(scheme, state, r, late)


def test_a_pattern_outside_the_model_is_waited_out(tmp_path):
    delays = np.ones((6, 8))
    delays[:3, 2] = 5.0  # three stragglers at once: more than lam = 2 in a window
    variant = "  - {scheme: sr_sgc, s: 1, burst: 1, window: 2, lam: 2, policy: {name: relative_deadline, mu: 1}}\n"
    table = simulate(tmp_path, delays, variant)
    assert table["duration"][2] == 5.0 and table["stop"][2] == "all_arrived"
    own = simulate(tmp_path, delays, variant.replace(", policy: {name: relative_deadline, mu: 1}", ""))
    assert own["duration"][2] == 5.0  # decodable waits for a pattern that fits: here, everyone


SR = "  - {scheme: sr_sgc, s: 1, burst: 1, window: 2, lam: 2POLICY}\n"


@pytest.mark.parametrize(
    ("variant", "extra", "message"),
    [
        (SR.replace("s: 1", "s: 2").replace("POLICY", ""), "", "so its s must be 1 (got 2)"),
        (SR.replace("window: 2", "window: 4").replace("burst: 1", "burst: 2").replace("POLICY", ""), "",
         "window - 1 to be a multiple of burst"),
        (SR.replace("POLICY", ", policy: {name: fastest_k, k: 4}"), "", "not fastest_k"),
        (SR.replace("POLICY", ", policy: async"), "", "not async"),
        (SR.replace("POLICY", ", policy: {name: decodable, fallback: approximate}"), "", "decodes every job exactly"),
        (SR.replace("POLICY", ", code: rs"), "", "code must be one of cyclic_mds, cr, fr"),
    ],
)  # fmt: skip
def test_what_sr_sgc_cannot_run_is_one_sentence_and_exit_2(tmp_path, variant, extra, message):
    write_profile(tmp_path / "p.pkl", np.ones((6, 4)))
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(
        f"name: bad\nworkers: 6\niterations: 4\ncompute: {{trace: {{path: p.pkl, load_scaling: none}}}}\n"
        f"{extra}variants:\n{variant}"
    )
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_a_real_run_of_sr_sgc_is_refused_in_one_sentence(tmp_path):
    scenario = tmp_path / "real.yaml"
    scenario.write_text(
        "name: real\nworkers: 4\niterations: 4\ntraining: {batch_size: 16}\n"
        "compute: {per_partition: {distribution: shifted_exponential, shift: 0.01, rate: 100}}\n"
        "variants:\n  - {scheme: sr_sgc, s: 1, burst: 1, window: 2, lam: 2}\n"
    )
    result = runner.invoke(app, ["run", str(scenario), "--backend", "local", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "simulate it with --sim" in result.output, result.output


def test_a_variant_that_leaves_s_out_gets_s_prime_so_a_sweep_over_lambda_runs(tmp_path):
    """s' follows from (B, W, lambda): leaving s out gives it (labels and the s column say it), so a sweep over
    lambda runs each point at its own s'; a wrong s given is still refused."""
    from gcbench.scenario.schema import Variant

    assert Variant.model_validate({"scheme": "sr_sgc", "burst": 1, "window": 3, "lam": 4}).s == 2
    assert Variant.model_validate({"scheme": "sr_sgc"}).s == 1  # the defaults: B = 1, W = 2, lambda = 1
    assert Variant.model_validate({"scheme": "cr"}).s == 0  # (a scheme whose s is free keeps the default)
    write_profile(tmp_path / "p.pkl", bursty_delays(6, 12, seed=1))
    scenario = tmp_path / "sweep.yaml"
    scenario.write_text(
        "name: sweep\nworkers: 6\niterations: 12\ncompute: {trace: {path: p.pkl, load_scaling: none}}\n"
        "variants:\n  - {label: SR-SGC, scheme: sr_sgc, burst: 1, window: 2}\nsweep:\n  variants[0].lam: [1, 2, 3, 4]\n"
    )
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(tmp_path / "run" / "iterations.parquet")
    assert table.groupby("point")["s"].first().tolist() == [1, 1, 2, 2]
