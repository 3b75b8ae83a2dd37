"""M-SGC (gcbench/coding/multiplexed.py) run by the master: W - 1 + B mini-tasks a round, each for its own job.

The master on the event engine, given a delay profile and the authors' round rule (relative_deadline), ends every
round where gcbench/testing/sgc_replay.py's replay of their code does; every job decodes exactly from its mini-tasks'
results under every straggler pattern the (B, W, lambda) model admits (exhaustive for small n, Hypothesis
beyond), D1 chunks redone in D2 slots included; a pattern outside the model is waited out; trained in the
simulator, the delayed updates do not depend on who straggled; what the scheme cannot run is one sentence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from test_sequential import bursty_delays, simulate, walk_patterns
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.coding import SchemeParameterError, make_scheme
from gcbench.coding.multiplexed import D1, MultiplexedRounds
from gcbench.coding.sequential import LOST
from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario
from gcbench.testing.sgc_replay import MultiplexedReplay

runner = CliRunner()


def m_sgc(n: int, burst: int, window: int, lam: int, code: str = "cyclic_mds"):
    return make_scheme("m_sgc", n=n, s=lam, burst=burst, window=window, lam=lam, code=code)


def test_the_layout_is_the_papers_equal_mini_tasks():
    """n = 4, B = 1, W = 3, lambda = 2: k = n((W - 1)(lambda + 1) + B) = 28 partitions; each of a worker's three
    messages combines lambda + 1 = 3 of them; a round costs 9/28 of a mini-batch, the authors' normalised load."""
    scheme = m_sgc(4, 1, 3, 2)
    assert scheme.k == 28 and scheme.delay == 2 and scheme.messages_per_worker == 3
    assert all(len(scheme.message_partitions(w, i)) == 3 for w in range(4) for i in range(3))
    assert scheme.step_load(0) * scheme.partition_share / scheme.n == pytest.approx(MultiplexedReplay(1, 3, 2).load(4))
    every = sorted(j for w in range(4) for i in range(2) for j in scheme.message_partitions(w, i))
    assert every == list(range(24))  # the D1 chunks: each partition once, uncoded
    decoding = scheme.decoding(list(range(len(scheme.message_owner))))
    np.testing.assert_allclose(decoding.weights @ scheme.rows[list(decoding.message_ids)], np.ones((1, 28)), atol=1e-9)


@pytest.mark.parametrize(("burst", "window", "lam"), [(1, 2, 2), (1, 3, 2), (2, 3, 2), (2, 4, 3)])
@pytest.mark.parametrize("mu", [0.2, 1.0])
def test_the_master_ends_rounds_where_the_authors_code_does(tmp_path, burst, window, lam, mu):
    workers, rounds = 6, 40
    delays = bursty_delays(workers, rounds, seed=burst * 10 + lam + window)
    policy = f"{{name: relative_deadline, mu: {mu}}}"
    variant = f"  - {{scheme: m_sgc, burst: {burst}, window: {window}, lam: {lam}, policy: {policy}}}\n"
    table = simulate(tmp_path, delays, variant)
    design = MultiplexedReplay(burst, window, lam)
    replay = design.replay(delays, rounds - design.delay, mu)
    np.testing.assert_allclose(table["duration"], replay.durations, rtol=1e-12)
    # the profile makes rounds wait and lose results
    assert replay.waits > 0 and (replay.state == LOST).any()
    staleness = table["staleness"].to_numpy()
    assert np.isnan(staleness[: design.delay]).all() and (staleness[design.delay :] == design.delay).all()
    assert table["exact"].all()


def received_for(scheme, state: MultiplexedRounds, job: int) -> list[int]:
    """The message ids of ``job``'s mini-task results the rounds received (a redo is the chunk it redid)."""
    ids = []
    for w in range(scheme.n):
        for m in range(state.slots):
            rnd = job + m
            if rnd >= state.work.shape[2] or state.work[w, m, rnd] in (LOST, -2):
                continue
            index = dict(((j, i) for j, i in state.tasks(w, rnd)))[job]
            ids.append(scheme.messages(w)[index])
    return ids


def check_round(scheme, state: MultiplexedRounds, r: int, late: np.ndarray) -> None:
    """Round r's stragglers fit the model: the round may end, and the job due decodes exactly from the message
    ids its mini-tasks' results carry (no chunk twice)."""
    assert state.fits(r, late) and state.can_end(r, late), (r, state.work[:, :, : r + 1])
    state.end(r, late)
    job = state.due(r)
    if job is None:
        return
    ids = received_for(scheme, state, job)
    assert len(ids) == len(set(ids))  # a redo is of a chunk that was lost
    decoding = scheme.decoding(ids)
    decoded = decoding.weights @ scheme.rows[list(decoding.message_ids)]
    np.testing.assert_allclose(decoded, np.ones((1, scheme.k)), atol=1e-9)


@pytest.mark.parametrize(("burst", "window", "lam"), [(1, 2, 1), (1, 2, 2), (1, 3, 2), (2, 3, 1), (2, 4, 2)])
def test_every_pattern_the_model_admits_decodes_every_job_exhaustively_at_n_4(burst, window, lam):
    n, depth = 4, 5
    scheme = m_sgc(n, burst, window, lam)
    redone = []
    began = lambda state, r: redone.append(bool((state.redo[:, :, r] >= 0).any()))  # noqa: E731
    assert walk_patterns(scheme, scheme.rounds(depth), 0, depth, check_round, began) > 20
    assert any(redone)  # some paths redo lost D1 chunks in D2 slots


@given(data=st.data(), n=st.integers(5, 9), params=st.sampled_from([(1, 2, 2), (2, 3, 3), (1, 3, 4), (2, 5, 2)]))
@example(data=None, n=5, params=(2, 3, 3)).via("a burst of two rounds on three workers, then redos")
def test_every_pattern_the_model_admits_decodes_every_job(data, n, params):
    scheme, rounds = m_sgc(n, *params), 12
    state = scheme.rounds(rounds)
    for r in range(rounds):  # each round's stragglers drawn among those that fit the model, given the past
        state.begin(r)
        if data is None:  # the example: workers 0-2 straggle in rounds 1 and 2
            late = np.array([r in (1, 2) and w < 3 for w in range(n)])
        else:
            late = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        if not state.fits(r, late):
            late[:] = False  # outside the model: the master waits it out (everyone arrives)
        check_round(scheme, state, r, late)


def test_a_d2_slot_redoes_the_chunk_its_worker_lost():
    state = MultiplexedRounds(n=3, B=1, W=3, lam=1, rounds=4)
    state.begin(0)
    state.end(0, np.array([True, False, False]))  # worker 0 loses job 0's chunk 0
    state.begin(1)
    state.end(1, np.zeros(3, bool))
    state.begin(2)  # slot 2 of round 2 serves job 0: worker 0 redoes chunk 0, the others do D2 group 0
    assert state.tasks(0, 2) == ((2, 0), (1, 1), (0, 0)) and state.tasks(1, 2) == ((2, 0), (1, 1), (0, 2))
    assert state.work[0, 2, 2] == D1 and state.work[1, 2, 2] == 1
    assert state.can_end(2, np.zeros(3, bool))  # job 0: every chunk, and n - lambda = 2 group results
    assert not state.can_end(2, np.array([False, True, False]))  # worker 1 lost too: one group result only


def test_a_pattern_outside_the_model_is_waited_out(tmp_path):
    delays = np.ones((6, 8))
    delays[:3, 2] = 5.0  # three stragglers at once: more than lam = 2 in a window
    variant = "  - {scheme: m_sgc, burst: 1, window: 2, lam: 2, policy: {name: relative_deadline, mu: 1}}\n"
    table = simulate(tmp_path, delays, variant)
    assert table["duration"][2] == 5.0 and table["stop"][2] == "all_arrived"
    own = simulate(tmp_path, delays, variant.replace(", policy: {name: relative_deadline, mu: 1}", ""))
    assert own["duration"][2] == 5.0  # decodable waits for a pattern that fits: here, everyone


def test_the_simulator_charges_a_round_the_schemes_share_of_a_mini_batch(tmp_path):
    """Deterministic compute, 0.1 s per uncoded partition: an M-SGC round (B = 1, W = 3, lambda = 2) computes 9 of
    k = 42 partitions of a mini-batch at n = 6, so it takes 0.1 x 9 x 6 / 42 s; an uncoded one 0.1 s."""
    scenario = tmp_path / "m.yaml"
    scenario.write_text(
        "name: m\nworkers: 6\niterations: 5\ncompute: {per_partition: {distribution: deterministic, value: 0.1}}\n"
        "network: {latency: 0.0, bandwidth: null}\nvariants:\n"
        "  - {scheme: m_sgc, burst: 1, window: 3, lam: 2}\n  - {scheme: uncoded}\n"
    )
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "run"), "--force"])
    assert result.exit_code == 0, result.output
    import pandas as pd

    table = pd.read_parquet(tmp_path / "run" / "iterations.parquet")
    durations = table.groupby("scheme")["duration"].mean()
    assert durations["m_sgc"] == pytest.approx(0.1 * 9 * 6 / 42) and durations["uncoded"] == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"s": 1, "lam": 2}, r"so its s must be 2 \(got 1\)"),
        ({"s": 3, "lam": 4}, r"'lam' parameter of m_sgc must be an int in \[1, 3\]"),  # lambda = n: no coded part
        ({"s": 1, "lam": 1, "code": "rs"}, "code must be one of cyclic_mds, cr, fr"),
        ({"s": 1, "lam": 1, "window": 1}, "'window' parameter of m_sgc must be"),
        ({"s": 2, "lam": 2, "code": "fr"}, "coded groups cannot use fr here"),  # fr needs lambda + 1 to divide n
    ],
)
def test_what_m_sgc_cannot_take_is_one_sentence(params, message):
    with pytest.raises(SchemeParameterError, match=message):
        make_scheme("m_sgc", n=4, **params)


MS = "  - {scheme: m_sgc, burst: 1, window: 2, lam: 2POLICY}\n"


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        (MS.replace("POLICY", ", policy: {name: fastest_k, k: 4}"), "not fastest_k"),
        (MS.replace("POLICY", ", policy: async"), "not async"),
        (MS.replace("POLICY", ", s: 1"), "so its s must be 2 (got 1)"),
        (MS.replace("lam: 2", "lam: 4").replace("POLICY", ""), "'lam' parameter of m_sgc must be an int in [1, 3]"),
    ],
)
def test_what_a_scenario_cannot_run_is_one_sentence_and_exit_2(tmp_path, variant, message):
    scenario = tmp_path / "m.yaml"
    scenario.write_text(
        "name: m\nworkers: 4\niterations: 5\ncompute: {per_partition: {distribution: deterministic, value: 0.1}}\n"
        f"variants:\n{variant}"
    )
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and message in result.output, result.output


def test_the_fast_path_is_refused_in_one_sentence_and_auto_avoids_it(tmp_path):
    scenario = tmp_path / "m.yaml"
    body = (
        "name: m\nworkers: 4\niterations: 5\ncompute: {per_partition: {distribution: deterministic, value: 0.1}}\n"
        f"variants:\n{MS.replace('POLICY', '')}"
    )
    scenario.write_text("engine: vectorised\n" + body)
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "takes one message per worker a round" in result.output, result.output
    scenario.write_text(body)
    result = runner.invoke(app, ["simulate", str(scenario), "--out", str(tmp_path / "run2")])
    assert result.exit_code == 0 and "engine: event" in result.output, result.output


def test_the_variant_gets_s_from_lambda_when_it_leaves_it_out():
    scenario = Scenario.model_validate({
        "name": "m", "workers": 5, "iterations": 3, "variants": [{"scheme": "m_sgc", "lam": 3, "window": 3}],
        "compute": {"per_partition": {"distribution": "deterministic", "value": 0.1}},
    })  # fmt: skip
    assert scenario.variants[0].s == 3 and scheme_for(scenario, scenario.variants[0]).k == 5 * (2 * 4 + 1)


def test_gcbench_schemes_shows_m_sgc_without_a_table_too_wide_to_read():
    result = runner.invoke(app, ["schemes", "m_sgc", "--n", "6", "--burst", "1", "--window", "3", "--lam", "2"])
    text = " ".join(result.output.split())
    assert result.exit_code == 0 and "k=42 partitions, s=2" in text, result.output
    assert "tolerates (B, W, lambda)-bursty stragglers across rounds" in text
    assert "coefficient table of its 42 partitions is too wide to print" in text
