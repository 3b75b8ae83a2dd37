"""The GPU path's numbers (docs/gpu.md), on a CUDA device or, for the comparison, on this machine's CPU.

Each part writes its table to ``--out`` as a CSV as soon as it is done, and a part that fails is reported and
skipped, so one short lease on a GPU machine brings back everything that worked:

- ``environment``: torch, CUDA, NCCL, the device, and the device-to-device copy bandwidth measured here (the
  reference the decode's throughput is a fraction of);
- ``decode``: CCE-CR (n 8, s 3, m 1 / 2 / 3) decoding the small CNN's and ResNet-18's gradients from 5 messages on
  the device: seconds, the bytes a fused decode must move (messages read, gradient written) per second, and that
  as a share of the copy bandwidth;
- ``staging``: a message's copy from the GPU to host memory, pinned against pageable (what a worker pays before
  gloo sends it), and whether gloo sends a CUDA tensor point to point at all;
- ``iterations``: `gcbench run --backend torch` with 4 and 8 workers sharing the device, the small CNN and
  ResNet-18, uncoded, FR s=1 and the DDP baseline on gloo, then (on a GPU, 4 workers) the baseline on NCCL;
  per variant the median and mean seconds per iteration, the first two (warm-up) left out.

    python benchmarks/gpu_measure.py --device cuda --out OUT [--data-dir CIFAR] [--parts decode,staging,...]
    python benchmarks/gpu_measure.py --device cpu --out OUT --iterations small_cnn=30,resnet18=5 --wait 600

On a CPU the staging part measures nothing (a message is staged from a GPU only), and the decode's matrix
product and multiply-add chain are torch's CPU kernels, not what a CPU master decodes with (numpy's BLAS).
The script exits 1 when a part failed.
"""

from __future__ import annotations

import argparse
import csv
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "cifar10-gpu.yaml"
GRADIENTS = {"small_cnn": 188_810, "resnet18": 11_173_962}  # each model's parameters (tests/test_training.py)
PARTS = ["environment", "decode", "staging", "iterations"]


def write(out: Path, name: str, rows: list[dict], new: int | None = None) -> None:
    """The part's rows as ``out/name.csv``; the last ``new`` of them (all by default) printed."""
    if not rows:
        return
    with open(out / f"{name}.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for row in rows[-(new if new is not None else len(rows)) :] if new != 0 else []:
        print(f"  {name}: " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))


def timed(function, device: str, repeats: int = 20, warmup: int = 3) -> float:
    """Median seconds of ``function()``, the device synchronised around each call."""
    import torch

    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for _ in range(warmup):
        function()
    sync()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        sync()
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds))


def copy_bandwidth(device: str) -> float:
    """Bytes read plus written per second by a 1 GiB device-to-device copy (a 64 MiB one on the CPU)."""
    import torch

    size = (1 << 28) if device.startswith("cuda") else (1 << 24)  # float32 entries
    source, target = torch.ones(size, device=device), torch.empty(size, device=device)
    seconds = timed(lambda: target.copy_(source), device, repeats=10)
    return 2 * 4 * size / seconds


def environment(device: str, out: Path) -> float:
    import torch

    bandwidth = copy_bandwidth(device)
    row = {"torch": torch.__version__, "python": platform.python_version(), "device": device,
           "name": torch.cuda.get_device_name(0) if device.startswith("cuda") else platform.processor() or "cpu",
           "cuda": torch.version.cuda if device.startswith("cuda") else "", "gpus": torch.cuda.device_count(),
           "nccl": ".".join(map(str, torch.cuda.nccl.version())) if device.startswith("cuda") else "",
           "copy_bandwidth_GBps": bandwidth / 1e9}  # fmt: skip
    write(out, "environment", [row])
    return bandwidth


def decode(device: str, out: Path, bandwidth: float) -> None:
    import torch

    from gcbench.coding import make_scheme

    rows = []
    for model, d in GRADIENTS.items():
        for m in (1, 2, 3):
            scheme = make_scheme("cce_cr", n=8, s=3, m=m)
            length = -(-d // m)
            responders = range(3, 8)  # the first s are the stragglers
            received = {w: [torch.randn(length, device=device) for _ in scheme.messages(w)] for w in responders}
            messages = sum(len(v) for v in received.values())
            gradient = torch.empty(d, device=device)
            seconds = timed(lambda: scheme.decode(received, d=d, out=gradient), device)  # noqa: B023
            moved = 4 * (messages * length + d)  # each message read once, the gradient written once
            # its parts and the alternative: the matrix product alone (messages already in one block), and a
            # chain of fused multiply-adds per slice (each message read m times, each slice read and written r times)
            weights = torch.randn(m, messages, device=device)
            vectors = [v for w in responders for v in received[w]]
            block = torch.stack(vectors)
            product = timed(lambda: weights @ block, device)  # noqa: B023
            rows_out = [torch.empty(length, device=device) for _ in range(m)]
            chain = timed(lambda: _chain(rows_out, weights.tolist(), vectors), device)  # noqa: B023
            rows.append({"model": model, "d": d, "m": m, "messages": messages, "seconds": seconds,
                         "GBps": moved / seconds / 1e9, "of_copy_bandwidth": moved / seconds / bandwidth,
                         "product_only_s": product, "chain_s": chain})  # fmt: skip
    write(out, "decode", rows)


def _chain(rows: list, weights: list[list[float]], vectors: list) -> None:
    for row, w in zip(rows, weights, strict=True):
        row.copy_(vectors[0]).mul_(w[0])
        for weight, vector in zip(w[1:], vectors[1:], strict=True):
            row.add_(vector, alpha=weight)


def staging(device: str, out: Path) -> None:
    import torch

    rows = []
    if not device.startswith("cuda"):
        print("  staging: not measured (a message is staged from a GPU only)")
    else:
        for model, d in GRADIENTS.items():
            message = torch.randn(d, device=device)
            pinned = torch.empty(d, pin_memory=True)
            pageable = torch.empty(d)
            rows.append({"model": model, "d": d,
                         "pinned_s": timed(lambda: pinned.copy_(message, non_blocking=True), device),  # noqa: B023
                         "pageable_s": timed(lambda: pageable.copy_(message), device),  # noqa: B023
                         "to_host_s": timed(lambda: _to_host(message), device)})  # noqa: B023  # fmt: skip
    write(out, "staging", rows)
    write(out, "gloo_cuda_send", [gloo_cuda_send(device)])


def _to_host(tensor):
    from gcbench.training.device import to_host

    return to_host(tensor)


GLOO_SEND = """
import datetime, os, sys, torch, torch.distributed as dist
rank, port = int(sys.argv[1]), int(sys.argv[2])
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                        timeout=datetime.timedelta(seconds=30))
tensor = torch.ones(1000, device="cuda") * (rank + 1)
try:
    (dist.send if rank == 0 else dist.recv)(tensor, 1 - rank)
    print("ok", float(tensor[0]))
except Exception as error:  # noqa: BLE001
    print("refused:", " ".join(str(error).split())[:200])
"""


def gloo_cuda_send(device: str) -> dict:
    """Whether gloo's point-to-point send takes a CUDA tensor (two processes on loopback)."""
    if not device.startswith("cuda"):
        return {"gloo_send_of_a_cuda_tensor": "not tried (no GPU)"}
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ranks = [subprocess.Popen([sys.executable, "-c", GLOO_SEND, str(r), str(port)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(2)]  # fmt: skip
    said = []
    for rank in ranks:
        try:
            said.append(rank.communicate(timeout=60)[0].strip().splitlines()[-1:] or ["(nothing)"])
        except subprocess.TimeoutExpired:
            rank.kill()
            said.append(["timed out"])
    return {"gloo_send_of_a_cuda_tensor": " | ".join(line[0] for line in said)}


def run_iterations(device: str, model: str, workers: int, iterations: int, variants: list[str], ddp_backend: str,
                   data_dir: str | None, out: Path, timeout: float, wait: float) -> list[dict]:  # fmt: skip
    """One `gcbench run --backend torch`: each variant's seconds per iteration, warm-up left out."""
    import pandas as pd

    folder = out / f"{model}-{workers}-{ddp_backend}"
    command = [sys.executable, "-m", "gcbench", "run", str(SCENARIO), "--backend", "torch", "--device", device,
               "--iterations", str(iterations), "--out", str(folder), "--force",
               "--set", f"workers={workers}", "--set", f"training.model={model}",
               "--set", "straggling={model: none}", "--set", f"training.ddp_backend={ddp_backend}",
               "--set", f"training.eval_every={iterations}", "--set", f"training.checkpoint_every={iterations}",
               "--set", f"training.timeout={wait}",
               "--set", f"variants=[{', '.join(variants)}]"]  # fmt: skip
    command += ["--data-dir", data_dir] if data_dir else ["--dataset", "synthetic"]
    print("+", " ".join(command), flush=True)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, timeout=timeout)
    whole = time.perf_counter() - start
    table = pd.read_parquet(folder / "iterations.parquet")
    rows = []
    for label, frame in table.groupby("variant", sort=False):
        seconds = frame.sort_values("iteration")["duration"].to_numpy()[2:]
        rows.append({"device": device, "model": model, "workers": workers, "variant": label,
                     "ddp_backend": ddp_backend if label == "DDP" else "", "iterations": len(seconds),
                     "median_s": float(np.median(seconds)), "mean_s": float(np.mean(seconds)),
                     "run_s": whole})  # fmt: skip
    return rows


def iterations(device: str, out: Path, counts: dict[str, int], data_dir: str | None, budget: float,
               runs: Path, configs: list[tuple[str, int]], timeout: float, wait: float) -> None:  # fmt: skip
    coded = ["{label: uncoded, scheme: uncoded}", "{label: FR s=1, scheme: fr, s: 1}",
             "{label: DDP, scheme: uncoded, policy: allreduce}"]  # fmt: skip
    ddp = ["{label: DDP, scheme: uncoded, policy: allreduce}"]
    rows, started, failed = [], time.perf_counter(), []
    for model, workers in configs:
        # the DDP baseline on gloo beside the codes; on a GPU, again on NCCL (its ranks sharing the GPU)
        plan = [(coded, "gloo")] + ([(ddp, "nccl")] if device.startswith("cuda") and workers == 4 else [])
        for variants, backend in plan:
            if time.perf_counter() - started > budget:
                print(f"  iterations: over its {budget:.0f} s budget, {model} x {workers} skipped", flush=True)
                continue
            try:
                found = run_iterations(device, model, workers, counts[model], variants, backend, data_dir, runs,
                                       timeout, wait)  # fmt: skip
            except Exception:  # noqa: BLE001 - one configuration's failure leaves the others
                traceback.print_exc()
                found, failed = [], failed + [f"{model} x {workers} ({backend})"]
            rows += found
            write(out, "iterations", rows, len(found))
    if failed:
        raise RuntimeError(f"the iterations of {', '.join(failed)} failed (above)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--data-dir", default=None, help="CIFAR-10 (default: synthetic CIFAR-shaped data)")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--iterations", default="small_cnn=30,resnet18=12", help="iterations per run, per model")
    parser.add_argument("--runs", type=Path, default=None, help="where the runs' folders go (default: OUT/runs)")
    parser.add_argument(
        "--configs",
        default="small_cnnx4,small_cnnx8,resnet18x4,resnet18x8",
        help="the iterations part's runs: MODELxWORKERS, comma-separated",
    )
    parser.add_argument("--budget", type=float, default=240.0, help="seconds the iterations part may take")
    parser.add_argument(
        "--wait",
        type=float,
        default=30.0,
        help="the runs' training.timeout: seconds any wait may take (short on a GPU: a process "
        "group that cannot form fails fast; long on a CPU, where a ResNet-18 step takes seconds)",
    )
    parser.add_argument("--run-timeout", type=float, default=150.0, help="seconds one run may take")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    counts = {k: int(v) for k, v in (pair.split("=") for pair in args.iterations.split(","))}
    parts = args.parts.split(",")
    bandwidth, failed = float("nan"), []
    for part in parts:
        print(f"== {part} on {args.device}", flush=True)
        start = time.perf_counter()
        try:
            if part == "environment":
                bandwidth = environment(args.device, args.out)
            elif part == "decode":
                decode(args.device, args.out, bandwidth if np.isfinite(bandwidth) else copy_bandwidth(args.device))
            elif part == "staging":
                staging(args.device, args.out)
            elif part == "iterations":
                configs = [(model, int(workers)) for model, workers in (c.split("x") for c in args.configs.split(","))]
                runs = args.runs or args.out / "runs"
                iterations(args.device, args.out, counts, args.data_dir, args.budget, runs, configs, args.run_timeout,
                           args.wait)  # fmt: skip
        except Exception:  # noqa: BLE001 - the other parts still run
            traceback.print_exc()
            failed.append(part)
        print(f"   ({time.perf_counter() - start:.1f} s)", flush=True)
    if failed:
        sys.exit(f"gpu_measure: {', '.join(failed)} failed")


if __name__ == "__main__":
    main()
