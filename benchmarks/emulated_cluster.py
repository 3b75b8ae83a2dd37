"""The emulated cluster's numbers: how its links carry and share the rates set, what compression and CCE buy on
them, how well the calibrated simulator predicts a run on them, and what the emulation costs.

Part 1, link fidelity: a 25 MB message sent between two emulated nodes over TCP, its measured rate of message bytes
against the rate set, at 20 Mb/s, 100 Mb/s and 1 Gb/s each way (target: within 5%), and the rate of an unshaped
link, the most this machine carries. Each rate is the median of ``--repeats`` transfers on a new pair of nodes; the
time runs from the first byte sent to the receiver's count of them coming back (one round trip more than the
transfer, under a millisecond here).

Part 2, compression for real: uncoded, FR s=1 and CR s=1, each under none, fp16, QSGD and top-k 1%, on CIFAR-10
with the small CNN, 4 workers on 2 nodes beside the master's, every node's uplink at 1 Gb/s, 100 Mb/s and 20 Mb/s,
the variants taking turns: mean iteration time with its 95% interval over 3 seeds, the final test accuracy, and
each seed's seconds to ``--target`` test accuracy; a figure of the means (``OUT/emulated_compression.png``,
docs/emulated_compression.png).

Part 3, CCE for real: CR s=1 against CCE-CR s=1 m=2 (half the bytes a message), 4 workers on 2 nodes and the
master alone on a third, whose ingress (20 Mb/s) every upload shares: mean iteration time with its 95% interval over
3 seeds, and the median upload.

Part 4, the twin on a wire: one run of ten variants taking turns at 20 Mb/s a node (as part 2's); `gcbench
calibrate` fits the cluster, links included, to uncoded's and FR's iterations, uncompressed and fp16, and the
calibrated scenario predicts QSGD, top-k, CR and CCE-CR, simulated with the run's seeds and iterations (the legs of
benchmarks/calibration.py); then `gcbench plot` draws the prediction against the run (figures in OUT).

``--nodes 2|4`` (parts 2-4): the 4 workers on 2 emulated nodes (two a node, the default) or on 4 (one each).

Part 5, a multi-node sweep: `gcbench simulate --ray --emulate 3` of scenarios/stragglers.yaml against a local
simulation of it, their tables compared byte for byte.

Part 6, overhead: the emulated cluster's start and teardown (2 and 4 nodes; and Ray across them), and a real run's
time per iteration and the master's time between iterations on 2 nodes linked at 1 Gb/s against the same run on
this machine's loopback (torch backend, 4 workers, synthetic data, runs alternating).

Part 7, how uploads share a link: 4 senders start together, each sending 2.5 MB to a receiver on node 0, through
one 100 Mb/s link (the receiver's downlink, as a master's ingress; or one node's uplink, its 4 workers'). When each
message is complete, against the two models of a shared link: first in, first out (the k-th at k x 0.2 s) and
fair sharing (all at 0.8 s).

Parts 2-4 train on CIFAR-10 (``--data-dir``: image folders, or their .tar.gz) with the torch backend; their runs stay
in ``--out`` (``--reuse`` reads them again).

    python benchmarks/emulated_cluster.py [--part 1..7] [--data-dir PATH] [--out DIR] [--repeats 3]
        [--size 25000000] [--iterations 60] [--short-iterations 20] [--target 0.25] [--twin-iterations 60]
        [--turn 10] [--reuse]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from gcbench.real.emulation import EmulatedCluster, LinkRates, NodeSpec, require_namespaces
from gcbench.real.emulation.probe import transfer

MBIT = 1e6 / 8
RATES = {"20 Mb/s": 20 * MBIT, "100 Mb/s": 100 * MBIT, "1 Gb/s": 1000 * MBIT, "unshaped": None}


def measured_rate(rate: float | None, size: int) -> float:
    """Bytes a second of a ``size``-byte message from node 0 to node 1, both linked at ``rate`` each way."""
    links = LinkRates(rate, rate)
    with EmulatedCluster([NodeSpec(links), NodeSpec(links)]) as cluster:
        received, seconds = transfer(cluster, 0, 1, size)
    assert received == size
    return size / seconds


SHARING_RECEIVER = """
import json, socket, sys, threading, time
flows = int(sys.argv[2])
server = socket.create_server((sys.argv[1], 5001), backlog=flows)
print("listening", flush=True)
done = []
def receive(connection):
    while connection.recv(1 << 20):
        pass
    done.append(time.time())
threads = [threading.Thread(target=receive, args=(server.accept()[0],)) for _ in range(flows)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(sorted(done)))
"""
SHARING_SENDER = """
import socket, sys, time
connection = socket.create_connection((sys.argv[1], 5001))
payload, start = b"x" * int(sys.argv[2]), float(sys.argv[3])
time.sleep(max(0.0, start - time.time()))
connection.sendall(payload)
connection.close()
"""


def sharing(shared: str, rate: float, size: int, flows: int = 4) -> list[float]:
    """Seconds from a common start to each of ``flows`` messages being complete at node 0, the link they share
    being node 0's downlink (``shared="ingress"``: one sender a node) or one node's uplink (``"uplink"``)."""
    if shared == "ingress":
        nodes = [NodeSpec(LinkRates(None, rate))] + [NodeSpec(LinkRates(rate, None)) for _ in range(flows)]
        senders = list(range(1, flows + 1))
    else:
        nodes, senders = [NodeSpec(), NodeSpec(LinkRates(rate, None))], [1] * flows
    with EmulatedCluster(nodes) as cluster:
        address = cluster.addresses[0]
        receiver = cluster.start_in(0, [sys.executable, "-c", SHARING_RECEIVER, address, str(flows)],
                                    stdout=subprocess.PIPE, text=True)  # fmt: skip
        receiver.stdout.readline()
        start = time.time() + 1.0
        sent = [cluster.start_in(node, [sys.executable, "-c", SHARING_SENDER, address, str(size), str(start)])
                for node in senders]  # fmt: skip
        for sender in sent:
            sender.wait(120)
        return [end - start for end in json.loads(receiver.stdout.readline())]


def link_fidelity(repeats: int, size: int) -> None:
    print(f"link fidelity: a {size / 1e6:.0f} MB message between two emulated nodes, median of {repeats}")
    print(f"{'set':>10}  {'measured':>14}  {'error':>7}  runs (Mb/s)")
    for name, rate in RATES.items():
        runs = [measured_rate(rate, size) for _ in range(repeats)]
        median = statistics.median(runs)
        error = "" if rate is None else f"{median / rate - 1:+.1%}"
        listed = ", ".join(f"{run / MBIT:.1f}" for run in runs)
        print(f"{name:>10}  {median / MBIT:>9.1f} Mb/s  {error:>7}  {listed}")


def link_sharing(repeats: int) -> None:
    size, rate = 2_500_000, 100 * MBIT
    print(f"link sharing: 4 messages of {size / 1e6} MB at once through one {rate / MBIT:.0f} Mb/s link; seconds "
          f"to the k-th complete, median of {repeats}")  # fmt: skip
    print("(first in, first out: 0.2 0.4 0.6 0.8; fair sharing: 0.8 each)")
    for shared in ("ingress", "uplink"):
        runs = np.array([sharing(shared, rate, size) for _ in range(repeats)])
        median = " ".join(f"{value:.3f}" for value in np.median(runs, axis=0))
        print(f"{'the receiver' if shared == 'ingress' else 'one node'}'s {shared}: {median}")


OVERHEAD_SCENARIO = """\
name: overhead
workers: 4
iterations: 40
compute: {per_partition: {distribution: exponential, rate: 20}}
network: {bandwidth: 125000000}
topology: {nodes: 2, placement: spread}
variants: [{label: uncoded, scheme: uncoded, policy: wait_all}]
training: {dataset: synthetic, batch_size: 32, eval_every: 1000, device: cpu}
"""


def cluster_times(nodes: int) -> tuple[float, float, float]:
    """Seconds to build an emulated cluster of ``nodes`` nodes, to start Ray on them, and to tear it all down."""
    begun = time.perf_counter()
    cluster = EmulatedCluster([NodeSpec() for _ in range(nodes)])
    cluster.__enter__()
    built = time.perf_counter()
    code = (
        "from gcbench.real.emulation import Nodes; from gcbench.real.emulation.ray_nodes import start_ray_nodes; "
        "start_ray_nodes(Nodes.from_environment())"
    )
    import os

    cluster.run_in(0, [sys.executable, "-c", code], env={**os.environ, **cluster.inside()}, check=True,
                   capture_output=True)  # fmt: skip
    ray = time.perf_counter()
    cluster.__exit__(None, None, None)
    return built - begun, ray - built, time.perf_counter() - ray


def run_times(folder, emulated: bool, repeat: int) -> tuple[float, float]:
    """A run's mean iteration time and median time between iterations (the master's), in seconds."""
    import pandas as pd

    out = folder / f"{'emulated' if emulated else 'loopback'}{repeat}"
    command = [sys.executable, "-m", "gcbench", "run", str(folder / "s.yaml"), "--backend", "torch", "--out", str(out),
               *(["--emulate"] if emulated else [])]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    iterations = pd.read_parquet(out / "iterations.parquet").sort_values("iteration")
    between = iterations["start"].to_numpy()[1:] - iterations["end"].to_numpy()[:-1]
    return float(iterations["duration"].mean()), float(np.median(between))


def overhead(repeats: int) -> None:
    import tempfile

    print(f"the emulated cluster's start and teardown, seconds, median of {repeats}")
    for nodes in (2, 4):
        times = np.median([cluster_times(nodes) for _ in range(repeats)], axis=0)
        print(f"{nodes} nodes: build {times[0]:.2f}, Ray on them {times[1]:.2f}, teardown {times[2]:.2f}")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "s.yaml").write_text(OVERHEAD_SCENARIO)
        runs = {True: [], False: []}
        for repeat in range(repeats):
            for emulated in (True, False):
                runs[emulated].append(run_times(folder, emulated, repeat))
    print(
        f"a run of 4 workers (2 a node, 755 kB gradients), torch backend, median of {repeats}: "
        "mean iteration, master's time between iterations (s)"
    )
    for emulated, label in ((False, "loopback (one host)"), (True, "2 nodes at 1 Gb/s")):
        mean, between = np.median(runs[emulated], axis=0)
        print(f"{label:>22}: {mean:.4f}  {between:.4f}")


# parts 2-4's clusters (--nodes): 4 workers on 2 emulated nodes (2 each) or on 4 (one each), beside the master's
# node 0
TOPOLOGIES = {
    2: "{nodes: 3, placement: {0: [], 1: [0, 1], 2: [2, 3]}}",
    4: "{nodes: 5, placement: {0: [], 1: [0], 2: [1], 3: [2], 4: [3]}}",
}


def wire_scenario(name: str, iterations: int, network: str, variants: list[str], training: str, nodes: int = 2) -> str:
    """A scenario of parts 2-4: 4 workers on ``nodes`` emulated nodes beside the master's node 0, 3 seeds,
    training CIFAR-10's small CNN (batch 128, on the CPU); ``network``, ``variants`` (YAML flow mappings) and
    ``training``'s further fields (a flow mapping's inside) are the part's own."""
    listed = "\n".join(f"  - {variant}" for variant in variants)
    return (f"name: {name}\nworkers: 4\niterations: {iterations}\nseeds: [0, 1, 2]\n"
            "compute: {per_partition: {distribution: exponential, rate: 20}}\n"
            f"network: {network}\ntopology: {TOPOLOGIES[nodes]}\n"
            f"variants:\n{listed}\n"
            f"training: {{dataset: cifar10, batch_size: 128, device: cpu, {training}}}\n")  # fmt: skip


CCE_VARIANTS = ["{label: CR s=1, scheme: cr, s: 1}", "{label: CCE-CR s=1 m=2, scheme: cce_cr, s: 1, m: 2}"]


COMPRESSORS = {  # the costs per entry docs/compression.md measured (benchmarks/compression.py), as a user gives them
    "none": "{name: none}",
    "fp16": "{name: fp16, compress_cost: 2.3e-9, decompress_cost: 1.1e-9}",
    "qsgd": "{name: qsgd, compress_cost: 3.1e-8, decompress_cost: 1.0e-9}",
    "topk": "{name: topk, compress_cost: 2.0e-9, decompress_cost: 1.0e-10}",
}
SCHEMES = {"uncoded": "scheme: uncoded, policy: wait_all", "FR": "scheme: fr, s: 1", "CR": "scheme: cr, s: 1"}
COMPRESSION_RATES = {"1 Gb/s": 1000 * MBIT, "100 Mb/s": 100 * MBIT, "20 Mb/s": 20 * MBIT}


def compression_variants() -> list[str]:
    """Every scheme of SCHEMES under every compressor of COMPRESSORS, as YAML flow mappings."""
    return [f"{{label: {scheme} {name}, {spec}, compression: {compressor}}}"
            for scheme, spec in SCHEMES.items() for name, compressor in COMPRESSORS.items()]  # fmt: skip


def emulated_run(text: str, out, reuse: bool = False):
    """The iterations and workers tables of a torch run of this scenario on its emulated cluster, written to ``out``
    (with ``reuse``, a finished run already there is read instead)."""
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    if not (reuse and (out / "run" / "iterations.parquet").is_file()):
        (out / "scenario.yaml").write_text(text)
        command = [sys.executable, "-m", "gcbench", "run", str(out / "scenario.yaml"), "--backend", "torch",
                   "--emulate", "--force", "--out", str(out / "run")]  # fmt: skip
        print("+", " ".join(command), flush=True)
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return pd.read_parquet(out / "run" / "iterations.parquet"), pd.read_parquet(out / "run" / "workers.parquet")


def compression_for_real(data_dir: str, out, iterations: int, short: int, target: float, reuse: bool,
                         nodes: int = 2) -> None:  # fmt: skip
    """Part 2: every scheme under every compressor at each rate of COMPRESSION_RATES: the mean iteration, and the
    seconds to the target test accuracy. The fastest rate's run trains ``iterations`` a seed, evaluated every
    sixth of them; the slower rates' runs ``short`` iterations, evaluated at their end. A wire changes when each
    iteration ends, and nearly never what it computes (the decodes are exact, the compressors keyed by seed and
    iteration), but where the master decodes from any messages, which ones it used changes the decoded gradient
    by rounding, or, under a lossy compressor, by the compressors' errors, which differ by worker. So each slower
    run's losses are compared with the fastest run's, variant by variant: where they agree, the variant reaches
    the target at the same iteration on every wire, and its seconds to it there are that many iterations of the
    wire's measured mean."""
    import pandas as pd

    from gcbench.results.summary import mean_confidence_interval

    data = Path(data_dir).resolve()
    tables = {}
    for index, (name, rate) in enumerate(COMPRESSION_RATES.items()):
        count = iterations if index == 0 else short
        eval_every = max(1, count // 6) if index == 0 else count
        text = wire_scenario("compression-wire", count, f"{{bandwidth: {rate}}}", compression_variants(),
                             f"data_dir: {data}, eval_every: {eval_every}, checkpoint_every: 10", nodes)  # fmt: skip
        tables[name], _ = emulated_run(text, Path(out) / f"compression-{name.replace(' ', '').replace('/', '')}", reuse)
    fastest, first = next(iter(tables.items()))
    keys = ["variant", "seed", "iteration"]
    reached = {}  # (variant, seed) -> the first evaluated iteration at the target, and its measured seconds
    for (label, seed), runs in first.groupby(["variant", "seed"]):
        at = runs[runs["accuracy"] >= target].sort_values("iteration")
        reached[label, seed] = (int(at["iteration"].iloc[0]) + 1, float(at["end"].iloc[0])) if len(at) else None
    print(f"compression for real: 4 workers on {nodes} nodes, CIFAR-10 small CNN, 3 seeds; mean iteration (s) [95% "
          f"interval]; seconds to {target:.0%} test accuracy, mean of the seeds that reached it in {iterations} "
          f"iterations at {fastest} (measured there, evaluated every {max(1, iterations // 6)} iterations; derived "
          f"at the slower rates: those iterations x the rate's mean iteration)")  # fmt: skip
    rows = []
    for name, table in tables.items():
        same = table.merge(first, on=keys, suffixes=("", "_first"))
        same["differs"] = (same["loss"] - same["loss_first"]).abs() / same["loss_first"].abs()
        differs = same.groupby("variant")["differs"].max()
        print(f"{name}: {table['iteration'].max() + 1} iterations a seed")
        for label, frame in table.groupby("variant", sort=False):
            mean, (low, high) = frame["duration"].mean(), mean_confidence_interval(frame)
            hits = [reached[label, seed] for seed in sorted(frame["seed"].unique()) if reached[label, seed]]
            if name == fastest:
                seconds, check = [end for _, end in hits], ""
            else:  # (the losses' largest relative difference from the fastest run's, iteration by iteration)
                seconds, check = [count * mean for count, _ in hits], f"  loss vs {fastest}: {differs[label]:.0e}"
            when = f"{np.mean(seconds):.1f} s ({len(hits)} of 3 seeds)" if hits else "not reached"
            print(f"{name:>8} {label:>12}: {mean:.3f} [{low:.3f}, {high:.3f}]  to {target:.0%}: {when}{check}",
                  flush=True)  # fmt: skip
            rows.append({"rate": name, "variant": label, "mean": mean, "low": low, "high": high})
    compression_figure(pd.DataFrame(rows), Path(out) / "emulated_compression.png")


def compression_figure(table, out) -> None:
    """Mean iteration against the link's rate, a panel per scheme, a line per compressor (95% intervals)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = list(COMPRESSION_RATES)
    figure, axes = plt.subplots(1, len(SCHEMES), figsize=(9, 3), sharey=True, constrained_layout=True)
    for ax, scheme in zip(axes, SCHEMES, strict=True):
        for name in COMPRESSORS:
            line = table[table["variant"] == f"{scheme} {name}"].set_index("rate").loc[rates]
            x = [COMPRESSION_RATES[rate] * 8 / 1e6 for rate in rates]
            ax.errorbar(x, line["mean"], yerr=[line["mean"] - line["low"], line["high"] - line["mean"]], marker="o",
                        ms=3, capsize=2, label=name)  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks([20, 100, 1000], ["20", "100", "1000"])
        ax.set_yticks([0.05, 0.1, 0.2, 0.5, 1.0], ["0.05", "0.1", "0.2", "0.5", "1"])
        ax.set_ylim(0.05, 1.0)  # (an interval reaching below is drawn to the axis)
        ax.minorticks_off()
        ax.set_title(scheme if scheme == "uncoded" else f"{scheme} s=1")
        ax.set_xlabel("each node's uplink (Mb/s)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean iteration (s)")
    axes[-1].legend(title="compression", fontsize=7)
    figure.savefig(out, dpi=150)
    figure.savefig(Path(out).with_suffix(".pdf"))
    print(f"figure: {out}")


def cce_for_real(data_dir: str, out, reuse: bool, iterations: int = 30, nodes: int = 2) -> None:
    """Part 3: CR against CCE-CR through the master's shared 20 Mb/s ingress."""
    from gcbench.results.summary import mean_confidence_interval

    text = wire_scenario("cce-wire", iterations, "{master: {ingress: 2500000}}", CCE_VARIANTS,
                         f"data_dir: {Path(data_dir).resolve()}, eval_every: 1000", nodes)  # fmt: skip
    iterations_table, workers = emulated_run(text, Path(out) / "cce", reuse)
    print(f"CCE for real: 4 workers on {nodes} nodes, the master's ingress 20 Mb/s shared by every upload, "
          f"CIFAR-10 small CNN, 3 seeds x {iterations} iterations")  # fmt: skip
    for label, frame in iterations_table.groupby("variant", sort=False):
        mean, (low, high) = frame["duration"].mean(), mean_confidence_interval(frame)
        sent = workers[(workers["variant"] == label) & workers["used"]]
        upload = float((sent["arrival"] - sent["compute_end"]).median())
        print(f"{label:>16}: mean iteration {mean:.3f} s [{low:.3f}, {high:.3f}], median upload {upload:.3f} s")


SWEEP_SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "stragglers.yaml"


def multi_node_sweep(out, nodes: int = 3, iterations: int = 30) -> None:
    """Part 5: `gcbench simulate --ray --emulate NODES` against a local simulation of the same scenario: the tables
    compared byte for byte."""
    import filecmp

    runs = {}
    for name, extra in (("local", []), ("emulated", ["--ray", "--emulate", str(nodes)])):
        runs[name] = Path(out) / f"sweep-{name}"
        command = [sys.executable, "-m", "gcbench", "simulate", str(SWEEP_SCENARIO), "--iterations", str(iterations),
                   "--seeds", "0", "--force", "--out", str(runs[name]), *extra]  # fmt: skip
        print("+", " ".join(command), flush=True)
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        print(f"  {time.perf_counter() - started:.1f} s")
    for table in ("iterations.parquet", "workers.parquet"):
        same = filecmp.cmp(runs["local"] / table, runs["emulated"] / table, shallow=False)
        print(
            f"multi-node sweep, {SWEEP_SCENARIO.name} across {nodes} emulated Ray nodes: {table} "
            f"{'identical to the local run, byte for byte' if same else 'DIFFERS from the local run'}"
        )


def twin_scenario(nodes: int = 2) -> str:
    """Part 4's scenario: ten variants at 20 Mb/s a node."""
    variants = [
        "{label: uncoded none, scheme: uncoded, policy: wait_all}",
        "{label: uncoded fp16, scheme: uncoded, policy: wait_all, compression: %(fp16)s}",
        "{label: FR none, scheme: fr, s: 1}",
        "{label: FR fp16, scheme: fr, s: 1, compression: %(fp16)s}",
        "{label: uncoded qsgd, scheme: uncoded, policy: wait_all, compression: %(qsgd)s}",
        "{label: uncoded topk, scheme: uncoded, policy: wait_all, compression: %(topk)s}",
        "{label: FR qsgd, scheme: fr, s: 1, compression: %(qsgd)s}",
        "{label: FR topk, scheme: fr, s: 1, compression: %(topk)s}",
        "{label: CR none, scheme: cr, s: 1}",
        "{label: CCE-CR m=2, scheme: cce_cr, s: 1, m: 2}",
    ]
    return wire_scenario("twin-wire", 40, "{bandwidth: 2500000}", variants, "eval_every: 1000", nodes) % COMPRESSORS


TWIN_CALIBRATES_FROM = ["uncoded none", "uncoded fp16", "FR none", "FR fp16"]


def twin_on_a_wire(data_dir: str, out: str, iterations: int, turn: int, reuse: bool, nodes: int = 2) -> None:
    """Calibrate from uncoded's and FR's runs, uncompressed and fp16, on the emulated wire; predict the rest."""
    from argparse import Namespace

    from calibration import accuracy

    folder = Path(out).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    scenario = folder / "twin-wire.yaml"
    scenario.write_text(twin_scenario(nodes))
    args = Namespace(out=folder, iterations=iterations, seeds="0,1,2", turn=turn, data_dir=Path(data_dir).resolve(),
                     device=None, emulate=True, reuse=reuse, separate_runs=False, drop_first=0, cores=None)  # fmt: skip
    print("\n".join(accuracy(scenario, "torch", args, TWIN_CALIBRATES_FROM, other_policies=False)), flush=True)
    run = folder / "twin-wire-torch"
    paired = run / "twin-wire-paired-sim"  # the calibrated scenario simulated with the run's seeds and iterations
    for command in (["simulate", str(run / "calibrated.yaml"), "--force", "--out", str(paired)],
                    ["plot", str(paired), str(run / "interleaved"), "-o", str(folder)]):  # fmt: skip
        subprocess.run([sys.executable, "-m", "gcbench", *command], check=True, stdout=subprocess.DEVNULL)
    print(f"figures: {folder}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--size", type=int, default=25_000_000)
    parser.add_argument("--part", type=int, choices=range(1, 8))
    parser.add_argument("--data-dir", help="CIFAR-10 (image folders, or their .tar.gz) for parts 2-4")
    parser.add_argument("--out", default="results/emulated-cluster", help="the runs of parts 2-5 and part 2's figure")
    parser.add_argument("--iterations", type=int, default=60, help="part 2's iterations a seed at 1 Gb/s")
    parser.add_argument("--short-iterations", type=int, default=20, help="part 2's iterations a seed, slower rates")
    parser.add_argument("--target", type=float, default=0.25, help="part 2's target test accuracy")
    parser.add_argument("--twin-iterations", type=int, default=60, help="part 4's iterations a seed")
    parser.add_argument("--turn", type=int, default=10, help="part 4's iterations of a variant's turn")
    parser.add_argument("--reuse", action="store_true", help="parts 2-4: read the runs already in --out again")
    parser.add_argument(
        "--nodes",
        type=int,
        choices=sorted(TOPOLOGIES),
        default=2,
        help="parts 2-4: the emulated nodes the 4 workers run on (beside the master's)",
    )
    options = parser.parse_args()
    require_namespaces()
    wanted = lambda part: options.part in (None, part)  # noqa: E731
    if wanted(1):
        link_fidelity(options.repeats, options.size)
    for part, what in ((2, "compression for real"), (3, "CCE for real"), (4, "the twin on a wire")):
        if wanted(part) and options.data_dir is None:
            print(f"part {part} ({what}) needs --data-dir: skipped")
    if wanted(2) and options.data_dir is not None:
        compression_for_real(options.data_dir, options.out, options.iterations, options.short_iterations,
                             options.target, options.reuse, options.nodes)  # fmt: skip
    if wanted(3) and options.data_dir is not None:
        cce_for_real(options.data_dir, options.out, options.reuse, nodes=options.nodes)
    if wanted(4) and options.data_dir is not None:
        twin_on_a_wire(
            options.data_dir, options.out, options.twin_iterations, options.turn, options.reuse, options.nodes
        )
    if wanted(5):
        multi_node_sweep(options.out)
    if wanted(6):
        overhead(options.repeats)
    if wanted(7):
        link_sharing(options.repeats)


if __name__ == "__main__":
    main()
