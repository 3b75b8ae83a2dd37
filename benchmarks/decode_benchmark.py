"""Decode cost against the floor any aggregation pays: a plain sum of the same messages.

For n = 12 and 48, s = 1..n/4, a ResNet-18-sized gradient (11.2M float32): time
``scheme.decode`` (weights cached, as in training) and a plain in-place sum of the
same received messages, in the same process, and report the ratio (target <= 1.5).
Schemes with dense decoding weights are the worst case, so the first of
cyclic_mds, cr (seeds 0..4) that accepts (n, s) is used.

    python benchmarks/decode_benchmark.py [--d 11200000] [--repeats 11] [--torch]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import numpy as np

from gcbench.coding import SchemeParameterError, make_scheme


def dense_scheme(n: int, s: int):
    """The first accepted of cyclic_mds and cr (seeds 0..4): every received message gets a weight."""
    candidates = [("cyclic_mds", {})] + [("cr", {"seed": seed}) for seed in range(5)]
    for name, params in candidates:
        try:
            return make_scheme(name, n=n, s=s, **params)
        except SchemeParameterError:
            continue
    return None


def plain_sum(vectors):
    out = vectors[0].copy()
    for v in vectors[1:]:
        out += v
    return out


def ratio(repeats: int, reference, candidate) -> tuple[float, float, float]:
    """Median seconds of reference() and candidate(), timed alternately after a warm-up, and their ratio.

    Alternating the two keeps slow drifts of a shared machine out of the ratio.
    """
    reference(), candidate()  # the first decode computes and caches the weights
    times: dict[int, list[float]] = {0: [], 1: []}
    for _ in range(repeats):
        for which, fn in enumerate((reference, candidate)):
            start = time.perf_counter()
            fn()
            times[which].append(time.perf_counter() - start)
    base, cand = statistics.median(times[0]), statistics.median(times[1])
    return base, cand, cand / base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=11_200_000, help="gradient length (float32)")
    parser.add_argument("--repeats", type=int, default=11)
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
            base, dec, numpy_ratio = ratio(
                args.repeats, functools.partial(plain_sum, vectors), functools.partial(scheme.decode, received)
            )
            extra = f"{torch_ratio(scheme, received, args.repeats):.2f}" if args.torch else ""
            row = f"{n:>3} {s:>3} {scheme.name:>10} {n - s:>3} {base * 1e3:>8.1f} {dec * 1e3:>10.1f}"
            print(f"{row} {numpy_ratio:>6.2f}  {extra}", flush=True)


def torch_ratio(scheme, received, repeats: int) -> float:
    import torch

    tensors = {w: [torch.from_numpy(v[0])] for w, v in received.items()}
    vectors = [v[0] for v in tensors.values()]

    def plain():
        out = vectors[0].clone()
        for v in vectors[1:]:
            out.add_(v)
        return out

    return ratio(repeats, plain, functools.partial(scheme.decode, tensors))[2]


if __name__ == "__main__":
    main()
