"""Crashes at known moments (``failures.schedule``): a worker, or every worker of a node, crashing in a given
iteration for its own downtime, beside the drawn crashes, in both engines; and the schedules refused."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.errors import GcbenchError
from gcbench.scenario.build import scheme_for
from gcbench.scenario.draws import draw_run
from gcbench.sim.event import simulate_event
from gcbench.sim.synchronous import simulate_synchronous

from simhelpers import SMALL_SCENARIO, check_refusal, scenario

ENGINES = {"vectorised": simulate_synchronous, "event": simulate_event}
COMPUTE = 0.1


def scheduled(schedule, **fields):
    data = {
        "workers": 6,
        "iterations": 8,
        "compute": {"per_partition": {"distribution": "deterministic", "value": COMPUTE}},
        "failures": {"schedule": schedule},
        "topology": {"nodes": 3},
    }
    return scenario(**{**data, **fields})


def run(engine: str, sc):
    return ENGINES[engine](sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)


def test_the_schedule_adds_its_crashes_to_the_draws_with_their_own_downtimes():
    sc = scheduled([{"worker": 4, "iteration": 2, "downtime": 0.5}, {"node": 1, "iteration": 5, "downtime": None}])
    draws = draw_run(sc, scheme_for(sc, sc.variants[0]), 0)
    assert [tuple(np.flatnonzero(row)) for row in draws.crash] == [(), (), (4,), (), (), (1, 4), (), ()]
    assert draws.downtime[2, 4] == 0.5 and np.isinf(draws.downtime[5, [1, 4]]).all()
    assert sc.failures.model == "crash" and sc.failures.probability == 0.0  # (a schedule alone draws no crash)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_scheduled_crash_keeps_its_worker_down_for_its_downtime(engine):
    """Uncoded waits for every worker: worker 4 crashes as its job of iteration 2 starts and is back 0.5 s later
    to redo it, so that iteration lasts 0.5 + c, the others c."""
    rec = run(engine, scheduled([{"worker": 4, "iteration": 2, "downtime": 0.5}]))
    expected = [COMPUTE] * 8
    expected[2] = 0.5 + COMPUTE
    assert rec.duration == pytest.approx(expected, rel=1e-12)
    assert np.argwhere(rec.failed).tolist() == [[2, 4]]


@pytest.mark.parametrize("engine", ENGINES)
def test_fr_spread_rides_out_a_node_lost_for_good_and_packed_cannot(engine):
    """Node 1 lost for good in iteration 3. FR s=1 spread over 3 nodes keeps a replica of every group on the other
    two: every iteration decodes exactly, each 2c (its load). Packed, node 1 held group (2, 3) whole: from
    iteration 3 no set decodes, and the run stops in one sentence naming the node lost and its workers."""
    fr = [{"scheme": "fr", "s": 1}]
    lost = [{"node": 1, "iteration": 3, "downtime": None}]
    rec = run(engine, scheduled(lost, variants=fr))
    assert rec.duration == pytest.approx([2 * COMPUTE] * 8, rel=1e-12) and rec.exact.all()
    assert np.argwhere(rec.failed[3]).ravel().tolist() == [1, 4]
    with pytest.raises(GcbenchError, match=r"iteration 3 can never finish \(node 1 lost \(workers 2 and 3\); 2 of 6"):
        run(engine, scheduled(lost, variants=fr, topology={"nodes": 3, "placement": "pack"}))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_both_engines_give_the_same_tables_with_scheduled_and_drawn_crashes(seed):
    from test_event_engine import _point, assert_engines_agree

    failures = {
        "model": "crash",
        "probability": 0.1,
        "downtime": 0.8,
        "schedule": [{"node": 1, "iteration": 4, "downtime": 2.0}, {"worker": 0, "iteration": 9, "downtime": None}],
    }
    for variant in ({"scheme": "fr", "s": 1}, {"scheme": "cr", "s": 2}, {"scheme": "uncoded"}):
        point = _point(failures=failures, topology={"nodes": 3}, variants=[variant], iterations=20)
        assert_engines_agree(point, 0, seed)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "failures: {schedule: [{worker: 1, iteration: 5, downtime: 1}]}\n",
            "failures.schedule[0]: crashes in iteration 5, and the run's iterations are 0 to 4.",
        ),
        (
            "failures: {schedule: [{worker: 4, iteration: 1, downtime: 1}]}\n",
            "failures.schedule[0]: names worker 4, and the workers are 0 to 3.",
        ),
        (
            "failures: {schedule: [{node: 1, iteration: 1, downtime: null}]}\n",
            "failures.schedule[0]: names node 1, and the scenario has no topology; give one (topology: {nodes: 2}, "
            "for example) or name a worker.",
        ),
        (
            "topology: {nodes: 2}\nfailures: {schedule: [{node: 2, iteration: 1, downtime: null}]}\n",
            "failures.schedule[0]: names node 2, and the nodes are 0 to 1.",
        ),
        (
            "topology: {nodes: 2, placement: {0: [], 1: [0, 1, 2, 3]}}\n"
            "failures: {schedule: [{node: 0, iteration: 1, downtime: null}]}\n",
            "failures.schedule[0]: names node 0, which holds no worker.",
        ),
        (
            "failures: {schedule: [{worker: 1, node: 1, iteration: 1, downtime: 1}]}\n",
            "failures.schedule[0]: give exactly one of worker and node.",
        ),
        (
            "failures: {schedule: [{worker: 1, iteration: 1}]}\n",
            "failures.schedule[0].downtime: Field required.",
        ),
    ],
)
def test_a_schedule_the_run_cannot_keep_is_one_sentence_and_exit_2(tmp_path, text, expected):
    assert expected in check_refusal(tmp_path, SMALL_SCENARIO + text)


def test_the_tables_say_each_worker_s_node_and_each_iteration_s_lost_nodes(tmp_path):
    """With a topology the workers table has each worker's node and the iterations table the nodes lost whole:
    node 1 (workers 1 and 4) lost for good in iteration 3 is one node lost from then on; without a topology,
    neither column."""
    from gcbench.results import read_results

    text = """\
name: lost
workers: 6
iterations: 6
compute: {per_partition: {distribution: deterministic, value: 0.1}}
topology: {nodes: 3}
failures: {schedule: [{node: 1, iteration: 3, downtime: null}, {worker: 0, iteration: 1, downtime: 0.05}]}
variants: [{scheme: fr, s: 1}]
"""
    for name, scenario_text in (("with", text), ("without", text.replace("topology: {nodes: 3}\n", "").replace(
            "{node: 1, iteration: 3, downtime: null}, ", ""))):  # fmt: skip
        path = tmp_path / f"{name}.yaml"
        path.write_text(scenario_text)
        done = CliRunner().invoke(app, ["simulate", str(path), "--out", str(tmp_path / name)])
        assert done.exit_code == 0, done.output
        iterations, workers, _ = read_results(tmp_path / name)
        if name == "without":
            assert "node" not in workers and "nodes_lost" not in iterations and "lost_nodes" not in iterations
            continue
        assert workers.groupby("worker")["node"].first().tolist() == [0, 1, 2, 0, 1, 2]
        assert iterations.sort_values("iteration")["nodes_lost"].tolist() == [0, 0, 0, 1, 1, 1]
        assert iterations.sort_values("iteration")["lost_nodes"].astype(str).tolist() == ["", "", "", "1", "1", "1"]


def test_lost_nodes_names_each_set_of_nodes_lost_whole():
    """Nodes 0 (workers 0, 3), 1 (1, 4) and 2 (2, 5): a node is lost where every one of its workers failed."""
    from gcbench.results.schema import nodes_lost

    failed = np.zeros((5, 6), dtype=bool)
    failed[1, [1, 4]] = True  # node 1
    failed[2, [1, 4, 0]] = True  # node 1, and worker 0 alone (node 0 keeps worker 3)
    failed[3, [0, 3, 2, 5]] = True  # nodes 0 and 2
    failed[4, [1, 4]] = True
    count, which = nodes_lost(failed, np.array([0, 1, 2, 0, 1, 2]))
    assert count.tolist() == [0, 1, 1, 2, 1]
    assert which.tolist() == ["", "1", "1", "0,2", "1"]


def test_check_refuses_what_the_schedule_alone_makes_certain_and_the_summary_says_it(tmp_path):
    """Node 1 (workers 1 and 4) lost for good in iteration 3: uncoded, which waits for every worker, can never
    finish it, and `--check` says so before anything runs, in the run's own sentence; FR rides it out. The
    summary's first line counts the scheduled crashes."""
    text = """\
name: stuck
workers: 6
iterations: 20
compute: {per_partition: {distribution: exponential, rate: 10}}
topology: {nodes: 3}
failures: {schedule: [{node: 1, iteration: 3, downtime: null}]}
variants: [{label: uncoded, scheme: uncoded, policy: wait_all}, {scheme: fr, s: 1}]
"""
    refusal = check_refusal(tmp_path, text)
    # (the node's workers named once; the model's downtime does not apply to a scheduled crash: its entry's does)
    assert refusal.strip().endswith(
        "variant 'uncoded': iteration 3 can never finish (node 1 lost (workers 1 and 4); 2 of 6 "
        "workers crashed for good, 4 answered; too many for uncoded with s=0 under wait_all); "
        "give the failures.schedule entries a downtime or policy.fallback: approximate."
    )
    path = tmp_path / "fr.yaml"
    path.write_text(text.replace("{label: uncoded, scheme: uncoded, policy: wait_all}, ", ""))
    done = CliRunner().invoke(app, ["simulate", str(path), "--out", str(tmp_path / "fr")])
    assert done.exit_code == 0, done.output
    assert "failures: 1 scheduled crash only;" in done.output
