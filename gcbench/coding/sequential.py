"""Selective-repeat sequential gradient coding (Krishnan, Ebrahimi and Khisti, ICLR 2023): codes across rounds.

Round t dispatches job t: each worker computes its task of an (n, s') gradient code on job t's partitions. Job t
is decoded at the end of round t + B, from the n - s' task results for it received in rounds t and t + B: in
round t + B, where more than s' of job t's round-t results are missing, that many minus s' of those workers (the
lowest-numbered) repeat their job-t task instead of starting job t + B. A round's stragglers are lost; the
design guarantees every job decodes when the stragglers follow the (B, W, lambda)-bursty model, with
s' = ceil(B lambda / (W - 1 + B)). ``SelectiveRepeatRounds`` is that bookkeeping, one round at a time: the
master (gcbench/master/sequential.py) asks it when a round may end, and gcbench/testing/sgc_replay.py replays delay
matrices through it under the authors' code's rules. docs/coding.md, "Sequential gradient coding", has the
exact definitions and where they differ from the paper.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import SchemeParameterError, check_int
from gcbench.coding._registry import make_scheme

IDLE, LOST = -2, -1  # a worker's entry in a round: the job its task served, LOST (it straggled), IDLE (no task)


def tolerated(B: int, W: int, lam: int) -> int:
    """s' = ceil(B lambda / (W - 1 + B)): the stragglers per job the per-round code tolerates."""
    return math.ceil(B * lam / (W - 1 + B))


def sr_sgc_parameters(n: int, max_burst: int, max_window: int):
    """Every admissible (B, W, lambda) of SR-SGC for n workers with B <= ``max_burst`` and W <= ``max_window``:
    lambda in 1..n, W = B + 1, 2B + 1, ... (the paper's search, Krishnan et al., ICLR 2023)."""
    for lam in range(1, n + 1):
        for B in range(1, max_burst + 1):
            yield from ((B, W, lam) for W in range(B + 1, max_window + 1, B))


def bursty_fit(lost: np.ndarray, r: int, late: np.ndarray, B: int, W: int, lam: int, counted: np.ndarray) -> bool:
    """Whether round r's stragglers ``late`` fit the (B, W, lambda)-bursty model: over the last W rounds (this one
    included) at most lambda distinct workers straggled, and none straggling now straggled in rounds W - 1 to B
    before this one. ``lost`` (workers x rounds) marks who straggled in past rounds, ``counted`` (rounds) which
    past rounds count."""
    first = max(0, r + 1 - W)
    past = lost[:, first:r] & counted[first:r]
    if int((past.any(axis=1) | late).sum()) > lam:
        return False
    recent = lost[:, first : max(0, r + 1 - B)] & counted[first : max(0, r + 1 - B)]
    return not (recent.any(axis=1) & late).any()


class SelectiveRepeatRounds:
    """SR-SGC's state over ``rounds`` rounds: ``served[w, r]`` is the job worker w's round-r task served (LOST
    where it straggled)."""

    def __init__(self, n: int, s: int, B: int, W: int, lam: int, rounds: int) -> None:
        self.n, self.s, self.B, self.W, self.lam = n, s, B, W, lam
        self.served = np.full((n, rounds), IDLE, dtype=np.int32)  # (4 bytes a cell: runs reach 10^8 cells)

    def begin(self, r: int) -> np.ndarray:
        """Round r's tasks: job r, except that the workers job r - B still needs repeat their task for it."""
        tasks, due = np.full(self.n, r), r - self.B
        if due >= 0:
            missing = np.flatnonzero(self.served[:, due] != due)
            tasks[missing[: max(0, missing.size - self.s)]] = due
        self.served[:, r] = tasks
        return tasks

    def serves(self, worker: int, r: int) -> int:
        """The job worker's round-r task serves (LOST where round r ended without it)."""
        return int(self.served[worker, r])

    def tasks(self, worker: int, r: int) -> None:
        """None: a round's task is one, every message of the job ``serves`` names (M-SGC's are several)."""
        return None

    def due(self, r: int) -> int | None:
        """The job decoded at the end of round r (None in the first B rounds)."""
        return r - self.B if r >= self.B else None

    def fits(self, r: int, late: np.ndarray) -> bool:
        """Round r ending with ``late`` (workers) lost keeps the pattern inside the design's model (read on the
        model's window, rounds r - W + 1 to r: a round's cost does not grow with the rounds before it)."""
        first = max(0, r + 1 - self.W)
        lost = self.served[:, first:r] == LOST
        return bursty_fit(lost, r - first, late, self.B, self.W, self.lam, self.counted(r))

    def due_decodes(self, r: int, late: np.ndarray) -> bool:
        """The job due at round r's end decodes if the ``late`` workers' round-r results are lost."""
        due = self.due(r)
        if due is None:
            return True
        return self.results_for(due, r, late) >= self.n - self.s

    def results_for(self, job: int, r: int, late: np.ndarray | None = None) -> int:
        """Task results for ``job`` received in its rounds up to round r (where ``late`` are lost in round r)."""
        count = 0
        for rnd in (job, job + self.B):
            if rnd > r:
                break
            got = self.served[:, rnd] == job
            if rnd == r and late is not None:
                got &= ~late
            count += int(got.sum())
        return count

    def can_end(self, r: int, late: np.ndarray) -> bool:
        """Round r may end with ``late`` lost: the pattern fits the model and the due job decodes."""
        return self.fits(r, late) and self.due_decodes(r, late)

    def end(self, r: int, late: np.ndarray) -> None:
        """Round r ended: the ``late`` workers' results are lost."""
        self.served[late, r] = LOST

    def counted(self, r: int) -> np.ndarray:
        """Which past rounds of round r's window (r - W + 1 to r - 1) count against the model: a round in which
        every worker ran its own round's task or straggled, with at most s' stragglers, does not (the authors'
        code)."""
        first = max(0, r + 1 - self.W)
        served = self.served[:, first:r]
        own = (served == np.arange(first, r)) | (served == LOST)
        few = (served == LOST).sum(axis=0) <= self.s
        return ~(own.all(axis=0) & few)


class SelectiveRepeatSGC(Scheme):
    """SR-SGC: each round a worker computes its task of an (n, s') code for one job, the current one or, where
    that job's results fell short, the one B rounds back; job t is decoded B rounds after it was dispatched.
    Parameters: ``burst`` (B), ``window`` (W), ``lam`` (lambda), ``code`` (the per-job code).

    - tolerates: (B, W, lambda)-bursty stragglers: at most lambda distinct in any W consecutive rounds
    - load: s' + 1 partitions per worker, s' = ceil(B lambda / (W - 1 + B))
    - upload: 1 gradient per worker
    - decoding: the per-job code's n - s' weights (``code``), B rounds after dispatch
    - reference: Krishnan, Ebrahimi and Khisti, ICLR 2023 (selective-repeat SGC)
    """

    name = "sr_sgc"
    reference = "Krishnan, Ebrahimi & Khisti, ICLR 2023"
    facts = {"tolerates": "(B, W, lambda)-bursty", "load": "s' + 1", "upload": "1",
             "decoding": "n - s' weights, B rounds later"}  # fmt: skip
    defaults = {"burst": 1, "window": 2, "lam": 1, "code": "cyclic_mds"}
    sequential = True
    CODES = ("cyclic_mds", "cr", "fr")  # exact codes whose workers hold s' + 1 partitions and send one message

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        found = []
        for B in (1, 2):
            for W in (B + 1, 2 * B + 1):
                for lam in range(1, n + 1):
                    s = tolerated(B, W, lam)
                    if s < n:
                        found.append((s, {"burst": B, "window": W, "lam": lam}))
        return found

    @classmethod
    def search_space(cls, n: int, max_burst: int, max_window: int):
        """The (B, W, lambda) a parameter search tries (the paper's, bounded; lambda < n)."""
        return ((B, W, lam) for B, W, lam in sr_sgc_parameters(n, max_burst, max_window) if lam < n)

    @classmethod
    def derived_s(cls, params) -> int | None:
        """s' = ceil(B lambda / (W - 1 + B)): a variant that leaves s out gets it."""
        given = {**cls.defaults, **{key: value for key, value in params.items() if value is not None}}
        B, W, lam = given["burst"], given["window"], given["lam"]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (B, W, lam)) or B < 1 or W <= B:
            return None
        return tolerated(B, W, lam)

    def _check_parameters(self) -> None:
        B = check_int(self.name, "burst", self.params["burst"], 1, 2**31)
        W = check_int(self.name, "window", self.params["window"], B + 1, 2**31)
        lam = check_int(self.name, "lam", self.params["lam"], 1, self.n)
        if (W - 1) % B:
            raise SchemeParameterError(f"sr_sgc needs window - 1 to be a multiple of burst: window={W}, burst={B}.")
        if self.params["code"] not in self.CODES:
            raise SchemeParameterError(
                f"sr_sgc's code must be one of {', '.join(self.CODES)}; got {self.params['code']!r}."
            )
        want = tolerated(B, W, lam)
        if self.s != want:
            raise SchemeParameterError(
                f"sr_sgc with burst={B}, window={W}, lam={lam} tolerates s' = ceil(burst lam / (window - 1 + burst)) "
                f"= {want} straggler{'s' if want != 1 else ''} per job, so its s must be {want} (got {self.s})."
            )

    @property
    def construction(self) -> str:
        p = self.params
        return (
            f"per job, {p['code']}'s code with s'={self.s}, decoded {p['burst']} round(s) after dispatch; tolerates "
            f"(B={p['burst']}, W={p['window']}, lambda={p['lam']})-bursty stragglers (Krishnan et al., ICLR 2023)"
        )

    @property
    def delay(self) -> int:
        """Rounds from a job's dispatch to its decode (T = B)."""
        return self.params["burst"]

    def rounds(self, count: int) -> SelectiveRepeatRounds:
        """Fresh round bookkeeping for a run of ``count`` rounds."""
        p = self.params
        return SelectiveRepeatRounds(self.n, self.s, p["burst"], p["window"], p["lam"], count)

    def _layout(self) -> Layout:
        code = make_scheme(self.params["code"], n=self.n, s=self.s)
        per_worker = tuple(tuple(code.coefficients[i] for i in code.messages(w)) for w in range(self.n))
        return Layout(tuple(code.partitions(w) for w in range(self.n)), per_worker)
