"""`gcbench run --emulate`: a real run on an emulated cluster of its topology (gcbench/real/run/emulated.py): the
workers on their nodes, their uploads over the shaped links, decodes exact, run.json and the workers table saying
where each ran, and nothing left after the run or a Ctrl-C; what it cannot run refused in one sentence."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.real.emulation import namespaces_refused

ROOT = Path(__file__).resolve().parents[1]
REFUSED = namespaces_refused()
BANDWIDTH = 2_500_000  # bytes a second: the small CNN's 755 kB gradient takes 0.3 s over a link
SCENARIO = f"""\
name: emulated
workers: 2
iterations: 4
compute: {{per_partition: {{distribution: exponential, rate: 20}}}}
network: {{bandwidth: {BANDWIDTH}}}
topology: {{nodes: 2, placement: spread}}
variants:
  - {{label: uncoded, scheme: uncoded, policy: wait_all}}
  - {{scheme: fr, s: 1}}
  - {{label: ddp, scheme: uncoded, policy: allreduce}}
training: {{dataset: synthetic, batch_size: 24, eval_every: 2, device: cpu, checkpoint_every: 2}}
"""


def gcbench(*args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "gcbench", *map(str, args)], cwd=ROOT, env=env, text=True,
                            **popen)  # fmt: skip


def leftovers(driver: int) -> list[str]:
    """What the emulated cluster of the run whose driver was ``driver`` left: its scratch folder (named after the
    driver), and any process whose command line names it (Ray's daemons and workers take it as their temporary
    folder). Other tests' clusters, running beside this one, are not this run's."""
    mark = f"gcbench-emulated-{driver}-"
    processes = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
    return [line for line in processes if mark in line] + [name for name in os.listdir("/tmp") if name.startswith(mark)]


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """The same scenario in one process: the losses the emulated runs' exact decodes must give."""
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    folder = tmp_path_factory.mktemp("local")
    (folder / "s.yaml").write_text(SCENARIO)
    local = gcbench("run", folder / "s.yaml", "--backend", "local", "--out", folder / "local", stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT)  # fmt: skip
    local_output, _ = local.communicate(timeout=600)
    assert local.returncode == 0, local_output
    return folder / "local"


@pytest.fixture(scope="module", params=["ray", "torch"])
def emulated_run(request, tmp_path_factory, local_run):
    """The scenario on the emulated cluster, on each backend that places its workers on the nodes (Ray: an actor
    on its node's raylet; torch: a process forked in its node)."""
    if REFUSED:
        pytest.skip(REFUSED)
    pytest.importorskip(request.param, reason=f"{request.param} is part of the [real] extra")
    folder = tmp_path_factory.mktemp(f"emulated-{request.param}")
    (folder / "s.yaml").write_text(SCENARIO)
    run = gcbench("run", folder / "s.yaml", "--emulate", "--backend", request.param, "--out", folder / "emulated",
                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    output, _ = run.communicate(timeout=600)
    left = leftovers(run.pid)
    return folder, run.returncode, output, left, local_run


@pytest.mark.slow
def test_an_emulated_run_trains_every_iteration_exactly_and_leaves_nothing(emulated_run):
    from gcbench.results import read_results

    folder, code, output, left, local = emulated_run
    assert code == 0, output
    assert left == [], left
    assert "Traceback" not in output and "[W" not in output, output  # (nor a warning of torch's: each node has a name)
    assert "on an emulated cluster of 2 nodes on this machine" in output
    iterations, workers, meta = read_results(folder / "emulated")
    assert meta["status"] == "complete" and len(iterations) == 3 * 4 and iterations["exact"].all()
    alone = read_results(local)[0].sort_values("iteration")["loss"].to_numpy()  # (one process: one SGD, "local")
    for _, frame in iterations.groupby("variant"):  # exact decodes (and DDP's sum): the same losses, to rounding
        assert np.allclose(frame.sort_values("iteration")["loss"].to_numpy(), alone, rtol=1e-5, atol=1e-6)
    nodes = meta["emulated"]["nodes"]
    assert [node["address"] for node in nodes] == ["10.9.0.1", "10.9.0.2"]
    assert [(node["up"], node["down"]) for node in nodes] == [(None, None), (BANDWIDTH, None)]
    # node 1's uplink's token bucket: 16 KiB of frames (a 4 ms kernel tick at this rate is less), in message bytes
    assert [(node["up_burst"], node["down_burst"]) for node in nodes] == [(0.0, 0.0), (16384 * 1448 / 1514, 0.0)]
    assert meta["emulated"]["worker_nodes"] == [0, 1]
    assert workers.groupby("worker")["node"].first().to_dict() == {0: 0, 1: 1}
    assert (iterations["nodes_lost"] == 0).all() and (iterations["lost_nodes"] == "").all()  # (no node crashed)


@pytest.mark.slow
def test_the_ddp_baseline_s_all_reduce_crosses_the_other_node_s_link(emulated_run):
    """DDP's two ranks run on workers 0's and 1's nodes; their ring all-reduce of the 755 kB gradient sends
    node 1's half twice (reduce-scatter, all-gather) up its 2.5 MB/s link: 0.3 s an iteration at least, where
    on one machine it takes milliseconds."""
    from gcbench.results import read_results

    folder, code, output, _, _ = emulated_run
    assert code == 0, output
    iterations, workers, _ = read_results(folder / "emulated")
    ddp = workers[workers["variant"] == "ddp"]
    assert ddp.groupby("worker")["node"].first().to_dict() == {0: 0, 1: 1}
    assert iterations[iterations["variant"] == "ddp"]["duration"].median() >= 0.8 * 755_240 / BANDWIDTH


@pytest.mark.slow
def test_the_worker_on_the_other_node_uploads_over_its_shaped_link(emulated_run):
    """Worker 0 shares node 0 with the master; worker 1's gradient (755 kB) crosses node 1's 2.5 MB/s link:
    0.3 s a message, which node 0's worker does not pay."""
    from gcbench.results import read_results

    folder, code, output, _, _ = emulated_run
    assert code == 0, output
    workers = read_results(folder / "emulated")[1]
    # the messages the master used (an abandoned one may never have crossed); DDP's ranks send the master none
    arrived = workers[workers["used"] & (workers["variant"] != "ddp")]
    upload = (arrived["arrival"] - arrived["compute_end"] - arrived["injected_delay"]).groupby(arrived["node"])
    link = 755_240 / BANDWIDTH
    assert upload.median()[1] >= 0.8 * link
    assert upload.median()[0] < 0.3 * link


LATENCY = """\
name: latency
workers: 3
iterations: 8
compute: {per_partition: {distribution: exponential, rate: 20}}
network: {bandwidth: 2500000, nodes: {2: {latency: 0.1}}}
topology: {nodes: 3, placement: spread}
variants: [{label: uncoded, scheme: uncoded, policy: wait_all}]
training: {dataset: synthetic, batch_size: 24, eval_every: 100, device: cpu}
"""


@pytest.mark.slow
def test_a_node_s_latency_is_the_measured_one_way_delay(tmp_path):
    """Workers 1 and 2 on nodes of equal uplinks, node 2's latency 0.1 s: its messages arrive 0.1 s after node
    1's (medians), the latency the master adds as each message comes in (this kernel has no netem)."""
    if REFUSED:
        pytest.skip(REFUSED)
    path = scenario_file(tmp_path, LATENCY)
    run = gcbench("run", path, "--emulate", "--backend", "torch", "--out", tmp_path / "o", stdout=subprocess.PIPE,
                  stderr=subprocess.STDOUT)  # fmt: skip
    output, _ = run.communicate(timeout=600)
    assert run.returncode == 0, output
    from gcbench.results import read_results

    workers = read_results(tmp_path / "o")[1]
    upload = (workers["arrival"] - workers["compute_end"]).groupby(workers["node"]).median()
    assert upload[2] - upload[1] == pytest.approx(0.1, abs=0.02)
    assert upload[1] == pytest.approx(755_240 / BANDWIDTH, rel=0.1)


@pytest.mark.slow
def test_ctrl_c_stops_an_emulated_run_keeps_its_checkpoints_and_leaves_nothing(tmp_path):
    if REFUSED:
        pytest.skip(REFUSED)
    pytest.importorskip("ray", reason="ray is part of the [real] extra")
    (tmp_path / "s.yaml").write_text(SCENARIO.replace("iterations: 4", "iterations: 40"))
    out = tmp_path / "run"
    run = gcbench("run", tmp_path / "s.yaml", "--emulate", "--out", out, stdout=subprocess.PIPE,
                  stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    checkpoint = out / "checkpoints" / "variant0-seed0.pt"
    deadline = time.monotonic() + 300
    while not checkpoint.exists() and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole foreground group
    output, _ = run.communicate(timeout=300)
    assert run.returncode == 130, output
    assert "interrupted (SIGINT)" in output and "Traceback" not in output, output
    assert json.loads((out / "run.json").read_text())["status"] != "complete"
    assert leftovers(run.pid) == []


def scenario_file(tmp_path: Path, text: str = SCENARIO) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("change", "options", "sentence"),
    [
        (("topology: {nodes: 2, placement: spread}\n", ""), [], "--emulate builds the scenario's topology"),
        (
            ("", ""),
            ["--backend", "local"],
            "--emulate runs on a backend that starts each worker on its node (ray, torch), not local.",
        ),
        (
            ("network: {bandwidth: 2500000}", "network: {bandwidth: 2500000, latency: 0.01}"),
            [],
            "--emulate adds network latency as the master takes each message (this kernel has no netem to add it to "
            "a link), and variant 'ddp' is DDP's all-reduce, which no master sees; set every latency to 0, or drop "
            "the variant.",
        ),
    ],
)
def test_what_emulate_cannot_run_is_one_sentence_and_exit_2(tmp_path, change, options, sentence):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    path = scenario_file(tmp_path, SCENARIO.replace(*change))
    result = CliRunner().invoke(app, ["run", str(path), "--emulate", "--check", *options])
    assert result.exit_code == 2, result.output
    assert sentence in result.output and "Traceback" not in result.output


def test_the_emulated_links_are_the_simulated_ones():
    """Node 0, the master's, sends at the master's egress and receives at its ingress; every other node sends at
    its bandwidth and receives at its downlink, its own or the network's (null: unshaped)."""
    from gcbench.real.run.emulated import node_specs
    from gcbench.scenario.schema import Scenario

    data = {"name": "links", "workers": 4, "iterations": 2, "variants": [{"scheme": "uncoded"}],
            "topology": {"nodes": 3}, "compute": {"per_partition": {"distribution": "exponential", "rate": 1.0}},
            "network": {"bandwidth": 5e6, "nodes": {2: {"bandwidth": 1e6, "downlink": 3e6}},
                        "master": {"ingress": 8e6}}}  # fmt: skip
    rates = [(spec.links.up, spec.links.down) for spec in node_specs(Scenario.model_validate(data))]
    assert rates == [(None, 8e6), (5e6, None), (1e6, 3e6)]
    data["network"] = {"downlink": 2e6, "master": {"egress": 9e6}}
    rates = [(spec.links.up, spec.links.down) for spec in node_specs(Scenario.model_validate(data))]
    assert rates == [(9e6, None), (None, 2e6), (None, 2e6)]


def test_the_simulator_runs_the_same_topology_on_its_links(tmp_path):
    """The scenario the emulated run takes simulates too: worker 0, on the master's node, crosses no link;
    worker 1's message crosses node 1's uplink, at the bandwidth."""
    import pandas as pd

    out = tmp_path / "o"
    modelled = SCENARIO.replace("  - {label: ddp, scheme: uncoded, policy: allreduce}\n", "")  # (no master: real only)
    result = CliRunner().invoke(app, ["simulate", str(scenario_file(tmp_path, modelled)), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "emulated: 2 workers on 2 nodes (spread); straggling: none" in result.output
    workers = pd.read_parquet(out / "workers.parquet")
    upload = (workers["arrival"] - workers["compute_end"]).groupby(workers["worker"]).max()
    size = json.loads((out / "run.json").read_text())["scenario"]["gradient"]["length"] * 4
    assert upload[0] == 0.0
    assert upload[1] == pytest.approx(size / BANDWIDTH, rel=1e-9)


@pytest.mark.parametrize(
    ("topology", "sentence"),
    [
        ("{nodes: 3}", "topology.nodes: 3 nodes for 2 workers would leave a node without one"),
        ("{nodes: 2, placement: {0: [0], 2: [1]}}", "topology.placement: names node 2, and the nodes are 0 to 1"),
        ("{nodes: 2, placement: {0: [0, 1], 1: [1]}}", "topology.placement: puts worker 1 on more than one node"),
        ("{nodes: 2, placement: {0: [0]}}", "topology.placement: puts worker 1 on no node"),
        ("{nodes: 2, placement: ring}", "topology.placement"),
    ],
)
def test_a_placement_that_cannot_hold_the_workers_is_one_sentence_and_exit_2(tmp_path, topology, sentence):
    text = SCENARIO.replace("topology: {nodes: 2, placement: spread}", f"topology: {topology}")
    text = text.replace(f"network: {{bandwidth: {BANDWIDTH}}}\n", "")
    result = CliRunner().invoke(app, ["simulate", str(scenario_file(tmp_path, text)), "--check"])
    assert result.exit_code == 2, result.output
    assert sentence in result.output and "Traceback" not in result.output


def test_pack_and_spread_place_every_worker_on_a_node():
    from gcbench.models.topology import Topology

    assert Topology(nodes=2).node_of(5).tolist() == [0, 1, 0, 1, 0]
    assert Topology(nodes=2, placement="pack").node_of(5).tolist() == [0, 0, 0, 1, 1]
    assert Topology(nodes=3, placement="pack").node_of(4).tolist() == [0, 0, 1, 2]
    assert Topology(nodes=2, placement={0: [1, 2], 1: [0]}).node_of(3).tolist() == [1, 0, 0]


def test_an_emulated_clusters_nodes_share_this_machines_cores(monkeypatch):
    """Ray counts K nodes in an emulated cluster, but they are this machine's: the master's decode and step keep
    to the cores the workers leave free, as on one node (without Ray being asked)."""
    pytest.importorskip("ray", reason="ray is part of the [real] extra")
    from gcbench.real.emulation.cluster import ENVIRONMENT
    from gcbench.real.ray.cluster import RayCluster

    described = {"addresses": ["10.9.0.1", "10.9.0.2"], "pids": [1, 2], "scratch": "/nonexistent"}
    monkeypatch.setenv(ENVIRONMENT, json.dumps(described))
    assert RayCluster.single_node() is True


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        (["--sim"], "error: --emulate builds a cluster for a real run, and --sim simulates the scenario; drop one"),
        (["--address", "10.0.0.1:6379"],
         "error: --emulate builds a cluster on this machine, and --address 10.0.0.1:6379 joins another; drop one."),
    ],
)  # fmt: skip
def test_emulate_beside_sim_or_an_address_is_one_sentence_and_exit_2(tmp_path, options, sentence):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    result = CliRunner().invoke(app, ["run", str(scenario_file(tmp_path)), "--emulate", *options, "--out",
                                      str(tmp_path / "o")])  # fmt: skip
    assert result.exit_code == 2 and result.output.startswith(sentence), result.output
    assert not (tmp_path / "o").exists()
