"""Decode cost against the floor any aggregation pays: a plain sum of the same messages.

For n = 12 and 48, s = 1..n/4, a ResNet-18-sized gradient (11.2M float32): time
``scheme.decode`` (weights cached, as in training) and a plain in-place sum of the
same received messages, in the same process, and report the ratio (target <= 1.5).
Schemes with dense decoding weights are the worst case, so the first of
cyclic_mds, cr that accepts (n, s) is used.

    python benchmarks/decode_benchmark.py [--d 11200000] [--repeats 5] [--torch]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from gcbench.coding import SchemeParameterError, make_scheme


def dense_scheme(n: int, s: int):
    for name in ("cyclic_mds", "cr"):
        try:
            return make_scheme(name, n=n, s=s)
        except SchemeParameterError:
            continue
    return None


def plain_sum(vectors):
    out = vectors[0].copy()
    for v in vectors[1:]:
        out += v
    return out


def timed(repeats: int, fn, *fn_args) -> float:
    """Median seconds of fn(*fn_args) after one warm-up call (which caches decoding weights)."""
    fn(*fn_args)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*fn_args)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=11_200_000, help="gradient length (float32)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--torch", action="store_true", help="also time torch tensors")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"d={args.d} float32, median of {args.repeats}; ratio = decode / plain sum of the same messages")
    print(f"{'n':>3} {'s':>3} {'scheme':>10} {'r':>3} {'sum ms':>8} {'decode ms':>10} {'ratio':>6}  torch ratio")
    for n in (12, 48):
        pool = [rng.standard_normal(args.d, dtype=np.float32) for _ in range(n)]
        for s in range(1, n // 4 + 1):
            scheme = dense_scheme(n, s)
            if scheme is None:
                print(f"{n:>3} {s:>3} {'refused':>10}")
                continue
            received = {w: [pool[w]] for w in range(s, n)}  # the first s workers straggle
            vectors = [pool[w] for w in range(s, n)]
            base = timed(args.repeats, plain_sum, vectors)
            dec = timed(args.repeats, scheme.decode, received)
            extra = ""
            if args.torch:
                extra = f"{torch_ratio(scheme, received, args.repeats):.2f}"
            row = f"{n:>3} {s:>3} {scheme.name:>10} {n - s:>3} {base * 1e3:>8.1f} {dec * 1e3:>10.1f}"
            print(f"{row} {dec / base:>6.2f}  {extra}", flush=True)


def torch_ratio(scheme, received, repeats: int) -> float:
    import torch

    tensors = {w: [torch.from_numpy(v[0])] for w, v in received.items()}
    vectors = [v[0] for v in tensors.values()]

    def plain():
        out = vectors[0].clone()
        for v in vectors[1:]:
            out.add_(v)
        return out

    return timed(repeats, scheme.decode, tensors) / timed(repeats, plain)


if __name__ == "__main__":
    main()
