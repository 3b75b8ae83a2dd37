"""What compressing a message costs, per compressor, against what sending it uncompressed costs.

At the gradient length of a model (default the small CNN's), per registered compressor with its defaults:
the payload's bytes against the stated size, the time to compress and to decompress one message (medians of
``--repeats``, after a warm-up), the cost per gradient entry (what a scenario's ``compress_cost`` and
``decompress_cost`` take), and both as ratios to the reference measured in the same process: sending the
uncompressed float32 message from one gloo rank to another on the loopback interface (two threads, two ranks
of one ProcessGroupGloo world, send and receive timed together, median of ``--repeats``).

    python benchmarks/compression.py [--model small_cnn] [--repeats 30]
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


if __name__ == "__main__":
    main()
