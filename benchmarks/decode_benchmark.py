"""Decode cost against the floor any aggregation pays: a plain sum of the same messages.

For n = 12 and 48, s = 1..n/4 and m = 1, 2, 3, a ResNet-18-sized gradient (11.2M float32, so a
message holds d/m of them): time ``scheme.decode`` (weights cached, as in training) and a plain in-place
sum of the same received messages, alternately in the same process, and report the ratio (target <= 1.1):
decoding into a fresh array, into a reused one (``out=``), and, "floor", against the least any decode into
``out=`` must do: the plain sum, then writing the d floats (for m > 1 the plain sum writes only d/m);
"floor/sum" is that floor against the plain sum, what a decode into ``out=`` cannot go below.
m = 1 uses the first of cyclic_mds, cr (seeds 0..4) that accepts (n, s): dense decoding weights, the
worst case; m > 1 uses cce_cr and cce_fr (where (s + m) divides n). BLAS and torch run on one thread
(``--threads``), so the shared machine's other load does not decide which side gets a second core;
``--threads 0`` leaves them as the process has them (the coding layer holds its own BLAS to one thread).
The last lines summarise each column per m: the median and the largest ratio over the rows.

    python benchmarks/decode_benchmark.py [--d 11200000] [--repeats 11] [--m 1 2 3] [--n 12 48] [--torch] [--clock cpu]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import time

import numpy as np
import scipy.linalg.blas  # noqa: F401  (loads scipy's OpenBLAS now, so threadpool_limits below holds it too)
from threadpoolctl import threadpool_limits

from gcbench.coding import SchemeParameterError, make_scheme

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
CLOCK = [time.perf_counter]  # --clock cpu: a loaded machine's waits for a core are not counted


def dense_scheme(n: int, s: int):
    """The first accepted of cyclic_mds and cr (seeds 0..4): every received message gets a weight."""
    candidates = [("cyclic_mds", {})] + [("cr", {"seed": seed}) for seed in range(5)]
    for name, params in candidates:
        try:
            return make_scheme(name, n=n, s=s, **params)
        except SchemeParameterError:
            continue
    return None


def schemes_for(n: int, s: int, m: int) -> list:
    """The schemes timed at (n, s, m); a refused construction is left out."""
    if m == 1:
        found = dense_scheme(n, s)
        return [found] if found is not None else []
    accepted = []
    for name in ("cce_cr", "cce_fr"):
        try:
            accepted.append(make_scheme(name, n=n, s=s, m=m))
        except SchemeParameterError:
            continue
    return accepted


def plain_sum(vectors):
    out = vectors[0].copy()
    for v in vectors[1:]:
        out += v
    return out


def sum_and_write(vectors, out):
    """The bandwidth floor of any decode into ``out`` (m x L): read every message once, write d floats once."""
    out[...] = plain_sum(vectors)


def torch_plain_sum(vectors):
    out = vectors[0].clone()
    for v in vectors[1:]:
        out.add_(v)
    return out


def ratio(repeats: int, reference, candidate) -> tuple[float, float, float]:
    """Median seconds of reference() and candidate(), timed alternately after a warm-up, and their ratio.

    Alternating the two keeps slow drifts of a shared machine out of the ratio.
    """
    reference(), candidate()  # the first decode computes and caches the weights
    times: dict[int, list[float]] = {0: [], 1: []}
    for _ in range(repeats):
        for which, fn in enumerate((reference, candidate)):
            start = CLOCK[0]()
            fn()
            times[which].append(CLOCK[0]() - start)
    base, cand = statistics.median(times[0]), statistics.median(times[1])
    return base, cand, cand / base


def check_equal(scheme, received, d: int) -> None:
    """The benchmarked decode gives the float64 reference W @ messages (float32 rounding allowed)."""
    ids = [scheme.messages(w)[0] for w in received]
    dec = scheme.decoding(ids)
    block = np.stack([received[int(scheme.message_owner[i])][0] for i in dec.message_ids]).astype(np.float64)
    expected = (dec.weights @ block).reshape(-1)[:d]
    got = scheme.decode(received, d=d).astype(np.float64)
    scale = np.abs(dec.weights).sum(axis=1).max() * np.abs(block).max()
    assert np.abs(got - expected).max() <= 1e-5 * scale, f"{scheme!r}: decode differs from W @ messages"


RATIOS = ("numpy", "numpy out=", "floor out=", "floor/sum", "torch", "torch out=")


def time_one(scheme, pool: list, d: int, repeats: int, with_torch: bool) -> tuple[str, dict[str, float]]:
    """One table row: the plain sum's and the decode's times, and the ratios (fresh output, then ``out=``)."""
    length = -(-d // scheme.m)
    s = scheme.s
    received = {w: [pool[w][:length]] for w in range(s, scheme.n)}  # the first s workers straggle
    vectors = [v[0] for v in received.values()]
    check_equal(scheme, received, d)
    reference = functools.partial(plain_sum, vectors)
    base, dec, fresh = ratio(repeats, reference, functools.partial(scheme.decode, received, d))
    buffer = np.empty(d, dtype=np.float32)
    into = ratio(repeats, reference, functools.partial(scheme.decode, received, d, out=buffer))[2]
    floor = functools.partial(sum_and_write, vectors, np.empty((scheme.m, length), dtype=np.float32))
    floor_time, _, above_floor = ratio(repeats, floor, functools.partial(scheme.decode, received, d, out=buffer))
    found = [
        fresh,
        into,
        above_floor,
        floor_time / base,
        *(torch_ratios(scheme, received, d, repeats) if with_torch else ()),
    ]
    row = f"{scheme.n:>3} {s:>3} {scheme.m:>2} {scheme.name:>10} {len(vectors):>3}"
    row += f" {base * 1e3:>8.1f} {dec * 1e3:>10.1f} " + " ".join(f"{r:>6.2f}" for r in found)
    return row, dict(zip(RATIOS, found, strict=False))


def summary(rows: dict[int, list[dict[str, float]]]) -> list[str]:
    """Per m and column: the median and the largest ratio over the timed rows."""
    lines = ["summary (median / largest ratio over the rows):"]
    for m, found in sorted(rows.items()):
        cells = [f"{c} {statistics.median(r[c] for r in found):.2f} / {max(r[c] for r in found):.2f}" for c in found[0]]
        lines.append(f"  m = {m} ({len(found)} rows): " + ", ".join(cells))
    return lines


def torch_ratios(scheme, received, d: int, repeats: int) -> tuple[float, float]:
    """The torch (CPU) decode against a torch plain sum: into a fresh tensor, and with ``out=``."""
    import torch

    tensors = {w: [torch.from_numpy(v[0])] for w, v in received.items()}
    reference = functools.partial(torch_plain_sum, [v[0] for v in tensors.values()])
    fresh = ratio(repeats, reference, functools.partial(scheme.decode, tensors, d))[2]
    buffer = torch.empty(d, dtype=torch.float32)
    into = ratio(repeats, reference, functools.partial(scheme.decode, tensors, d, out=buffer))[2]
    return fresh, into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=11_200_000, help="gradient length (float32)")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--m", type=int, nargs="+", default=[1, 2, 3], help="slices per gradient")
    parser.add_argument("--n", type=int, nargs="+", default=[12, 48], help="workers")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and torch threads (0: leave them as they are)")
    parser.add_argument("--torch", action="store_true", help="also time torch tensors (CPU)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help="wall clock or process CPU time")
    args = parser.parse_args()
    CLOCK[0] = CLOCKS[args.clock]
    if args.torch and args.threads:
        import torch

        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    setup = f"median of {args.repeats}, {args.threads} thread(s), {args.clock} clock"
    print(f"d={args.d} float32, {setup}; ratio = decode / plain sum")
    print(f"{'':>37} {'ratio':>6} {'ratio':>6} {'floor':>6} {'floor/':>6} {'torch':>6} {'torch':>6}")
    columns = ("n", 3), ("s", 3), ("m", 2), ("scheme", 10), ("r", 3), ("sum ms", 8), ("decode ms", 10)
    heads = f"{'':>6} {'out=':>6} {'out=':>6} {'sum':>6} {'':>6} {'out=':>6}"
    print(" ".join(f"{name:>{width}}" for name, width in columns), heads)
    limits = threadpool_limits(limits=args.threads, user_api="blas") if args.threads else contextlib.nullcontext()
    rows: dict[int, list[dict[str, float]]] = {}
    with limits:
        for n in args.n:
            pool = [rng.standard_normal(args.d, dtype=np.float32) for _ in range(n)]
            for m in args.m:
                for s in range(1, n // 4 + 1):
                    for scheme in schemes_for(n, s, m):
                        text, found = time_one(scheme, pool, args.d, args.repeats, args.torch)
                        rows.setdefault(m, []).append(found)
                        print(text, flush=True)
    print("\n".join(summary(rows)))


if __name__ == "__main__":
    main()
