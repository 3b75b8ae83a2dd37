"""A node's crash in a real run (gcbench/real/wallclock/wall_cluster.py, gcbench/real/ddp/ddp_run.py): which jobs'
crashes are a whole node's, the variants running alone where crashes take nodes, DDP's kills at the schedule's
iterations, each variant placed by its code; and on the emulated cluster, the node's processes killed, the run
going on exactly within the code's tolerance, the node and its workers back after the downtime, and beyond the
tolerance (and under DDP) one sentence naming the node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.real.emulation import namespaces_refused
from gcbench.scenario.build import placed, scheme_for
from gcbench.scenario.draws import draw_run

from simhelpers import SMALL_SCENARIO, scenario

ROOT = Path(__file__).resolve().parents[1]
REFUSED = namespaces_refused()


# -- which crashes are a node's ---------------------------------------------------------------------------------


def test_the_draws_say_which_crashes_take_a_whole_node():
    sc = scenario(workers=4, iterations=6, topology={"nodes": 2, "placement": "spread"},
                  failures={"schedule": [{"node": 1, "iteration": 2, "downtime": 1.0},
                                         {"worker": 0, "iteration": 4, "downtime": None}]})  # fmt: skip
    draws = draw_run(sc, scheme_for(sc, sc.variants[0]), 0)
    assert draws.crash[2].tolist() == [False, True, False, True]
    assert draws.crash[4].tolist() == [True, False, False, False]
    assert draws.node_crash[2].tolist() == [False, True, False, True]  # (node 1: workers 1 and 3)
    assert not draws.node_crash[4].any()  # a worker's own crash
    level = scenario(workers=4, iterations=50, topology={"nodes": 2},
                     failures={"model": "crash", "probability": 0.2, "level": "node"})  # fmt: skip
    draws = draw_run(level, scheme_for(level, level.variants[0]), 0)
    assert draws.crash.any() and (draws.node_crash == draws.crash).all()
    assert draw_run(scenario(), scheme_for(scenario(), scenario().variants[0]), 0).node_crash is None


def test_variants_run_alone_on_an_emulated_cluster_where_crashes_take_nodes(monkeypatch):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    from gcbench.real.run import emulated
    from gcbench.real.run.session import runs_alone, turns

    class Run:
        def __init__(self, label: str) -> None:
            self.label, self.seed, self.next_iteration = label, 0, 0

        @property
        def finished(self) -> bool:
            return self.next_iteration >= 4

    runs = [Run("a"), Run("b")]
    order = []
    for run, last in turns(runs, lambda first: first + 2, alone=True):
        order.append((run.label, run.next_iteration))
        run.next_iteration = last
    assert order == [("a", 0), ("a", 2), ("b", 0), ("b", 2)]
    node_loss = scenario(workers=4, topology={"nodes": 2}, failures={"schedule": [{"node": 1, "iteration": 2,
                                                                                   "downtime": None}]})  # fmt: skip
    worker_loss = scenario(workers=4, topology={"nodes": 2}, failures={"schedule": [{"worker": 1, "iteration": 2,
                                                                                     "downtime": None}]})  # fmt: skip
    assert not runs_alone(node_loss)  # (not on an emulated cluster)
    monkeypatch.setattr(emulated, "inside_emulation", lambda: object())
    assert runs_alone(node_loss) and not runs_alone(worker_loss)


# -- DDP ----------------------------------------------------------------------------------------------------------


def test_ddp_kills_the_schedule_s_ranks_as_their_iteration_starts():
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    from gcbench.real.ddp.ddp_run import scheduled_kills, stretches

    sc = scenario(workers=4, iterations=10, topology={"nodes": 2, "placement": "pack"},
                  training={"eval_every": 4}, variants=[{"scheme": "uncoded", "policy": "allreduce"}],
                  failures={"schedule": [{"node": 1, "iteration": 6, "downtime": None}]})  # fmt: skip
    assert scheduled_kills(sc) == {6: ([2, 3], [1])}
    assert stretches(0, 10, sc, scheduled_kills(sc)) == [(0, 4), (4, 6), (6, 8), (8, 10)]


def test_ddp_runs_a_schedule_alone_and_refuses_drawn_crashes_in_one_sentence(tmp_path):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    base = SMALL_SCENARIO.replace("variants: [{scheme: uncoded}]", "variants: [{scheme: uncoded, policy: allreduce}]")
    path = tmp_path / "s.yaml"
    path.write_text(base + "training: {dataset: synthetic}\nfailures: {schedule: [{worker: 1, iteration: 2, "
                    "downtime: null}]}\n")  # fmt: skip
    done = CliRunner().invoke(app, ["run", str(path), "--backend", "torch", "--check"])
    assert done.exit_code == 0, done.output
    path.write_text(base + "training: {dataset: synthetic}\nfailures: {model: crash, probability: 0.1}\n")
    done = CliRunner().invoke(app, ["run", str(path), "--backend", "torch", "--check"])
    assert done.exit_code == 2
    assert "DistributedDataParallel, which has no fault tolerance; give failures: {model: none} or a schedule" in (
        done.output
    )


# -- by_code in real runs ---------------------------------------------------------------------------------------


def test_a_real_run_places_each_variant_by_its_code():
    """Each variant's run has its own workers, so each goes where its code puts them: run.json records each
    variant's map, as ``gcbench schemes NAME --nodes K --placement by_code`` prints it."""
    from gcbench.real.run.emulated import worker_nodes

    sc = scenario(workers=6, topology={"nodes": 3, "placement": "by_code"},
                  variants=[{"scheme": "fr", "s": 1}, {"scheme": "cyclic_mds", "s": 1}])  # fmt: skip
    maps = worker_nodes(sc)
    for variant in sc.variants:
        expected = placed(sc, scheme_for(sc, variant)).topology.node_of(6).tolist()
        assert maps[variant.display_label()] == expected
    assert maps["fr(s=1)/decodable"] != maps["cyclic_mds(s=1)/decodable"]


def test_a_real_run_takes_by_code(tmp_path):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    path = tmp_path / "s.yaml"
    path.write_text(SMALL_SCENARIO + "topology: {nodes: 2, placement: by_code}\ntraining: {dataset: synthetic}\n")
    done = CliRunner().invoke(app, ["run", str(path), "--backend", "torch", "--check"])
    assert done.exit_code == 0, done.output


# -- on the emulated cluster ------------------------------------------------------------------------------------

SCENARIO = """\
name: node-crash
workers: 4
iterations: {iterations}
compute:
  per_partition: {{distribution: exponential, rate: 20}}
  overhead: {{distribution: deterministic, value: 0.1}}
topology: {{nodes: 2, placement: {placement}}}
variants: {variants}
training: {{dataset: synthetic, batch_size: 24, eval_every: 100, device: cpu, checkpoint_every: 100}}
"""


def gcbench(*args, **run) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "gcbench", *map(str, args)], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=600, **run)  # fmt: skip


@pytest.fixture(scope="module")
def local_losses(tmp_path_factory):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    folder = tmp_path_factory.mktemp("local")
    text = SCENARIO.format(iterations=60, placement="spread", variants="[{scheme: fr, s: 1}]")
    (folder / "s.yaml").write_text(text)
    done = gcbench("run", folder / "s.yaml", "--backend", "local", "--out", folder / "o")
    assert done.returncode == 0, done.stdout + done.stderr
    from gcbench.results import read_results

    return read_results(folder / "o")[0].sort_values("iteration")["loss"].to_numpy()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["ray", "torch"])
def test_a_node_lost_within_the_code_s_tolerance_costs_no_wait_and_comes_back(tmp_path, backend, local_losses):
    """FR s=1 spread over 2 nodes (each group's two workers on both): node 1's crash at iteration 2 takes workers
    1 and 3; every iteration decodes exactly (losses equal the one-process run's), none waits for the lost ones,
    and after the 1 s downtime the node and both workers are back. Uncoded waits for them (on Ray)."""
    if REFUSED:
        pytest.skip(REFUSED)
    pytest.importorskip(backend, reason=f"{backend} is part of the [real] extra")
    # (uncoded, which waits for the node's return, on Ray: its master polls the raylet's start with nothing else
    # pending; torch's return is a fork, tested by FR's workers coming back)
    variants = "[{scheme: fr, s: 1}" + (", {scheme: uncoded, policy: wait_all}]" if backend == "ray" else "]")
    text = SCENARIO.format(iterations=60, placement="spread", variants=variants)
    (tmp_path / "s.yaml").write_text(text + "failures: {schedule: [{node: 1, iteration: 2, downtime: 1.0}]}\n")
    done = gcbench("run", tmp_path / "s.yaml", "--emulate", "--backend", backend, "--out", tmp_path / "o")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "node 1 crashed at iteration 2 (the scenario's failures): its" in done.stderr
    from gcbench.results import read_results

    iterations, workers, meta = read_results(tmp_path / "o")
    if backend == "ray":
        waited = iterations[iterations["variant"] == "uncoded/wait_all"].set_index("iteration")["duration"]
        (waiting,) = [crash for crash in meta["node_crashes"] if crash["variant"] == "uncoded/wait_all"]
        # uncoded waits for node 1's workers: its downtime and their return (a new raylet, the actors, the data)
        assert 1.0 <= waited[2] < 20.0 and sorted(waiting["back"]) == ["1", "3"]
        assert waited[2] >= max(waiting["back"].values()) - waiting["killed"] - 0.2
    iterations = iterations[iterations["variant"] == "fr(s=1)/decodable"].sort_values("iteration")
    workers = workers[workers["variant"] == "fr(s=1)/decodable"]
    assert iterations["exact"].all()
    # exact decodes: the one-process run's losses, to rounding (which training amplifies over the iterations: a
    # decode that sums other workers' messages rounds differently, 0.4% apart by iteration 50 here)
    assert np.allclose(iterations["loss"].to_numpy()[:20], local_losses[:20], rtol=1e-4)
    # (0.1 s jobs: the iterations while node 1 was down waited for none of its workers, nor its 1 s downtime)
    assert iterations.set_index("iteration")["duration"].loc[2:5].max() < 1.0
    lost = iterations.set_index("iteration")[["nodes_lost", "lost_nodes"]]
    assert tuple(lost.loc[2]) == (1, "1") and tuple(lost.loc[59]) == (0, "")
    failed = workers[workers["failed"]]
    assert set(failed[failed["iteration"] == 2]["worker"]) == {1, 3}
    (crash,) = [crash for crash in meta["node_crashes"] if crash["variant"] == "fr(s=1)/decodable"]
    assert crash["node"] == 1 and crash["iteration"] == 2 and crash["workers"] == [1, 3] and crash["processes"] >= 2
    assert sorted(crash["noticed"]) == ["1", "3"] and max(crash["noticed"].values()) - crash["killed"] < 1.0
    assert crash["revived"] == pytest.approx(crash["killed"] + 1.0, abs=0.2)
    assert sorted(crash["back"]) == ["1", "3"] and min(crash["back"].values()) > crash["revived"]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["ray", "torch"])
def test_a_node_lost_beyond_the_tolerance_stops_the_run_in_one_sentence_naming_it(tmp_path, backend):
    """DDP and FR s=1 packed (a group's two workers on node 1): node 1 lost for good at iteration 2. DDP's other
    ranks' all-reduce fails, and it stops saying so; FR, after it, gets the whole cluster again (DDP's crash took
    node 1's Ray processes too, which no Ray run would start again), and its iteration 2 can never finish: one
    sentence naming node 1 and its workers. Both keep the iterations they finished."""
    if REFUSED:
        pytest.skip(REFUSED)
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    pytest.importorskip(backend, reason=f"{backend} is part of the [real] extra")
    variants = "[{label: ddp, scheme: uncoded, policy: allreduce}, {scheme: fr, s: 1}]"
    text = SCENARIO.format(iterations=6, placement="pack", variants=variants)
    (tmp_path / "s.yaml").write_text(text + "failures: {schedule: [{node: 1, iteration: 2, downtime: null}]}\n")
    done = gcbench("run", tmp_path / "s.yaml", "--emulate", "--backend", backend, "--out", tmp_path / "o")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "iteration 2 can never finish (node 1 lost (workers 2 and 3);" in done.stdout + done.stderr
    said = "'ddp': node 1 crashed with ranks 2 and 3 in iteration 2 (the scenario's schedule); DistributedDataParallel"
    assert f"{said} has no fault tolerance: the other ranks' all-reduce failed" in done.stdout + done.stderr
    from gcbench.results import read_results

    iterations = read_results(tmp_path / "o")[0]
    assert iterations.groupby("variant")["iteration"].max().to_dict() == {"ddp": 1, "fr(s=1)/decodable": 1}
    assert json.loads((tmp_path / "o" / "run.json").read_text())["status"] == "stopped"
