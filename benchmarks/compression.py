"""What compressing a message costs, per compressor, against what sending it uncompressed costs; the bytes on the
wire; and the error each compressor leaves in the decoded gradient under each scheme.

At the gradient length of a model (default the small CNN's), per registered compressor with its defaults:
the payload's bytes against the stated size, the time to compress and to decompress one message (medians of
``--repeats``, after a warm-up), the cost per gradient entry (what a scenario's ``compress_cost`` and
``decompress_cost`` take), and both as ratios to the reference measured in the same process: sending the
uncompressed float32 message from one gloo rank to another on the loopback interface (two threads, two ranks
of one ProcessGroupGloo world, send and receive timed together, median of ``--repeats``).

Bytes on the wire (``--wire``): a worker's reply carrying one compressed message, serialised as each backend
sends it (torch: the channel's 40-byte header and the pickled reply; Ray: its serialisation context's bytes),
less the same reply without the message (the envelope), against the payload size the compressor states.

Error under decoding (``--errors``): ``gcbench simulate``'s training (a softmax model on synthetic data, n = 12,
s = 2, 20 iterations, no stragglers but the two last workers 1 s late in every iteration, so each code decodes
from the same 10 workers) per scheme (uncoded with s = 0, FR, CR, cyclic-MDS) and compressor: the mean of the
iterations table's ``compression_error`` and the scheme's error amplification (worst ||W||_F).

    python benchmarks/compression.py [--model small_cnn] [--repeats 30] [--wire] [--errors]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import threading
import time

import numpy as np


def gradient_length(model: str) -> int:
    from gcbench.training.models import build_model

    return int(sum(p.numel() for p in build_model(model, 10, 0).parameters()))


def median_seconds(work, repeats: int) -> float:
    work()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gloo_send_seconds(vector: np.ndarray, repeats: int) -> float:
    """Median seconds to send ``vector`` from rank 0 to rank 1 of a loopback gloo world (both ranks threads of
    this process, the receive waited for)."""
    import torch
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    timeout = datetime.timedelta(seconds=60)
    groups: dict[int, object] = {}

    def join(rank: int) -> None:
        groups[rank] = dist.ProcessGroupGloo(dist.PrefixStore("bench/", store), rank, 2, timeout)

    threads = [threading.Thread(target=join, args=(rank,)) for rank in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    sent, received = torch.from_numpy(vector.copy()), torch.empty(len(vector), dtype=torch.float32)

    def once() -> None:
        receive = groups[1].recv([received], 0, 0)
        groups[0].send([sent], 1, 0).wait()
        receive.wait()

    return median_seconds(once, repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="small_cnn")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--wire", action="store_true", help="bytes on the wire on torch and Ray")
    parser.add_argument("--errors", action="store_true", help="compression_error per scheme and compressor")
    args = parser.parse_args()

    import torch

    from gcbench.compression import COMPRESSORS, Key

    torch.set_num_threads(1)
    d = gradient_length(args.model)
    vector = (np.random.default_rng(0).standard_normal(d) * 1e-2).astype(np.float32)
    send = gloo_send_seconds(vector, args.repeats)
    print(f"{args.model}: d = {d:,} parameters; reference: sending the uncompressed message ({4 * d:,} bytes) over "
          f"gloo on loopback takes {send * 1e3:.3f} ms (median of {args.repeats})")  # fmt: skip
    header = (f"{'compressor':<10} {'bytes':>9} {'stated':>9} {'bits/p':>7} {'compress ms':>12} {'decompress ms':>14} "
              f"{'ns/entry c':>11} {'ns/entry d':>11} {'(c+d)/send':>11}")  # fmt: skip
    print(header)
    for name in COMPRESSORS.names():
        compressor, key, state = COMPRESSORS.get(name)(), Key(0, 1, 0, 0), {}
        payload = compressor.compress(vector, key, state)
        compress = median_seconds(lambda c=compressor, k=key, s=state: c.compress(vector, k, s), args.repeats)
        decompress = median_seconds(lambda c=compressor, p=payload: c.decompress(p), args.repeats)
        sizes = f"{payload.nbytes:>9,} {compressor.payload_bytes(d):>9,} {compressor.bits_per_parameter(d):>7.3g}"
        print(f"{name:<10} {sizes} {compress * 1e3:>12.3f} {decompress * 1e3:>14.3f} {compress / d * 1e9:>11.2f} "
              f"{decompress / d * 1e9:>11.2f} {(compress + decompress) / send:>11.2f}")  # fmt: skip
    if args.wire:
        wire_bytes(vector)
    if args.errors:
        decoded_errors()


def reply(messages: list) -> dict:
    """A training worker's reply (gcbench/real/wallclock/gradient_worker.py) carrying these messages."""
    return {"started": True, "compute_start": 1.7e9, "compute_end": 1.7e9 + 0.05, "abandoned": False,
            "messages": messages, "losses": {0: 2.3}, "injected": 0.0}  # fmt: skip


def wire_bytes(vector: np.ndarray) -> None:
    import pickle

    import ray

    from gcbench.compression import COMPRESSORS, Key

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    context = ray._private.worker.global_worker.get_serialization_context()
    torch_bytes = lambda value: 40 + len(pickle.dumps(value, protocol=5))  # noqa: E731 (channel.Sender's)
    ray_bytes = lambda value: context.serialize(value).total_bytes  # noqa: E731
    envelope = {"torch": torch_bytes(reply([])), "ray": ray_bytes(reply([]))}
    print(f"\nbytes on the wire of one reply, less its envelope (torch {envelope['torch']} B, Ray {envelope['ray']} B)")
    print(f"{'compressor':<10} {'stated':>9} {'torch':>9} {'torch/stated':>13} {'ray':>9} {'ray/stated':>11}")
    for name in COMPRESSORS.names():
        compressor = COMPRESSORS.get(name)()
        payload = compressor.compress(vector, Key(0, 1, 0, 0), {})
        message = vector if name == "none" else payload  # uncompressed, a worker sends the array itself
        stated = compressor.payload_bytes(len(vector))
        sent = {backend: size(reply([message])) - envelope[backend]
                for backend, size in (("torch", torch_bytes), ("ray", ray_bytes))}  # fmt: skip
        print(f"{name:<10} {stated:>9,} {sent['torch']:>9,} {sent['torch'] / stated:>13.4f} {sent['ray']:>9,} "
              f"{sent['ray'] / stated:>11.4f}")  # fmt: skip
    ray.shutdown()


def decoded_errors() -> None:
    from gcbench.coding import make_scheme
    from gcbench.compression import COMPRESSORS
    from gcbench.scenario.build import scheme_for
    from gcbench.scenario.schema import Scenario
    from gcbench.sim.training import simulate_training

    schemes = [("uncoded", 0), ("fr", 2), ("cr", 2), ("cyclic_mds", 2)]
    print("\nmean compression_error of the decoded gradient (n = 12, two workers 1 s late every iteration)")
    print(f"{'compressor':<10} " + " ".join(f"{name:>12}" for name, _ in schemes))
    amplification = [make_scheme(name, n=12, s=s).error_amplification().worst for name, s in schemes]
    print(f"{'||W||_F':<10} " + " ".join(f"{value:>12.3g}" for value in amplification))
    for name in COMPRESSORS.names():
        if name == "none":
            continue
        row = []
        for scheme, s in schemes:
            sc = Scenario.model_validate({
                "name": "errors", "workers": 12, "iterations": 20, "gradient": {"length": 30730},
                "compute": {"per_partition": {"distribution": "deterministic", "value": 0.1}},
                "straggling": {"model": "fixed", "workers": [10, 11], "delay": 1.0},
                "variants": [{"scheme": scheme, "s": s, "policy": "decodable" if s else "wait_all",
                              "compression": name}],
                "training": {"in_simulator": True, "dataset": "synthetic", "model": "softmax", "batch_size": 120,
                             "learning_rate": 3e-5, "eval_every": 20},
            })  # fmt: skip
            rec = simulate_training(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
            row.append(float(np.nanmean(rec.compression_error)))
        print(f"{name:<10} " + " ".join(f"{value:>12.3g}" for value in row))


if __name__ == "__main__":
    main()
