"""The emulated cluster's numbers: how faithfully its links carry the rate set, and how uploads share one.

Part 1, link fidelity: a 25 MB message sent between two emulated nodes over TCP, its measured rate of message bytes
against the rate set, at 20 Mb/s, 100 Mb/s and 1 Gb/s each way (target: within 5%), and the rate of an unshaped
link, the most this machine carries.

Part 2, how uploads share a link: 4 senders start together, each sending 2.5 MB to a receiver on node 0, through
one 100 Mb/s link (the receiver's downlink, as a master's ingress; or one node's uplink, its 4 workers'). When each
message is complete, against the two models of a shared link: first in, first out (the k-th at k x 0.2 s) and
fair sharing (all at 0.8 s).

Part 3, CCE for real: CR s=1 against CCE-CR s=1 m=2 (half the bytes a message) on CIFAR-10 with the small CNN,
4 workers on 2 nodes and the master alone on a third, whose ingress (20 Mb/s) every upload shares: mean iteration
time with its 95% interval over 3 seeds, and the median upload (needs ``--data-dir``, CIFAR-10 as image folders or
their .tar.gz).

Part 6, overhead: the emulated cluster's start and teardown (2 and 4 nodes; and Ray across them), and a real run's
time per iteration and the master's time between iterations on 2 nodes linked at 1 Gb/s against the same run on
this machine's loopback (torch backend, 4 workers, synthetic data, runs alternating).

Part 7, compression for real: uncoded and FR s=1, each under none, fp16, QSGD and top-k 1%, on CIFAR-10 with the
small CNN, 4 workers on 2 nodes beside the master's, every node's uplink at 1 Gb/s and then at 20 Mb/s: mean
iteration time with its 95% interval over 3 seeds (needs ``--data-dir``).

    python benchmarks/emulated_cluster.py [--repeats 3] [--size 25000000] [--part 1|2|3|6|7] [--data-dir PATH]

Each rate is the median of ``--repeats`` transfers on a new pair of nodes; the time runs from the first byte sent
to the receiver's count of them coming back (one round trip more than the transfer, under a millisecond here).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

from gcbench.emulation import EmulatedCluster, LinkRates, NodeSpec, require_namespaces
from gcbench.emulation.probe import transfer

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
        "from gcbench.emulation import Nodes; from gcbench.emulation.ray_nodes import start_ray_nodes; "
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
    from pathlib import Path

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


CCE_SCENARIO = """\
name: cce-wire
workers: 4
iterations: {iterations}
seeds: [0, 1, 2]
compute: {{per_partition: {{distribution: exponential, rate: 20}}}}
network: {{master: {{ingress: 2500000}}}}
topology: {{nodes: 3, placement: {{0: [], 1: [0, 1], 2: [2, 3]}}}}
variants:
  - {{label: CR s=1, scheme: cr, s: 1}}
  - {{label: CCE-CR s=1 m=2, scheme: cce_cr, s: 1, m: 2}}
training: {{dataset: cifar10, data_dir: {data}, batch_size: 128, eval_every: 1000, device: cpu}}
"""


COMPRESSION_SCENARIO = """\
name: compression-wire
workers: 4
iterations: {iterations}
seeds: [0, 1, 2]
compute: {{per_partition: {{distribution: exponential, rate: 20}}}}
network: {{bandwidth: {rate}}}
topology: {{nodes: 3, placement: {{0: [], 1: [0, 1], 2: [2, 3]}}}}
variants:
  - {{label: uncoded none, scheme: uncoded, policy: wait_all}}
  - {{label: uncoded fp16, scheme: uncoded, policy: wait_all, compression: {{name: fp16}}}}
  - {{label: uncoded qsgd, scheme: uncoded, policy: wait_all, compression: {{name: qsgd}}}}
  - {{label: uncoded topk, scheme: uncoded, policy: wait_all, compression: {{name: topk}}}}
  - {{label: FR none, scheme: fr, s: 1}}
  - {{label: FR fp16, scheme: fr, s: 1, compression: {{name: fp16}}}}
  - {{label: FR qsgd, scheme: fr, s: 1, compression: {{name: qsgd}}}}
  - {{label: FR topk, scheme: fr, s: 1, compression: {{name: topk}}}}
training: {{dataset: cifar10, data_dir: {data}, batch_size: 128, eval_every: 1000, device: cpu}}
"""


def emulated_run(text: str):
    """The iterations and workers tables of a torch run of this scenario on its emulated cluster."""
    import tempfile
    from pathlib import Path

    import pandas as pd

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "s.yaml").write_text(text)
        command = [sys.executable, "-m", "gcbench", "run", str(folder / "s.yaml"), "--backend", "torch", "--emulate",
                   "--out", str(folder / "out")]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        return pd.read_parquet(folder / "out" / "iterations.parquet"), pd.read_parquet(
            folder / "out" / "workers.parquet"
        )


def compression_for_real(data_dir: str, iterations: int = 20) -> None:
    from pathlib import Path

    from gcbench.results.summary import mean_confidence_interval

    data = Path(data_dir).resolve()
    print(f"compression for real: 4 workers on 2 nodes, CIFAR-10 small CNN, 3 seeds x {iterations} iterations; mean "
          "iteration (s) [95% interval]")  # fmt: skip
    for name, rate in (("1 Gb/s", 1000 * MBIT), ("20 Mb/s", 20 * MBIT)):
        table, _ = emulated_run(COMPRESSION_SCENARIO.format(iterations=iterations, rate=rate, data=data))
        for label, frame in table.groupby("variant", sort=False):
            low, high = mean_confidence_interval(frame)
            print(f"{name:>8} {label:>13}: {frame['duration'].mean():.3f} [{low:.3f}, {high:.3f}]")


def cce_for_real(data_dir: str, iterations: int = 30) -> None:
    from pathlib import Path

    from gcbench.results.summary import mean_confidence_interval

    iterations_table, workers = emulated_run(CCE_SCENARIO.format(iterations=iterations, data=Path(data_dir).resolve()))
    print(f"CCE for real: 4 workers on 2 nodes, the master's ingress 20 Mb/s shared by every upload, CIFAR-10 small "
          f"CNN, 3 seeds x {iterations} iterations")  # fmt: skip
    for label, frame in iterations_table.groupby("variant", sort=False):
        mean, (low, high) = frame["duration"].mean(), mean_confidence_interval(frame)
        sent = workers[(workers["variant"] == label) & workers["used"]]
        upload = float((sent["arrival"] - sent["compute_end"]).median())
        print(f"{label:>16}: mean iteration {mean:.3f} s [{low:.3f}, {high:.3f}], median upload {upload:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--size", type=int, default=25_000_000)
    parser.add_argument("--part", type=int, choices=(1, 2, 3, 6, 7))
    parser.add_argument("--data-dir", help="CIFAR-10 (image folders, or their .tar.gz) for part 3")
    options = parser.parse_args()
    require_namespaces()
    if options.part in (None, 1):
        link_fidelity(options.repeats, options.size)
    if options.part in (None, 2):
        link_sharing(options.repeats)
    if options.part in (None, 3):
        if options.data_dir is None:
            print("part 3 (CCE for real) needs --data-dir: skipped")
        else:
            cce_for_real(options.data_dir)
    if options.part in (None, 6):
        overhead(options.repeats)
    if options.part in (None, 7) and options.data_dir is not None:
        compression_for_real(options.data_dir)


if __name__ == "__main__":
    main()
