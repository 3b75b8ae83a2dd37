"""`gcbench run --backend torch` under torchrun: rank 0 the master, the other ranks the workers' agents
(gcbench/real/torch/torchrun.py). The multi-machine path, tested on one machine with ``torchrun --standalone``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")

from typer.testing import CliRunner  # noqa: E402

from gcbench.cli import app  # noqa: E402
from gcbench.results.store import read_results  # noqa: E402

SCENARIO = """\
name: torchrun
workers: 4
iterations: 8
compute: {per_partition: {distribution: exponential, rate: 10}}
straggling: {model: independent, probability: 0.3, delay: 0.2}
variants: [{label: uncoded, scheme: uncoded, policy: wait_all}, {scheme: fr, s: 1}]
training: {dataset: synthetic, batch_size: 32, eval_every: 3, checkpoint_every: 2, device: cpu}
"""

# one variant (FR s = 1: it decodes past a crash) is enough to compare with the loopback run; variants share the
# crash draws of their seed, so uncoded beside it would only run the same crashes again
CRASHES = SCENARIO.replace(
    "training:", "failures: {model: crash, probability: 0.08, downtime: 0.5}\ntraining:"
).replace(
    "variants: [{label: uncoded, scheme: uncoded, policy: wait_all}, {scheme: fr, s: 1}]",
    "variants: [{scheme: fr, s: 1}]",
)


def torchrun(ranks: int, *args: str, timeout: float = 420) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).parent / "torchrun"), "--standalone", "--nnodes", "1"]
    command += ["--nproc-per-node", str(ranks), "--no-python", str(Path(sys.executable).parent / "gcbench"), *args]
    if not Path(command[0]).exists():
        command[0] = shutil.which("torchrun") or command[0]
    # a session of its own: what is left of it afterwards is a process the run left behind
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    output, _ = run.communicate(timeout=timeout)
    return subprocess.CompletedProcess(command, run.returncode, output, None), run.pid


def processes_of_session(session: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


@pytest.mark.slow
def test_a_torchrun_run_with_drawn_crashes_trains_as_the_one_machine_run_does_and_leaves_no_process(tmp_path):
    """One torchrun run for both (each costs a minute of CI): its drawn crashes are process exits on the
    agents' machine that the run goes on past, and it trains as the loopback run of the same scenario does."""
    (tmp_path / "s.yaml").write_text(CRASHES)
    (done, session) = torchrun(5, "run", str(tmp_path / "s.yaml"), "--backend", "torch", "--out", str(tmp_path / "tr"))
    assert done.returncode == 0, done.stdout[-3000:]
    assert processes_of_session(session) == [], "a process outlived the torchrun run"
    # the loopback run in this process (a driver of its own would only import torch once more)
    loopback = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "--backend", "torch", "--out",
                                        str(tmp_path / "here")])  # fmt: skip
    assert loopback.exit_code == 0, loopback.output[-3000:]
    ran, workers, meta = read_results(tmp_path / "tr")
    here, _, _ = read_results(tmp_path / "here")
    assert meta["backend"] == "torch" and meta["status"] == "complete"
    assert workers["failed"].any(), "the scenario draws crashes: some worker must have failed"
    key = ["variant", "seed", "iteration"]
    ran, here = ran.sort_values(key).reset_index(drop=True), here.sort_values(key).reset_index(drop=True)
    assert len(ran) == 8 and (ran[key] == here[key]).all().all()
    # same data, model, seed and draws, and every decode exact: the same training (only timings differ)
    assert ran["exact"].all() and here["exact"].all()
    np.testing.assert_allclose(ran["loss"], here["loss"], rtol=1e-4)


@pytest.mark.slow
def test_a_torchrun_world_that_does_not_fit_the_scenario_is_one_sentence(tmp_path):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    # two ranks (each process imports torch: the fewest that make a world of master and agents)
    (done, session) = torchrun(2, "run", str(tmp_path / "s.yaml"), "--backend", "torch", "--out", str(tmp_path / "o"))
    assert done.returncode != 0
    assert "under torchrun the world size must be the scenario's workers plus one (the master): 5, not 2" in done.stdout
    assert processes_of_session(session) == []


ACROSS = """\
name: torchrun_nodes
workers: 3
iterations: 4
compute: {per_partition: {distribution: exponential, rate: 20}}
network: {bandwidth: 2500000}
topology: {nodes: 2, placement: {0: [0], 1: [1, 2]}}
variants: [{label: uncoded, scheme: uncoded, policy: wait_all}]
training: {dataset: synthetic, batch_size: 24, eval_every: 2, device: cpu}
"""


@pytest.mark.slow
def test_torchrun_across_two_emulated_nodes_trains_as_one_machine_and_crosses_the_link(tmp_path):
    """torchrun --nnodes 2, one agent in each node's namespace, meeting at node 0's address: ranks 0 (the
    master) and 1 (worker 0's agent) on node 0, ranks 2 and 3 (workers 1 and 2) on node 1, whose uplink of
    2.5 MB/s each of their 755 kB gradients crosses (the topology says the same placement)."""
    from gcbench.real.emulation import INTERFACE, EmulatedCluster, LinkRates, NodeSpec, namespaces_refused

    if namespaces_refused():
        pytest.skip(namespaces_refused())
    (tmp_path / "s.yaml").write_text(ACROSS)
    runner = Path(sys.executable).parent / "torchrun"
    runner = str(runner) if runner.exists() else shutil.which("torchrun")
    nodes = [NodeSpec(), NodeSpec(LinkRates(up=2_500_000))]
    with EmulatedCluster(nodes) as cluster:
        environment = {**os.environ, **cluster.inside(), "GLOO_SOCKET_IFNAME": INTERFACE}
        agents = [
            cluster.start_in(k, [runner, "--nnodes", "2", "--node-rank", str(k), "--nproc-per-node", "2",
                                 "--master-addr", "10.9.0.1", "--master-port", "29531", "--no-python",
                                 str(Path(sys.executable).parent / "gcbench"), "run", str(tmp_path / "s.yaml"),
                                 "--backend", "torch", "--out", str(tmp_path / "across")],
                             env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for k in range(2)
        ]  # fmt: skip
        outputs = [agent.communicate(timeout=420)[0] for agent in agents]
    assert [agent.returncode for agent in agents] == [0, 0], outputs[0][-3000:] + outputs[1][-3000:]
    ran, workers, meta = read_results(tmp_path / "across")
    assert meta["status"] == "complete" and meta["emulated"]["worker_nodes"] == [0, 1, 1]
    local = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "--backend", "local", "--out",
                                     str(tmp_path / "local")])  # fmt: skip
    assert local.exit_code == 0, local.output[-3000:]
    alone = read_results(tmp_path / "local")[0].sort_values("iteration")["loss"].to_numpy()
    np.testing.assert_allclose(ran.sort_values("iteration")["loss"].to_numpy(), alone, rtol=1e-5, atol=1e-6)
    upload = (workers["arrival"] - workers["compute_end"]).groupby(workers["node"]).median()
    assert upload[1] >= 0.8 * 755_240 / 2_500_000 and upload[0] < 0.1
