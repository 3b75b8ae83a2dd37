"""`gcbench recommend` on clusters whose answer is known: fastest-k's times are exponential order statistics, a
chronic straggler makes a code with s >= 1 win and is named, candidates share their draws (equal codes tie bit for
bit, a second ranking is the first), and bad input is one sentence with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.errors import GcbenchError
from gcbench.scenario.loading import load_scenario
from gcbench.twin.candidates import enumerate_candidates
from gcbench.twin.recommend import recommend

runner = CliRunner()
RATE = 10.0


def cluster(tmp_path: Path, workers: int = 6, extra: str = "") -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        f"name: cluster\nworkers: {workers}\niterations: 100\nseeds: [0]\n"
        f"compute: {{per_partition: {{distribution: exponential, rate: {RATE}}}, load: scale}}\n"
        "network: {latency: 0.0, bandwidth: 1.0e12}\ngradient: {length: 1000, dtype: float32}\n"
        f"{extra}variants:\n  - {{scheme: uncoded, policy: wait_all}}\n"
    )
    return path


def scenario_of(path: Path):
    return load_scenario(path)[0].scenario


def test_candidates_are_every_scheme_s_and_policy_the_constraints_allow(tmp_path):
    candidates = enumerate_candidates(scenario_of(cluster(tmp_path, workers=6)), max_s=2)
    labels = [c.variant.display_label() for c in candidates]
    assert not any(label.startswith("sr_sgc") for label in labels)  # a search of its own, asked for by name
    assert len(set(labels)) == len(labels)
    assert {"uncoded", "uncoded/fastest-5", "uncoded/fastest-4", "fr(s=1)", "fr(s=2)", "cr(s=2)"} <= set(labels)
    assert "cce_fr(s=2)" not in labels  # (s + m) | n with m = 2: 4 does not divide 6
    assert "cce_fr(s=1)" in labels and "bcc(s=2)" in labels  # b(s + 1) <= n with b = 2: 6 <= 6
    kinds = {c.variant.display_label(): c.exact for c in candidates}
    assert kinds["cr(s=1)"] and not kinds["uncoded/fastest-5"] and not kinds["is_gc(s=1,d=2)"]
    assert all(c.variant.s <= 2 for c in candidates)
    prime = enumerate_candidates(scenario_of(cluster(tmp_path, workers=7)), schemes=["fr", "cr"], max_s=3)
    assert [c.variant.display_label() for c in prime] == ["cr(s=1)", "cr(s=2)", "cr(s=3)"]  # fr needs (s+1) | 7


def test_fastest_k_means_are_the_exponential_order_statistics(tmp_path):
    scenario = scenario_of(cluster(tmp_path))
    table, basis = recommend(scenario, enumerate_candidates(scenario, schemes=["uncoded"], max_s=3), 4000)
    n = scenario.workers
    for row in table.itertuples():
        k = n if row.candidate == "uncoded" else int(row.candidate.rsplit("-", 1)[1])
        expected = sum(1.0 / (RATE * (n - j)) for j in range(k))  # E[k-th of n exponentials]
        half = (row.ci_high - row.ci_low) / 2
        assert abs(row.value - expected) < 2.5 * half, (row.candidate, row.value, expected)
    approximate = table[table["kind"] == "approximate"]
    assert list(approximate["candidate"]) == ["uncoded/fastest-3", "uncoded/fastest-4", "uncoded/fastest-5"]
    assert basis["metric"] == "mean iteration seconds" and basis["chronic_workers"] == {}


def test_a_chronic_straggler_makes_a_code_win_and_is_named(tmp_path):
    path = cluster(tmp_path, extra="straggling: {model: fixed, workers: [2], slowdown: 8}\n")
    scenario = scenario_of(path)
    table, basis = recommend(scenario, enumerate_candidates(scenario, max_s=2), 1000)
    exact = table[table["kind"] == "exact"]
    best = exact.iloc[0]
    assert best["s"] >= 1 and best["candidate"] != "uncoded" and best["speedup"] > 2
    assert list(basis["chronic_workers"]) == ["2"] and basis["chronic_workers"]["2"] > 0.5
    assert "worker 2's chronic slowness among them" in best["reason"]
    uncoded = table[table["candidate"] == "uncoded"].iloc[0]
    assert uncoded["speedup"] == 1.0 and uncoded["reason"].startswith("no redundancy")


def test_candidates_share_their_draws_and_one_code_under_two_names_is_one_row(tmp_path):
    scenario = scenario_of(cluster(tmp_path, extra="straggling: {model: independent, probability: 0.2, slowdown: 4}\n"))
    schemes = ["uncoded", "ignore_stragglers", "fr", "heterogeneous", "cr"]
    candidates = enumerate_candidates(scenario, schemes=schemes, max_s=2)
    first, basis = recommend(scenario, candidates, 500)
    again, _ = recommend(scenario, candidates, 500)
    pd.testing.assert_frame_equal(first, again, check_exact=True)
    values = first.set_index("candidate")["value"]
    # on common draws, candidates that wait for the same workers take the same times, to the bit: ignoring s
    # stragglers is waiting for the fastest n - s, and the heterogeneous code at equal speeds is FR; each pair is
    # one row, which says whom it stands for
    assert basis["merged"]["uncoded/fastest-5"] == ["ignore_stragglers(s=1)"]
    assert basis["merged"]["fr(s=2)"] == ["heterogeneous(s=2)"]
    reasons = first.set_index("candidate")["reason"]
    assert "(heterogeneous(s=2) runs the same iterations)" in reasons["fr(s=2)"]
    assert "heterogeneous(s=2)" not in values.index and "ignore_stragglers(s=1)" not in values.index
    assert values["cr(s=1)"] != values["fr(s=1)"]  # (and different codes differ)
    # so near ties are between codes that differ: listed best first, none the same iterations as another
    for kind, labels in basis["near_ties"].items():
        best = first[first["kind"] == kind]["value"].min()
        assert all(values[label] <= 1.1 * best for label in labels)
        assert len({values[label] for label in labels}) == len(labels), labels
        assert labels[0] == first.loc[first["kind"] == kind, "candidate"].iloc[0]


def test_the_advice_comes_first_true_of_its_pick_with_uncoded_and_a_variant_to_paste(tmp_path):
    import yaml

    from gcbench.scenario.schema import Variant
    from gcbench.twin.advice import advise

    scenario = scenario_of(cluster(tmp_path, extra="straggling: {model: fixed, workers: [2], slowdown: 8}\n"))
    candidates = enumerate_candidates(scenario, schemes=["uncoded", "ignore_stragglers", "fr", "cr"], max_s=2)
    table, basis = recommend(scenario, candidates, 300)
    advice = advise(table, basis, candidates, scenario)
    best_exact = table[table["kind"] == "exact"].iloc[0]
    uncoded = table.set_index("candidate").loc["uncoded", "value"]
    assert advice.pick == best_exact["candidate"] != "uncoded"
    assert advice.lines[0].startswith(f"Pick: {advice.pick}, predicted {best_exact['value']:.4g} s per iteration")
    assert f"against uncoded's {uncoded:.4g}: {best_exact['speedup']:.2f}x its speed" in advice.lines[0]
    assert "worker 2's chronic slowness among them" in advice.lines[0]  # (worker 2 is the chronic straggler)
    # an approximate candidate is never said to tolerate the straggler: it leaves it out
    approximate = table[table["kind"] == "approximate"]
    assert not approximate["reason"].str.contains("tolerates").any()
    assert any(line.startswith("Faster per iteration but approximate: ") for line in advice.lines)
    pasted = yaml.safe_load(advice.lines[-1].removeprefix("As a scenario's variant: "))
    assert Variant.model_validate(pasted).display_label() == advice.pick


def test_write_scenario_runs_the_pick_beside_uncoded(tmp_path):
    path = cluster(tmp_path, extra="straggling: {model: fixed, workers: [2], slowdown: 8}\n")
    picked = tmp_path / "picked.yaml"
    args = ["recommend", str(path), "--schemes", "uncoded,fr,cr", "--max-s", "2", "--iterations", "200",
            "--out", str(tmp_path / "out"), "--write-scenario", str(picked)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output.index("Pick: ") < result.output.index("best exact candidates")  # the advice first
    assert f"gcbench run {picked}" in result.output
    document = json.loads((tmp_path / "out" / "recommend.json").read_text())
    pick = next(r["candidate"] for r in document["ranked"] if r["kind"] == "exact")
    variants = scenario_of(picked).variants
    assert [v.display_label() for v in variants][:2] == ["uncoded", pick]
    simulated = runner.invoke(app, ["simulate", str(picked), "--out", str(tmp_path / "sim")])
    assert simulated.exit_code == 0 and "Fastest exact variant: " in simulated.output
    refused = runner.invoke(app, [*args[:-1], str(tmp_path), "--force"])
    assert refused.exit_code == 2 and "is a directory; give a file name" in refused.output


def test_gcbench_recommend_prints_the_best_and_writes_its_files(tmp_path):
    path = cluster(tmp_path, extra="straggling: {model: fixed, workers: [2], slowdown: 8}\n")
    out = tmp_path / "out"
    args = ["recommend", str(path), "--schemes", "uncoded,cr,fr", "--max-s", "2", "--iterations", "300",
            "--top", "2", "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "best exact candidates" in result.output and "chronic stragglers under uncoded training: worker 2" in (
        result.output
    )
    document = json.loads((out / "recommend.json").read_text())
    assert document["iterations"] == 300 and len(document["top"]) == 4  # two per kind
    assert {r["candidate"] for r in document["ranked"]} >= {"uncoded", "cr(s=1)", "fr(s=2)", "uncoded/fastest-4"}
    assert (out / "recommend.png").is_file() and (out / "recommend.csv").is_file()
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "holds files already" in again.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--schemes", "fr", "--max-s", "1"], "no candidate is left for 7 workers"),
        (["--schemes", "nope"], "unknown scheme nope"),
        (["--policies", "k_async"], "recommend cannot choose k_async (asynchronous ones with training only)"),
        (["--policies", "deadline"], "recommend cannot choose deadline"),
        (["--max-s", "-1"], "--max-s must be at least 0"),
        (["--placements", "pack"], "--placements places the workers on the scenario's nodes, and it has no topology"),
    ],
)
def test_bad_filters_are_one_sentence(tmp_path, args, message):
    result = runner.invoke(app, ["recommend", str(cluster(tmp_path, workers=7)), *args, "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and message in result.output, result.output
    assert result.output.count("\n") == 1


def test_an_unknown_scheme_is_named_before_the_cluster_is_read():
    """A typo in --schemes is said first, even where the source has a problem of its own (here: none exists)."""
    result = runner.invoke(app, ["recommend", "no/such/scenario.yaml", "--schemes", "frr"])
    assert result.exit_code == 2 and "unknown scheme frr" in result.output, result.output


def test_a_source_that_cannot_be_weighed_is_refused(tmp_path):
    sim = tmp_path / "sim"
    assert runner.invoke(app, ["simulate", str(cluster(tmp_path)), "--out", str(sim)]).exit_code == 0
    result = runner.invoke(app, ["recommend", str(sim)])
    assert result.exit_code == 2 and "is a sim run, not a real one" in result.output
    result = runner.invoke(app, ["recommend", str(tmp_path / "absent.yaml")])
    assert result.exit_code == 2 and "no such scenario file or results directory" in result.output
    swept = cluster(tmp_path, extra="sweep: {straggling.probability: [0.1, 0.2]}\n"
                    "straggling: {model: independent, probability: 0.1, slowdown: 2}\n")  # fmt: skip
    result = runner.invoke(app, ["recommend", str(swept)])
    assert result.exit_code == 2 and "fix the swept fields with --set" in result.output
    fixed = ["recommend", str(swept), "--set", "straggling.probability=0.3", "--schemes", "uncoded", "--max-s", "1",
             "--iterations", "50", "--out", str(tmp_path / "fixed")]  # fmt: skip
    result = runner.invoke(app, fixed)
    assert result.exit_code == 0, result.output
    assert (
        json.loads((tmp_path / "fixed" / "recommend.json").read_text())["scenario"]["straggling"]["probability"] == 0.3
    )
    scenario = scenario_of(cluster(tmp_path))
    trained = scenario.model_copy(update={"training": scenario.training.model_copy(update={"in_simulator": True})})
    with pytest.raises(GcbenchError, match="the scenario cannot run the candidates: training.batch_size: 256 is not"):
        enumerate_candidates(trained)
    fitting = trained.model_copy(update={"training": trained.training.model_copy(update={"batch_size": 240})})
    with pytest.raises(GcbenchError, match="give one"):
        recommend(fitting, enumerate_candidates(fitting, schemes=["uncoded"], max_s=1))


@pytest.mark.slow
def test_with_training_every_kind_is_ranked_together_by_the_time_to_the_target(tmp_path):
    training = (
        "training: {in_simulator: true, dataset: synthetic, model: softmax, batch_size: 240, "
        "learning_rate: 0.00003, eval_every: 5, target_accuracy: 0.6, device: cpu}\n"
        "straggling: {model: fixed, workers: [2], slowdown: 8}\n"
    )
    scenario = scenario_of(cluster(tmp_path, extra=training))
    candidates = enumerate_candidates(scenario, schemes=["uncoded", "fr", "pipelined_fr"], max_s=1)
    table, basis = recommend(scenario, candidates, 60)
    assert basis["metric"] == table["metric"].iloc[0] == "seconds to 60.0% accuracy"
    assert list(table["rank"]) == list(range(1, len(table) + 1))  # one ranking: exact, approximate, stale together
    assert set(table["kind"]) == {"exact", "approximate", "stale"} and {
        "uncoded/fastest-5",
        "uncoded/k_async-5",
    } <= set(table["candidate"])
    assert np.isfinite(table["value"]).any() and (table["value"].diff().dropna() >= 0).all()


def test_sequential_candidates_are_every_admissible_burst_window_and_lambda_ranked_as_stale(tmp_path):
    """sr_sgc at every (B, W, lambda) with B <= 2, W <= 5 and s' = ceil(B lambda / (W - 1 + B)) <= max_s, each
    with its own s'; a job's gradient applied B rounds late makes it a stale candidate, ranked apart."""
    extra = "straggling: {model: markov, enter: 0.05, leave: 0.3, slowdown: 6}\n"
    scenario = scenario_of(cluster(tmp_path, workers=5, extra=extra))
    candidates = enumerate_candidates(scenario, schemes=["uncoded", "sr_sgc"], max_s=1, policies=["decodable"])
    params = {tuple(c.variant.scheme_params()[k] for k in ("burst", "window", "lam")) for c in candidates}
    expected = {(B, W, lam) for B in (1, 2) for W in range(B + 1, 6, B) for lam in range(1, 5)
                if -(-B * lam // (W - 1 + B)) <= 1}  # fmt: skip
    assert params == expected and (1, 3, 2) in params and (1, 2, 3) not in params
    assert all(c.kind == "stale" and c.delay == c.variant.scheme_params()["burst"] for c in candidates)
    wider = enumerate_candidates(scenario, ["sr_sgc"], 2, ["decodable"], max_burst=3, max_window=7)
    found = {tuple(c.variant.scheme_params()[k] for k in ("burst", "window", "lam")) for c in wider}
    assert {(3, 4, 1), (3, 7, 2), (1, 7, 4), (2, 7, 4)} <= found and max(w for _, w, _ in found) == 7
    assert not any((w - 1) % b for b, w, _ in found)
    table, basis = recommend(scenario, candidates, 300)
    stale = table[table["kind"] == "stale"]
    assert len(stale) >= 2 and (stale["exact_share"] == 1.0).all()
    assert "applied 1 round late" in stale["reason"].str.cat() and "run the same" in stale["reason"].str.cat()
    for kept, others in basis["merged"].items():  # equal times, but a later update is another candidate
        delay = dict(zip(table["candidate"], table["reason"], strict=True))[kept].count("2 rounds late")
        assert all(("burst=2" in other) == bool(delay) for other in others), (kept, others)


def test_m_sgc_candidates_are_its_admissible_burst_window_and_lambda_at_their_share_of_the_compute(tmp_path):
    """m_sgc at every B < W <= 5, B <= 2 and lambda <= max_s (its s is lambda), its delay W - 2 + B; its load in
    uncoded partitions is (W - 1 + B)(lambda + 1) of k = n((W - 1)(lambda + 1) + B), times n."""
    extra = "straggling: {model: markov, enter: 0.05, leave: 0.3, slowdown: 6}\n"
    scenario = scenario_of(cluster(tmp_path, workers=5, extra=extra))
    candidates = enumerate_candidates(scenario, schemes=["m_sgc"], max_s=2, policies=["decodable"])
    params = {tuple(c.variant.scheme_params()[k] for k in ("burst", "window", "lam")): c for c in candidates}
    assert set(params) == {(B, W, lam) for lam in (1, 2) for W in range(2, 6) for B in (1, 2) if B < W}
    for (B, W, lam), candidate in params.items():
        assert candidate.kind == "stale" and candidate.delay == W - 2 + B and candidate.variant.s == lam
        share = (W - 1 + B) * (lam + 1) / ((W - 1) * (lam + 1) + B)
        assert candidate.load == pytest.approx(share)


NODE_STRAGGLERS = "straggling: {model: independent, level: node, probability: 0.2, delay: 1.0}\ntopology: {nodes: 3}\n"


def test_with_a_topology_a_candidate_is_also_where_its_workers_run(tmp_path):
    """Each candidate but the reference at spread, pack and by_code (or those --placements names); under node
    stragglers FR spread rides out a slow node, packed it waits for one: spread ranks above pack, and the pick's
    placement goes into the scenario --write-scenario writes."""
    sc = scenario_of(cluster(tmp_path, extra=NODE_STRAGGLERS))
    labels = [c.variant.display_label() for c in enumerate_candidates(sc, ["uncoded", "fr"], max_s=1)]
    assert labels == ["uncoded", *(f"{name} @{p}" for name in ("uncoded/fastest-5", "fr(s=1)")
                                   for p in ("spread", "pack", "by_code"))]  # fmt: skip
    only = enumerate_candidates(sc, ["fr"], max_s=1, placements=["pack"])
    assert [(c.variant.display_label(), c.placement) for c in only] == [("fr(s=1) @pack", "pack")]
    with pytest.raises(GcbenchError, match="--placements: diagonal is not one of spread, pack, by_code"):
        enumerate_candidates(sc, ["fr"], placements=["diagonal"])
    table, basis = recommend(
        sc, enumerate_candidates(sc, ["uncoded", "fr"], max_s=1, policies=["wait_all", "decodable"]), 400
    )
    ranked = table["candidate"].tolist()
    assert ranked.index("fr(s=1) @spread") < ranked.index("fr(s=1) @pack")
    assert basis["merged"].get("fr(s=1) @spread") == ["fr(s=1) @by_code"]  # (FR's by_code is spread)
    picked = tmp_path / "picked.yaml"
    args = ["recommend", str(tmp_path / "cluster.yaml"), "--schemes", "uncoded,fr", "--max-s", "1", "--policies",
            "wait_all,decodable", "--iterations", "300", "--out", str(tmp_path / "out"), "--write-scenario",
            str(picked)]  # fmt: skip
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    assert "Its workers placed: topology.placement: spread" in done.output
    assert scenario_of(picked).topology.placement == "spread"
