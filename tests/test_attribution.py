"""Per-worker straggler attribution (docs/attribution.md) on clusters whose answer is known: a chronic straggler
named first with the whole share, absorbed by a code with s >= 1; a transient burst named transient; a replay that
follows the run it replays; and bad input refused in one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.errors import GcbenchError
from gcbench.twin.attribution import COLUMNS, attribute, burst_lengths, pattern

runner = CliRunner()
ITERATIONS = 200


def trace_run(tmp_path: Path, slow: dict[int, tuple[float, range]], variants: str, workers: int = 6,
              extra: str = "") -> Path:  # fmt: skip
    """A simulation replaying a trace: every worker 0.1 s per partition, ``slow[w] = (factor, iterations)``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    times = np.full((ITERATIONS, workers), 0.1)
    for worker, (factor, when) in slow.items():
        times[list(when), worker] *= factor
    rows = [(w, t, times[t, w]) for t in range(ITERATIONS) for w in range(workers)]
    pd.DataFrame(rows, columns=["worker", "iteration", "time"]).to_csv(tmp_path / "trace.csv", index=False)
    (tmp_path / "scenario.yaml").write_text(
        f"name: known\nworkers: {workers}\niterations: {ITERATIONS}\nseeds: [0]\n"
        "compute: {trace: {path: trace.csv, load_scaling: proportional}}\n"
        "network: {latency: 0.0, bandwidth: 1.0e12}\ngradient: {length: 1000, dtype: float32}\n"
        f"{extra}variants:\n{variants}"
    )
    out = tmp_path / "run"
    result = runner.invoke(app, ["simulate", str(tmp_path / "scenario.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


UNCODED = "  - {label: uncoded, scheme: uncoded, policy: wait_all}\n"
UNCODED_AND_CR = UNCODED + "  - {label: CR s=1, scheme: cr, s: 1}\n"


def test_a_chronic_straggler_is_named_first_with_the_whole_share_and_a_code_absorbs_it(tmp_path):
    table = attribute(trace_run(tmp_path, {3: (3.0, range(ITERATIONS))}, UNCODED_AND_CR))
    assert list(table.columns) == list(COLUMNS)
    uncoded = table[table["variant"] == "uncoded"].set_index("worker")
    top = uncoded[uncoded["rank"] == 1].iloc[0]
    assert top.name == 3 and top["pattern"] == "chronic"
    assert top["share"] == pytest.approx(1.0) and top["straggled"] == 1.0 and top["ended"] == 1.0
    assert top["p50_ratio"] == pytest.approx(3.0) and top["p99_ratio"] == pytest.approx(3.0)
    assert top["slowdown"] == pytest.approx(3.0) and top["speedup_without"] == pytest.approx(3.0)
    assert top["bursts"] == 1 and top["longest_burst"] == ITERATIONS and top["absorbed"] == 0.0
    others = uncoded.drop(index=3)
    assert (others["share"] == 0).all() and (others["pattern"] == "none").all() and (others["ended"] == 0).all()
    assert (table["replay_gap"].abs() < 1e-9).all()
    # CR with s = 1 waits for no single worker: the straggler is absorbed in every iteration and costs nothing
    coded = table[table["variant"] == "CR s=1"].set_index("worker")
    assert coded.loc[3, "absorbed"] == 1.0 and coded.loc[3, "ended"] == 0.0 and coded.loc[3, "pattern"] == "chronic"
    assert coded.loc[3, "rank"] == 1 and (coded["share"] == 0).all() and coded.loc[3, "slowdown"] == pytest.approx(1)


def test_a_transient_burst_is_named_transient_with_its_length(tmp_path):
    table = attribute(trace_run(tmp_path, {1: (4.0, range(40, 56))}, UNCODED))
    top = table[table["rank"] == 1].iloc[0]
    assert (top["worker"], top["pattern"], top["bursts"], top["longest_burst"]) == (1, "transient", 1, 16)
    assert top["straggled"] == pytest.approx(16 / ITERATIONS) and top["share"] == pytest.approx(1.0)
    # replayed: 184 iterations of 0.1 s and 16 of 0.4 s, against 200 of 0.1 s
    assert top["slowdown"] == pytest.approx((184 * 0.1 + 16 * 0.4) / (200 * 0.1))


def test_shares_split_between_two_stragglers_in_different_iterations(tmp_path):
    run = trace_run(tmp_path, {0: (3.0, range(0, 50)), 5: (3.0, range(80, 200))}, UNCODED)
    table = attribute(run).set_index("worker")
    # each one's slowness is alone in its iterations, so the shares are their parts of the slowdown: 50 and 120
    # iterations 0.2 s longer each, of 34 s in all
    assert table.loc[5, "share"] == pytest.approx(24 / 34) and table.loc[0, "share"] == pytest.approx(10 / 34)
    assert table.loc[5, "rank"] == 1 and table.loc[5, "pattern"] == "chronic" and table.loc[0, "pattern"] == "transient"


@pytest.mark.parametrize(
    "variant",
    [
        "{label: FR, scheme: fr, s: 2}",
        "{label: fastest, scheme: uncoded, policy: {name: fastest_k, k: 4}}",
        "{label: deadline, scheme: cyclic_mds, s: 1, policy: {name: deadline, deadline: 0.12, fallback: wait}}",
        "{label: CCE, scheme: cce_cr, s: 2, m: 2}",
        "{label: partial, scheme: partial_cr, s: 1}",
        # a sequential scheme: each round's end depends on the rounds before it, so the replay steps them
        "{label: SR-SGC, scheme: sr_sgc, s: 1, burst: 1, window: 2, lam: 2}",
        "{label: SR-SGC mu, scheme: sr_sgc, s: 1, burst: 1, window: 2, lam: 2,"
        " policy: {name: relative_deadline, mu: 1}}",
    ],
)
def test_the_replay_follows_the_run_it_replays_under_every_synchronous_policy(tmp_path, variant):
    extra = "straggling: {model: independent, probability: 0.2, slowdown: 3}\n"
    rng = np.random.default_rng(0)
    slow = {w: (float(rng.uniform(1, 2)), range(0, ITERATIONS, w + 2)) for w in range(6)}
    table = attribute(trace_run(tmp_path, slow, f"  - {variant}\n", extra=extra))
    assert np.abs(table["replay_gap"]).max() < 1e-9
    assert (table["share"].between(0, 1 + 1e-9)).all() and (table["speedup_without"] >= 1 - 1e-12).all()


def test_the_replay_follows_a_run_whose_workers_crash_and_come_back(tmp_path):
    extra = "failures: {model: crash, probability: 0.05, downtime: 0.3}\n"
    table = attribute(trace_run(tmp_path, {4: (2.0, range(0, ITERATIONS, 3))}, UNCODED_AND_CR, extra=extra))
    assert np.abs(table["replay_gap"]).max() < 1e-9  # a worker back from its downtime still delivered, and counts
    assert table["straggled"].min() > 0  # (crashes count as straggling)


def test_an_asynchronous_variant_is_attributed_without_a_what_if(tmp_path):
    variants = "  - {label: async, scheme: uncoded, policy: {name: k_async, k: 3}}\n"
    table = attribute(trace_run(tmp_path, {2: (5.0, range(ITERATIONS))}, variants))
    assert table["share"].isna().all() and table["speedup_without"].isna().all()
    assert table.iloc[0]["worker"] == 2 and table.iloc[0]["pattern"] == "chronic"


def test_burst_lengths_and_the_chronic_rule():
    assert burst_lengths(np.array([1, 1, 0, 1, 0, 0, 1, 1, 1], bool)) == [2, 1, 3]
    assert burst_lengths(np.zeros(5, bool)) == []
    every_other = np.arange(100) % 2 == 0
    assert pattern([every_other]) == "chronic"  # half of every window: the rule's boundary counts as chronic
    assert pattern([np.arange(100) % 3 == 0]) == "transient"
    assert pattern([np.zeros(100, bool)]) == "none"
    second_half = np.arange(100) >= 40  # slow from iteration 40 on: 51 of 81 windows
    assert pattern([second_half]) == "chronic"
    assert pattern([np.arange(100) >= 70]) == "transient"


def test_gcbench_plot_writes_the_table_the_figure_and_the_report_section(tmp_path):
    run = trace_run(tmp_path, {3: (3.0, range(ITERATIONS))}, UNCODED_AND_CR)
    out = tmp_path / "figures"
    result = runner.invoke(app, ["plot", str(run), "-o", str(out), "--report"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "run-sim-attribution.csv")
    assert table.iloc[0]["worker"] == 3 and table.iloc[0]["share"] == pytest.approx(1.0)
    assert (out / "run-sim-attribution.png").is_file()
    report = (out / "run-report.md").read_text()
    assert "Who slowed the run" in report and "| uncoded | 3 | chronic |" in report


def iid_run(tmp_path: Path, variants: str) -> Path:
    """Every worker alike: each straggles independently with probability 0.2, 3 times slower."""
    extra = "straggling: {model: independent, probability: 0.2, slowdown: 3}\n"
    return trace_run(tmp_path, {}, variants, extra=extra)


def test_a_chronic_straggler_stands_out_and_iid_stragglers_do_not(tmp_path):
    chronic = attribute(trace_run(tmp_path / "c", {3: (3.0, range(ITERATIONS))}, UNCODED))
    assert chronic.set_index("worker")["stands_out"].to_dict() == {w: w == 3 for w in range(6)}
    top = chronic.set_index("worker").loc[3]
    assert top["share_low"] <= top["share"] <= top["share_high"] and top["share_low"] > chronic["share"].mean()
    iid = attribute(iid_run(tmp_path / "i", UNCODED))
    assert not iid["stands_out"].any()  # one worker's share is the largest, but no more than i.i.d. draws give
    assert (iid["share_low"] <= iid["share"]).all() and (iid["share"] <= iid["share_high"]).all()
    assert (iid["share_low"] <= iid["share"].mean()).all()


def test_noise_gets_the_share_chart_with_intervals_and_alike_variants_share_a_panel(tmp_path):
    from matplotlib.collections import LineCollection

    from gcbench.plot.attribution import attribution_figure, signal_sentence
    from gcbench.plot.runs import load_run

    variants = UNCODED_AND_CR + "  - {label: CR again, scheme: cr, s: 1}\n"  # (the same code: the same iterations)
    path = iid_run(tmp_path, variants)
    run, table = load_run(path), attribute(path)
    fig = attribution_figure(run.iterations, run.workers, table)
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]
    assert [title.split(" (")[0] for title in titles] == ["uncoded", "CR s=1 = CR again"]  # one panel
    assert fig.get_suptitle().startswith("No worker's share of the slowdown stands out beyond what independent")
    assert all(any(isinstance(c, LineCollection) for c in ax.collections) for ax in fig.axes[:2])  # the intervals
    assert signal_sentence(table, 0).startswith("no worker's share of the slowdown stands out")
    result = runner.invoke(app, ["plot", str(path), "-o", str(tmp_path / "figures")])
    assert "attribution, run: no worker's share of the slowdown stands out" in result.output
    chronic = trace_run(tmp_path / "c", {3: (3.0, range(ITERATIONS))}, UNCODED_AND_CR)
    signal = attribute(chronic)
    expected = ("shares of the slowdown beyond what i.i.d. workers give (lower bounds, at 95% over all the workers, "
                "above the mean share): uncoded: worker 3")  # fmt: skip
    assert signal_sentence(signal, 0) == expected
    mapped = attribution_figure(load_run(chronic).iterations, load_run(chronic).workers, signal)
    assert "accounts for 100% of the time lost to slowness (the run took 3.00x as long as with no worker slower " in (
        mapped.axes[0].get_title(loc="left")
    )


def test_bad_input_is_one_sentence(tmp_path):
    with pytest.raises(GcbenchError, match="no such results directory"):
        attribute(tmp_path / "missing")
    run = trace_run(tmp_path, {3: (3.0, range(ITERATIONS))}, UNCODED_AND_CR)
    meta = json.loads((run / "run.json").read_text())
    meta["scenario"]["variants"] = [meta["scenario"]["variants"][0]]
    (run / "run.json").write_text(json.dumps(meta))
    with pytest.raises(GcbenchError, match="its variant 'CR s=1' is not in its run.json scenario"):
        attribute(run)
    workers = pd.read_parquet(run / "workers.parquet")
    workers.drop(columns=["arrival"]).to_parquet(run / "workers.parquet")
    with pytest.raises(GcbenchError, match="its workers table lacks the columns arrival"):
        attribute(run)
    (run / "workers.parquet").unlink()
    with pytest.raises(GcbenchError, match="has no workers.parquet"):
        attribute(run)
    result = runner.invoke(app, ["plot", str(run), "-o", str(tmp_path / "f")])
    assert result.exit_code == 0 and "no workers.parquet: no attribution" in result.output


def test_a_node_whose_workers_straggle_together_gets_a_row_above_them(tmp_path):
    """Node-level straggling on 4 nodes of 2 workers: no one worker's slowness explains uncoded's wait, a node's
    workers' together do; the node row comes first (rank 0), its share above every worker's, and each worker row
    names its node. Without a topology, no node rows and node -1."""
    path = tmp_path / "nodes.yaml"
    path.write_text(
        "name: nodes\nworkers: 8\niterations: 300\nseeds: [0]\n"
        "compute: {per_partition: {distribution: shifted_exponential, shift: 0.05, rate: 40}}\n"
        "straggling: {model: markov, level: node, enter: 0.05, leave: 0.3, slowdown: 4}\n"
        "topology: {nodes: 4}\nvariants: [{label: uncoded, scheme: uncoded, policy: wait_all}]\n"
    )
    out = tmp_path / "out"
    assert CliRunner().invoke(app, ["simulate", str(path), "--out", str(out)]).exit_code == 0
    table = attribute(out)
    nodes, workers = table[table["level"] == "node"], table[table["level"] == "worker"]
    assert len(nodes) >= 1 and table.iloc[0]["level"] == "node" and (nodes["rank"] == 0).all()
    assert nodes["share"].min() > workers["share"].max()
    assert workers.sort_values("worker")["node"].tolist() == [0, 1, 2, 3, 0, 1, 2, 3]
    plain = tmp_path / "plain.yaml"
    plain.write_text(path.read_text().replace("level: node, ", "").replace("topology: {nodes: 4}\n", ""))
    assert CliRunner().invoke(app, ["simulate", str(plain), "--out", str(tmp_path / "plain")]).exit_code == 0
    alone = attribute(tmp_path / "plain")
    assert (alone["level"] == "worker").all() and (alone["node"] == -1).all()
