"""The node as a failure domain, for real: what a node's crash does to each code on the emulated cluster, how well
the calibrated simulator predicts a slow node under each placement, and a node lost and coming back, real against
simulated.

Every part runs 6 workers on 3 emulated nodes (two a node; node 0 also holds the master), training CIFAR-10's
small CNN on the CPU with the torch backend (``--backend ray`` for Ray). In parts 1 and 3 (batch 48) every job also
sleeps a 0.1 s overhead, so that an iteration's time is more than this 2-core machine's noise; in part 2 (batch
192, no overhead) the compute is what the slow node slows.

Part 1, a node killed for good at iteration 10 (``failures.schedule``), 20 iterations, 3 seeds. FR s=1, CR s=2 and
CR s=1 placed ``by_code`` (CR survives a node's loss only where a node holds at most s workers, on any placement:
`gcbench schemes --nodes 3 --n 6 --s 1`), then the same codes, uncoded and DDP packed (``pack``). Each variant:
the iterations it finished of the 20, the share of exact decodes, the largest relative difference of its losses
from the one-process run's (the same mini-batches, ``--backend local``), and what stopped it.

Part 2, one node 4 times slow (``straggling: {model: fixed, level: node, nodes: [1], slowdown: 4}``), 120
iterations (the tails' samples: calibrate warns below 50), 3 seeds: uncoded, FR s=1, CR s=2 and cyclic-MDS s=2
under spread, pack and by_code (a run each). `gcbench calibrate` fits each run's uncoded and FR, and the calibrated
scenario predicts CR and cyclic-MDS (simulated with the run's seeds and iterations; the legs of
benchmarks/calibration.py); `gcbench plot`'s attribution of uncoded names the slow node.

Part 3, a node lost and coming back: node 1 crashes at iteration 10 with a 5 s downtime, 60 iterations, one seed;
uncoded (which waits for the node's workers) and FR s=1 spread (which does not). `gcbench calibrate` fits a run of
the same cluster without the crash; the calibrated scenario is simulated with the crash, and the iteration times
around the loss and the return are drawn real against simulated (``OUT/node_return.png``, docs/node_return.png);
run.json's ``node_crashes`` say when the node was killed, its workers noticed gone, the node started again and each
worker back.

    python benchmarks/node_failures.py --part 1|2|3 --data-dir PATH [--out DIR] [--backend torch|ray] [--reuse]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

NODE_LOST = "failures: {schedule: [{node: 1, iteration: 10, downtime: null}]}\n"
SLOW_ITERATIONS = 120  # part 2's, per variant and seed


def scenario_text(name: str, iterations: int, placement: str, variants: list[str], seeds: str, data_dir: str,
                  extra: str = "", batch: int = 48, overhead: bool = True) -> str:  # fmt: skip
    """6 workers on 3 nodes training CIFAR-10's small CNN; each job also sleeping a 0.1 s ``overhead``."""
    listed = "\n".join(f"  - {variant}" for variant in variants)
    sleep = "  overhead: {distribution: deterministic, value: 0.1}\n" if overhead else ""
    return (f"name: {name}\nworkers: 6\niterations: {iterations}\nseeds: [{seeds}]\n"
            f"compute:\n  per_partition: {{distribution: exponential, rate: 20}}\n{sleep}"
            f"topology: {{nodes: 3, placement: {placement}}}\nvariants:\n{listed}\n"
            f"training: {{dataset: cifar10, data_dir: {data_dir}, batch_size: {batch}, device: cpu, "
            f"eval_every: 1000, checkpoint_every: 1000}}\n{extra}")  # fmt: skip


def markdown(rows: list[dict]) -> str:
    """Rows of equal keys as a Markdown table."""
    header = list(rows[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(row[key]) for key in header) + " |" for row in rows])


def gcbench(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "gcbench", *map(str, args)]
    print("+", " ".join(command), flush=True)
    return subprocess.run(command, capture_output=True, text=True)


def real_run(text: str, folder: Path, backend: str, reuse: bool, expect_stop: bool = False) -> tuple[Path, str]:
    """A run of this scenario on its emulated cluster into ``folder / "run"``; what it printed."""
    folder.mkdir(parents=True, exist_ok=True)
    run = folder / "run"
    log = folder / "output.txt"
    if not (reuse and (run / "iterations.parquet").is_file()):
        shutil.rmtree(run, ignore_errors=True)  # (a stopped run's checkpoints would be taken up, not replaced)
        (folder / "scenario.yaml").write_text(text)
        done = gcbench("run", folder / "scenario.yaml", "--emulate", "--backend", backend, "--out", run)
        log.write_text(done.stdout + done.stderr)
        status = json.loads((run / "run.json").read_text())["status"] if (run / "run.json").is_file() else None
        if not (done.returncode == 0 or (expect_stop and done.returncode == 2 and status == "stopped")):
            raise SystemExit(f"the run in {folder} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return run, log.read_text() if log.is_file() else ""


def local_losses(text: str, folder: Path, reuse: bool) -> pd.DataFrame:
    """The one-process run's loss per (seed, iteration): what every exact decode must give."""
    run = folder / "local"
    if not (reuse and (run / "iterations.parquet").is_file()):
        shutil.rmtree(run, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "local.yaml").write_text(text.replace(NODE_LOST, ""))
        done = gcbench("run", folder / "local.yaml", "--backend", "local", "--force", "--out", run)
        if done.returncode != 0:
            raise SystemExit(done.stdout[-2000:] + done.stderr[-2000:])
    return pd.read_parquet(run / "iterations.parquet").set_index(["seed", "iteration"])["loss"]


def why_stopped(output: str, label: str) -> str:
    for line in output.splitlines():
        if line.startswith("error: ") and (f"'{label}'" in line):
            return line.removeprefix("error: ")
    return ""


def killed_for_good(data_dir: str, out: Path, backend: str, reuse: bool) -> None:
    """Part 1."""
    codes = [
        "{label: FR s=1, scheme: fr, s: 1}",
        "{label: CR s=2, scheme: cr, s: 2}",
        "{label: CR s=1, scheme: cr, s: 1}",
    ]
    stop = [*codes, "{label: uncoded, scheme: uncoded, policy: wait_all}",
            "{label: DDP, scheme: uncoded, policy: allreduce}"]  # fmt: skip
    rows = []
    for placement, variants in (("by_code", codes), ("pack", stop)):
        text = scenario_text(
            f"node-lost-{placement}", 20, placement, variants, "0, 1, 2", str(Path(data_dir).resolve()), NODE_LOST
        )
        folder = out / f"part1-{placement}-{backend}"
        run, output = real_run(text, folder, backend, reuse, expect_stop=True)
        local = local_losses(text, out / "part1-local", reuse)
        iterations = pd.read_parquet(run / "iterations.parquet")
        for label, frame in iterations.groupby("variant", sort=False):
            keys = list(zip(frame["seed"], frame["iteration"], strict=True))
            alone = local.loc[keys].to_numpy()
            difference = np.abs(frame["loss"].to_numpy() - alone) / np.abs(alone)
            finished = frame.groupby("seed")["iteration"].max() + 1
            rows.append({"placement": placement, "variant": label,
                         "iterations finished (per seed)": " ".join(map(str, finished.tolist())),
                         "exact": f"{frame['exact'].mean():.0%}", "largest loss difference": f"{difference.max():.1e}",
                         "stopped": why_stopped(output, label)[:300]})  # fmt: skip
        meta = json.loads((run / "run.json").read_text())
        for crash in meta.get("node_crashes", []):
            noticed = max(crash["noticed"].values(), default=float("nan")) - crash["killed"]
            print(f"  {crash['variant']} seed {crash['seed']}: node {crash['node']} killed ({crash['processes']} "
                  f"processes), its workers noticed gone {noticed * 1000:.0f} ms later")  # fmt: skip
    print(markdown(rows))


def slow_node(data_dir: str, out: Path, backend: str, reuse: bool) -> None:
    """Part 2: each placement's run calibrated from uncoded and FR, predicting CR and cyclic-MDS."""
    from argparse import Namespace

    sys.path.insert(0, str(Path(__file__).parent))
    from calibration import accuracy

    variants = ["{label: uncoded, scheme: uncoded, policy: wait_all}", "{label: FR s=1, scheme: fr, s: 1}",
                "{label: CR s=2, scheme: cr, s: 2}", "{label: cyclic-MDS s=2, scheme: cyclic_mds, s: 2}"]  # fmt: skip
    slow = "straggling: {model: fixed, level: node, nodes: [1], slowdown: 4}\n"
    for placement in ("spread", "pack", "by_code"):
        folder = (out / f"part2-{placement}").resolve()
        if not reuse:  # (a stopped run's checkpoints would be taken up, not replaced)
            shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        scenario = folder / f"slow-node-{placement}.yaml"
        scenario.write_text(scenario_text(f"slow-node-{placement}", SLOW_ITERATIONS, placement, variants, "0, 1, 2",
                                          str(Path(data_dir).resolve()), slow, batch=192, overhead=False))  # fmt: skip
        args = Namespace(out=folder, iterations=SLOW_ITERATIONS, seeds="0,1,2", turn=10,
                         data_dir=Path(data_dir).resolve(), device=None, emulate=True, reuse=reuse,
                         separate_runs=False, drop_first=0, cores=None)  # fmt: skip
        print(f"## {placement}")
        print("\n".join(accuracy(scenario, backend, args, ["uncoded", "FR s=1"], other_policies=False)), flush=True)
        run = folder / f"slow-node-{placement}-{backend}" / "interleaved"
        figures = folder / "figures"
        done = gcbench("plot", run, "-o", figures)
        print(done.stdout.strip()[-1500:])


def node_return(data_dir: str, out: Path, backend: str, reuse: bool) -> None:
    """Part 3: the iteration times around a node's loss and return, real against simulated."""
    variants = ["{label: uncoded, scheme: uncoded, policy: wait_all}", "{label: FR s=1, scheme: fr, s: 1}"]
    schedule = "failures: {schedule: [{node: 1, iteration: 10, downtime: 5}]}\n"
    text = scenario_text("node-return", 60, "spread", variants, "0", str(Path(data_dir).resolve()), schedule)
    folder = out / f"part3-{backend}"
    run, _ = real_run(text, folder, backend, reuse)
    # the twin is fitted to a run of the same cluster without the crash, and simulates the crash itself: what the
    # simulator predicts of a node's loss and return from a cluster it saw whole
    reference, _ = real_run(text.replace(schedule, ""), out / f"part3-{backend}-whole", backend, reuse)
    calibrated = folder / "calibrated.yaml"
    simulated = folder / "simulated"
    crash = "failures={schedule: [{node: 1, iteration: 10, downtime: 5}]}"
    for command in (["calibrate", reference, "-o", calibrated, "--force"],
                    ["simulate", calibrated, "--set", crash, "--force", "--out", simulated]):  # fmt: skip
        done = gcbench(*command)
        if done.returncode != 0:
            raise SystemExit(done.stdout[-2000:] + done.stderr[-2000:])
    real = pd.read_parquet(run / "iterations.parquet")
    sim = pd.read_parquet(simulated / "iterations.parquet")
    meta = json.loads((run / "run.json").read_text())
    for crash in meta["node_crashes"]:
        noticed = max(crash["noticed"].values()) - crash["killed"]
        back = {w: t - crash["revived"] for w, t in crash["back"].items()}
        print(f"{crash['variant']}: node {crash['node']} killed at {crash['killed']:.2f} s ({crash['processes']} "
              f"processes); noticed {noticed * 1000:.0f} ms later; started again at {crash['revived']:.2f} s; "
              f"workers back {', '.join(f'{w} +{t:.2f} s' for w, t in back.items())} after that")  # fmt: skip
    rows = []
    for label in real["variant"].unique():
        r = real[real["variant"] == label].set_index("iteration")["duration"]
        s = sim[sim["variant"] == label].set_index("iteration")["duration"]
        for part, index in (("before (0-9)", range(0, 10)), ("the loss (10)", [10]), ("down (11-30)", range(11, 31)),
                            ("after (31-59)", range(31, 60))):  # fmt: skip
            rows.append({"variant": label, "iterations": part, "real (s)": f"{r.loc[list(index)].sum():.2f}",
                         "simulated (s)": f"{s.loc[list(index)].sum():.2f}"})  # fmt: skip
    print(markdown(rows))
    figure(real, sim, meta["node_crashes"], out / "node_return.png")


def figure(real: pd.DataFrame, sim: pd.DataFrame, crashes: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(real["variant"].unique())
    fig, axes = plt.subplots(1, len(labels), figsize=(5.2 * len(labels), 3.4), sharey=True)
    for axis, label in zip(np.atleast_1d(axes), labels, strict=True):
        for frame, name, style in ((real, "real", "-"), (sim, "simulated", "--")):
            rows = frame[frame["variant"] == label].sort_values("iteration")
            # (each iteration's time over its span: from the previous one's end to its own)
            ends = np.concatenate([[rows["start"].iloc[0]], rows["start"] + rows["duration"]])
            durations = np.concatenate([[rows["duration"].iloc[0]], rows["duration"]])
            axis.step(ends, durations, style, where="pre", label=name)
        crash = next(crash for crash in crashes if crash["variant"] == label)
        for at, style, name in ((crash["killed"], "-", "killed"), (crash["revived"], ":", "started again"),
                                (max(crash["back"].values()), "--", "workers back (real)")):  # fmt: skip
            axis.axvline(at, color="grey", linewidth=0.8, linestyle=style, label=name)
        axis.set_title(f"{label}: node 1 lost at iteration 10, down 5 s")
        axis.set_xlabel("run time (s); each iteration drawn over its span")
        axis.set_yscale("log")
    np.atleast_1d(axes)[0].set_ylabel("iteration time (s)")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    print(f"figure: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", type=int, choices=(1, 2, 3), required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--out", type=Path, default=Path("node-failures"))
    parser.add_argument("--backend", choices=("torch", "ray"), default="torch")
    parser.add_argument("--reuse", action="store_true")
    args = parser.parse_args()
    from gcbench.real.emulation import require_namespaces

    require_namespaces()
    args.out.mkdir(parents=True, exist_ok=True)
    part = {1: killed_for_good, 2: slow_node, 3: node_return}[args.part]
    part(args.data_dir, args.out, args.backend, args.reuse)


if __name__ == "__main__":
    main()
