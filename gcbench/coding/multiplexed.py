"""Multiplexed sequential gradient coding (M-SGC; Krishnan, Ebrahimi and Khisti, ICLR 2023): each round a worker
runs W - 1 + B mini-tasks, each for a different job.

A job's mini-batch is split in two. D1, n (W - 1) chunks, is uncoded: worker w computes its chunk m of job t in
round t + m (m < W - 1). D2 is B groups, each coded with an (n, lambda) gradient code: worker w computes its task
of group g of job t in round t + W - 1 + g, unless some of its D1 chunks of job t were lost, when it redoes the
first missing one instead. Job t is decoded at the end of round t + T, T = W - 2 + B, once every worker's W - 1
chunks are in and each group has n - lambda results. Mini-tasks are equal work: a chunk is lambda + 1 partitions
and a group's task lambda + 1 of its n, so a job has k = n ((W - 1)(lambda + 1) + B) partitions and a round
costs (W - 1 + B)(lambda + 1) of them. ``MultiplexedRounds`` is that bookkeeping (shared by the master,
gcbench/master/sequential.py, and the authors'-rules replay, gcbench/testing/sgc_replay.py). docs/coding.md, "Sequential
gradient coding", has the exact definitions and where they differ from the paper.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.coding._base import Layout, Scheme
from gcbench.coding._errors import SchemeParameterError, check_int
from gcbench.coding._registry import make_scheme
from gcbench.coding.sequential import IDLE, LOST, bursty_fit

D1 = 0  # a mini-task's entry: a D1 chunk (its own slot's, or a redo in a D2 slot); g + 1: D2 group g's task


class MultiplexedRounds:
    """M-SGC's state over ``rounds`` rounds: ``work[w, m, r]`` is what worker w's mini-task m of round r (serving
    job r - m) was (D1, a D2 group g + 1, LOST where it straggled, IDLE before job 0); ``redo[w, g, r]`` the D1
    chunk its D2 slot g redid (-1: none)."""

    def __init__(self, n: int, B: int, W: int, lam: int, rounds: int) -> None:
        self.n, self.B, self.W, self.lam = n, B, W, lam
        self.d1, self.slots, self.delay = W - 1, W - 1 + B, W - 2 + B
        self.work = np.full((n, self.slots, rounds), IDLE, dtype=np.int32)
        self.redo = np.full((n, B, rounds), -1, dtype=np.int32)

    def begin(self, r: int) -> None:
        """Round r's mini-tasks: slot m serves job r - m; a D2 slot redoes a D1 chunk its worker still lacks."""
        for m in range(min(self.slots, r + 1)):
            if m < self.d1:
                self.work[:, m, r] = D1
                continue
            done = self.chunks(r - m, r)
            whole = done.all(axis=1)
            self.work[:, m, r] = np.where(whole, m - self.d1 + 1, D1)
            self.redo[:, m - self.d1, r] = np.where(whole, -1, np.argmin(done, axis=1))

    def chunks(self, job: int, r: int) -> np.ndarray:
        """(workers x W - 1): which of its D1 chunks of ``job`` each worker's results before round r hold."""
        done = np.zeros((self.n, self.d1), dtype=bool)
        for m in range(self.slots):
            rnd = job + m
            if rnd >= r:
                break
            ok = self.work[:, m, rnd] == D1
            if m < self.d1:
                done[ok, m] = True
            else:
                done[ok, self.redo[ok, m - self.d1, rnd]] = True
        return done

    def due(self, r: int) -> int | None:
        """The job decoded at the end of round r (None in the first T rounds)."""
        return r - self.delay if r >= self.delay else None

    def diagonal(self, job: int, r: int | None = None, late: np.ndarray | None = None) -> np.ndarray:
        """(workers x slots): the mini-tasks of ``job`` up to round r (IDLE past it), round r's ``late`` lost."""
        rounds = self.work.shape[2]
        last = rounds - 1 if r is None else r
        out = np.full((self.n, self.slots), IDLE, dtype=np.int32)
        for m in range(self.slots):
            if 0 <= job + m <= min(last, rounds - 1):
                out[:, m] = self.work[:, m, job + m]
        if late is not None and r is not None and 0 <= r - job < self.slots:
            out[late, r - job] = LOST
        return out

    def decodes(self, job: int, r: int | None = None, late: np.ndarray | None = None) -> bool:
        """Every worker holds its W - 1 chunks of ``job`` and each D2 group has n - lambda results."""
        seen = self.diagonal(job, r, late)
        if ((seen == D1).sum(axis=1) < self.d1).any():
            return False
        groups = (seen.ravel()[:, None] == np.arange(1, self.B + 1)).sum(axis=0)
        return bool((groups >= self.n - self.lam).all())

    def fits(self, r: int, late: np.ndarray) -> bool:
        """Round r ending with ``late`` lost keeps the pattern inside the (B, W, lambda) model (every past round
        counts, as in the authors' code; read on the window, rounds r - W + 1 to r)."""
        first = max(0, r + 1 - self.W)
        lost = self.work[:, 0, first:r] == LOST
        return bursty_fit(lost, r - first, late, self.B, self.W, self.lam, np.ones(r - first, dtype=bool))

    def can_end(self, r: int, late: np.ndarray) -> bool:
        """Round r may end with ``late`` lost: the pattern fits the model and the job due decodes."""
        due = self.due(r)
        return self.fits(r, late) and (due is None or self.decodes(due, r, late))

    def end(self, r: int, late: np.ndarray) -> None:
        """Round r ended: the ``late`` workers' mini-tasks are lost."""
        self.work[late, :, r] = LOST

    def tasks(self, worker: int, r: int) -> tuple[tuple[int, int], ...]:
        """(job, index among the worker's messages) of each of its mini-tasks in round r, slot by slot."""
        out = []
        for m in range(min(self.slots, r + 1)):
            token = int(self.work[worker, m, r])
            if m < self.d1:
                out.append((r - m, m))
            elif token > 0:
                out.append((r - m, self.d1 + token - 1))
            else:
                out.append((r - m, int(self.redo[worker, m - self.d1, r])))
        return tuple(out)

    def serves(self, worker: int, r: int) -> int:
        """The job of worker's first mini-task in round r (LOST where round r ended without it)."""
        return LOST if self.work[worker, 0, r] == LOST else r


class MultiplexedSGC(Scheme):
    """M-SGC: each round a worker runs W - 1 + B mini-tasks for as many jobs: W - 1 uncoded D1 chunks and B coded
    D2 tasks (a worker missing a D1 chunk of that job redoes it instead); job t is decoded W - 2 + B rounds after
    it was dispatched. Parameters: ``burst`` (B), ``window`` (W), ``lam`` (lambda), ``code`` (the D2 groups' code).

    - tolerates: (B, W, lambda)-bursty stragglers: at most lambda distinct in any W consecutive rounds
    - load: (W - 1 + B)(lambda + 1) of k = n((W - 1)(lambda + 1) + B) partitions a round
    - upload: W - 1 + B messages per worker a round, each 1 gradient
    - decoding: the D1 chunks summed, each D2 group's n - lambda weights (``code``), W - 2 + B rounds later
    - reference: Krishnan, Ebrahimi & Khisti, ICLR 2023 (multiplexed SGC)
    """

    name = "m_sgc"
    reference = "Krishnan, Ebrahimi & Khisti, ICLR 2023"
    facts = {"tolerates": "(B, W, lambda)-bursty", "load": "(W-1+B)(lambda+1)/k", "upload": "W - 1 + B",
             "decoding": "D1 summed, D2 groups n - lambda weights, W - 2 + B rounds later"}  # fmt: skip
    defaults = {"burst": 1, "window": 2, "lam": 1, "code": "cyclic_mds"}
    sequential = True
    streams_messages = False  # a round's mini-tasks come back together, as in the authors' model
    CODES = ("cyclic_mds", "cr", "fr")  # exact codes whose workers hold lambda + 1 partitions and send one message

    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        return [(lam, {"burst": B, "window": W, "lam": lam})
                for B in (1, 2) for W in (B + 1, B + 2) for lam in range(1, n)]  # fmt: skip

    @classmethod
    def search_space(cls, n: int, max_burst: int, max_window: int):
        """The (B, W, lambda) a parameter search tries (the paper's: B < W, bounded; lambda < n)."""
        return (
            (B, W, lam)
            for lam in range(1, n)
            for W in range(2, max_window + 1)
            for B in range(1, min(W, max_burst + 1))
        )

    @classmethod
    def derived_s(cls, params) -> int | None:
        """s = lambda, the stragglers each D2 group tolerates: a variant that leaves s out gets it."""
        lam = {**cls.defaults, **{key: value for key, value in params.items() if value is not None}}["lam"]
        return lam if isinstance(lam, int) and not isinstance(lam, bool) else None

    def _check_parameters(self) -> None:
        B = check_int(self.name, "burst", self.params["burst"], 1, 2**31)
        W = check_int(self.name, "window", self.params["window"], B + 1, 2**31)
        if self.n < 2:
            raise SchemeParameterError("m_sgc needs at least 2 workers (its coded groups are codes with lam >= 1).")
        lam = check_int(self.name, "lam", self.params["lam"], 1, self.n - 1)
        if self.params["code"] not in self.CODES:
            raise SchemeParameterError(
                f"m_sgc's code must be one of {', '.join(self.CODES)}; got {self.params['code']!r}."
            )
        if self.s != lam:
            raise SchemeParameterError(
                f"m_sgc's s is lam, the stragglers each of its coded groups tolerates, so its s must be {lam} "
                f"(got {self.s})."
            )
        self.k = self.n * ((W - 1) * (lam + 1) + B)

    @property
    def construction(self) -> str:
        p = self.params
        return (
            f"W-1={p['window'] - 1} uncoded chunks and B={p['burst']} groups of {p['code']}'s code with s={self.s} "
            f"per job, decoded {self.delay} round(s) after dispatch; tolerates (B={p['burst']}, W={p['window']}, "
            f"lambda={p['lam']})-bursty stragglers (Krishnan et al., ICLR 2023)"
        )

    @property
    def tolerance(self) -> int:
        """Whole workers a job's messages tolerate: none. A worker's messages for one job come from W - 1 + B
        rounds, and its guarantee is the bursty model across them (tests/test_multiplexed.py checks it)."""
        return 0

    def _decodable_workers(self, workers: frozenset[int]) -> bool | None:
        return len(workers) == self.n  # every worker's D1 chunks are needed

    @property
    def delay(self) -> int:
        """Rounds from a job's dispatch to its decode (T = W - 2 + B)."""
        return self.params["window"] - 2 + self.params["burst"]

    def rounds(self, count: int) -> MultiplexedRounds:
        """Fresh round bookkeeping for a run of ``count`` rounds."""
        p = self.params
        return MultiplexedRounds(self.n, p["burst"], p["window"], p["lam"], count)

    def encode_message(self, worker: int, index: int, partition_grads) -> np.ndarray:
        """The worker's ``index``-th message alone, from a {partition: gradient} mapping of its partitions."""
        coefficients = self.coefficients[self.messages(worker)[index]][0]
        parts = self.message_partitions(worker, index)
        return sum(float(coefficients[j]) * np.asarray(partition_grads[j]) for j in parts)

    def message_partitions(self, worker: int, index: int) -> tuple[int, ...]:
        """The partitions the worker's ``index``-th message combines (what that mini-task computes)."""
        coefficients = self.coefficients[self.messages(worker)[index]][0]
        return tuple(j for j in self.partitions(worker) if coefficients[j] != 0.0)

    def _layout(self) -> Layout:
        n, B, W, lam = self.n, self.params["burst"], self.params["window"], self.params["lam"]
        try:
            code = make_scheme(self.params["code"], n=n, s=lam)
        except SchemeParameterError as error:
            raise SchemeParameterError(f"m_sgc's coded groups cannot use {self.params['code']} here: {error}") from None
        chunk, d1_total = lam + 1, n * (W - 1) * (lam + 1)
        partitions, coefficients = [], []
        for w in range(n):
            held, rows = [], []
            for m in range(W - 1):
                first = (w * (W - 1) + m) * chunk
                row = np.zeros((1, self.k))
                row[0, first : first + chunk] = 1.0
                held += range(first, first + chunk)
                rows.append(row)
            for g in range(B):
                offset = d1_total + g * n
                row = np.zeros((1, self.k))
                row[0, offset : offset + n] = code.coefficients[code.messages(w)[0]][0]
                held += [offset + j for j in code.partitions(w)]
                rows.append(row)
            partitions.append(tuple(held))
            coefficients.append(tuple(rows))
        return Layout(tuple(partitions), tuple(coefficients))
