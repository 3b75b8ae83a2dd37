"""Schemes whose workers send several messages, so a slow worker's partial work counts.

``partial_cr`` follows Tandon et al.'s partial-straggler scheme: an uncoded first part every worker sends
early, then a CR-coded message. ``chunked_cr`` follows Ramamoorthy, Meng and Girimaji (NeurIPS 2024): one
message after every chunk (partition) a worker finishes. The exact definitions, the message sets that decode
and what differs from the papers: docs/coding.md, "Partial stragglers".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import check_int
from gcbench.coding._polynomial import chebyshev_mds
from gcbench.coding.cyclic_repetition import cyclic_support, random_null_space_rows


class PartialCyclicRepetition(Scheme):
    """Worker i holds partitions i..i+s (mod n); it sends partition i's gradient, then CR's coded message.

    - tolerates: any s stragglers (their second messages: CR); every worker's first message alone decodes
    - load: s + 1 partitions per worker
    - upload: 2 messages of 1 gradient per worker
    - decoding: all n first messages (a plain sum), any n - s second messages (CR's weights), or any mix
      the rank admits; refused when CR's code is ill-conditioned
    - reference: Tandon et al., ICML 2017, partial stragglers (adapted: see docs/coding.md)
    """

    name = "partial_cr"
    reference = "Tandon et al., ICML 2017 (partial stragglers)"
    slow_every_straggler_set = True  # seconds in the conformance suite: the slow lane checks every set
    facts = {
        "tolerates": "any s; or every worker's first partition",
        "load": "s + 1",
        "upload": "2 x 1",
        "decoding": "first messages summed, or CR's weights",
    }
    defaults = {"seed": 0}
    hypothesis_ranges = {"seed": (0, 2**32)}
    hypothesis_max_n = 10  # construction scans every straggler set: kept small for CI
    checks_conditioning = True

    def _check_parameters(self) -> None:
        check_int(self.name, "seed", self.params["seed"], 0, 2**63 - 1)

    @property
    def alternatives(self) -> str:
        return "try another seed, or chunked_cr, whose decoding is always well conditioned"

    def _layout(self) -> Layout:
        b = random_null_space_rows(self.n, self.s, self.params["seed"])
        coded = b / np.abs(b).max(axis=1, keepdims=True)
        eye = np.eye(self.n)
        messages = tuple((eye[[i]], coded[[i]]) for i in range(self.n))
        return Layout(cyclic_support(self.n, self.s + 1), messages)

    def _structural_verdict(self, key: tuple[int, ...]) -> bool | None:
        """True for the two claimed kinds of set (every first message; n - s second messages); else the rank.

        Overrides the base's whole-worker verdict: message 2i is worker i's first, 2i + 1 its second."""
        firsts = sum(1 for mid in key if mid % 2 == 0)
        seconds = len(key) - firsts
        if firsts == self.n or seconds >= self.n - self.s:
            return True
        return None


class ChunkedCyclicRepetition(Scheme):
    """Worker i holds chunks i..i+s+m-1 (mod n) and sends a message of length d/m after each chunk it computes.

    - tolerates: any s stragglers (needs s + m <= n); any partial work in which every chunk arrived m times
    - load: s + m partitions per worker
    - upload: s + m messages of 1/m gradient per worker
    - decoding: per chunk, an m x m solve (Chebyshev-Vandermonde rows; for m = 1 the first copy)
    - reference: Ramamoorthy, Meng, Girimaji, "Leveraging partial stragglers within gradient coding",
      NeurIPS 2024 (in their spirit: see docs/coding.md)
    """

    name = "chunked_cr"
    reference = "Ramamoorthy, Meng, Girimaji, NeurIPS 2024"
    slow_every_straggler_set = True  # seconds in the conformance suite: the slow lane checks every set
    slow_every_responder_set = True  # minutes: up to 49 messages per set, each checked by rank
    facts = {
        "tolerates": "any s; s + m <= n; partial work",
        "load": "s + m",
        "upload": "(s + m) x 1/m",
        "decoding": "m x m solve per chunk",
    }
    defaults = {"m": 2}
    hypothesis_max_n = 8  # n messages x (s + m) rows to scan: kept small for CI
    checks_conditioning = True

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(s, {"m": m}) for s in range(n) for m in range(1, n - s + 1)]

    def _check_parameters(self) -> None:
        check_int(self.name, "m", self.m, 1, self.n - self.s, f"s + m must be at most n={self.n}")

    @property
    def alternatives(self) -> str:
        return "use a smaller s + m"

    def _layout(self) -> Layout:
        width = self.s + self.m
        code = chebyshev_mds(width, self.m)
        code = code / np.abs(code).max(axis=1, keepdims=True)
        messages = []
        for held in cyclic_support(self.n, width):
            own = []
            for offset, chunk in enumerate(held):
                c = np.zeros((self.m, self.k))  # the chunk's holder at offset o (worker j - o) codes it with row o
                c[:, chunk] = code[offset]
                own.append(c)
            messages.append(tuple(own))
        return Layout(cyclic_support(self.n, width), tuple(messages))

    def _structural_verdict(self, key: tuple[int, ...]) -> bool | None:
        """Decodable exactly when every chunk arrived in m messages (any m rows of the code are independent).

        Overrides the base's whole-worker verdict: each message codes one chunk's m slices."""
        width = self.s + self.m
        copies = np.zeros(self.n, dtype=np.int64)
        for mid in key:
            worker, offset = divmod(mid, width)
            copies[(worker + offset) % self.n] += 1
        return bool((copies >= self.m).all())
