"""Round replay under the rules of Sequential-Gradient-Coding-2 (Krishnan, Ebrahimi and Khisti, "Sequential
Gradient Coding for Straggler Mitigation", ICLR 2023; repository mamaj/Sequential-Gradient-Coding-2), the
comparison docs/coding.md, "Sequential gradient coding", describes.

Why it is not gcbench's model of these schemes, and why it lives with the reference implementations: it
reproduces the authors' table (benchmarks/sgc_reproduction.py), so it keeps their rules where gcbench's differ:
their round-ending rule (a multiple of the round's fastest delay), their load model on a delay matrix measured at
another load (``at_design_load``), their design names (``DESIGNS``) and their M-SGC load formula, which admits
lam = n where gcbench's m_sgc does not (otherwise it equals the scheme's ``step_load x partition_share / n``,
tests/test_multiplexed.py). gcbench's model is the coding package's schemes run by the master
(gcbench/master/sequential.py); the round bookkeeping is shared (this replay steps the coding package's
``SelectiveRepeatRounds`` and ``MultiplexedRounds``), and tests/test_sequential.py and tests/test_multiplexed.py
hold the master to this replay where the rules coincide. The classes are named ``...Replay`` so that none
shadows a scheme's.

Every round each worker runs one task (a job's share, or for multiplexed SGC several mini-tasks) and reports a
delay, read from a (workers x rounds) delay matrix (a delay profile at the design's load). The master waits
(1 + mu) times the round's fastest delay: the workers slower than that are the round's stragglers, and if the
pattern they make fits the design's straggler model the round ends then (at the slowest delay if that is sooner)
and their results are lost; otherwise the master waits for every worker (a *wait*). A job is decoded a fixed delay
T after its round. The total runtime of ``jobs`` jobs is the sum of the durations of the ``jobs + T`` rounds.

- ``UncodedReplay``: every round waits for every worker (T = 0).
- ``GradientCodeReplay(s)``: a round ends early when it has fewer than s stragglers (the repository's rule), or at most
  s with ``tandon=True`` (Tandon et al.'s: any n - s results decode). Load (s + 1)/n, T = 0.
- ``SelectiveRepeatReplay(B, W, lam)`` (SR-SGC): s' = ceil(B lam / (W - 1 + B)), load (s' + 1)/n, T = B. Job t is
  decodable from n - s' results for it received in rounds t and t + B; in round t + B the workers whose round-t
  result for job t is missing repeat that task, as many of them as exceed s' (the lowest-numbered), instead of
  starting job t + B. In the last B rounds a round whose job is already decodable is skipped (duration 0).
- ``MultiplexedReplay(B, W, lam)`` (M-SGC): W - 1 + B mini-tasks a round, mini-task m of round r serving job r - m:
  the first W - 1 uncoded ("D1"), the last B coded ("D2", one group each), a worker switching a D2 slot back to
  D1 work where its D1 mini-tasks for that job are not all in; T = W - 2 + B. Job t decodes when every worker
  has all W - 1 of its D1 mini-tasks and each D2 group has n - lam results.

The (B, W, lam)-bursty model a pattern must fit: over the last W rounds (this one included) at most lam distinct
workers straggled, and no worker straggling now straggled in the rounds W - 1 to B before this one. For SR-SGC a
past round counts only where some worker repeated a task in it or more than s' workers straggled in it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gcbench.coding.multiplexed import MultiplexedRounds
from gcbench.coding.sequential import SelectiveRepeatRounds, sr_sgc_parameters, tolerated


@dataclass(frozen=True)
class Replay:
    durations: np.ndarray  # (rounds,) seconds
    waits: int  # rounds whose stragglers broke the model, so the master waited for every worker
    state: np.ndarray | None = None  # what each worker's results served (a sequential design's: for its decoder)

    @property
    def runtime(self) -> float:
        return float(self.durations.sum())


def round_end(delays: np.ndarray, mu: float) -> tuple[float, np.ndarray]:
    """When the master stops waiting in a round with these delays, and who straggled (slower than that)."""
    wait = delays.min() * (1 + mu)
    return wait, delays > wait


def _round(state, r: int, delays: np.ndarray, mu: float) -> tuple[float, bool]:
    """Round ``r`` of a sequential design's bookkeeping ``state``: its duration, and whether its stragglers fit the
    design's model (else the master waited for every worker)."""
    state.begin(r)
    wait, late = round_end(delays, mu)
    fits = state.fits(r, late)
    if fits:
        state.end(r, late)
    return _finish(delays, wait, fits), fits


def _finish(delays: np.ndarray, wait: float, fits: bool) -> float:
    """A round's duration: the wait (or the slowest delay, if sooner) where the pattern fits, else the slowest."""
    return float(min(wait, delays.max())) if fits else float(delays.max())


class UncodedReplay:
    name = "uncoded"
    delay = 0

    def __init__(self) -> None:
        self.params: tuple = ()

    def load(self, n: int) -> float:
        return 1 / n

    def replay(self, delays: np.ndarray, jobs: int, mu: float) -> Replay:
        used = delays[:, :jobs]
        return Replay(used.max(axis=0).astype(float), jobs)


class GradientCodeReplay:
    name = "gc"
    delay = 0

    def __init__(self, s: int, tandon: bool = False) -> None:
        self.s, self.tandon, self.params = s, tandon, (s,)

    def load(self, n: int) -> float:
        return (self.s + 1) / n

    def replay(self, delays: np.ndarray, jobs: int, mu: float) -> Replay:
        durations, waits = np.empty(jobs), 0
        for r in range(jobs):
            column = delays[:, r]
            wait, late = round_end(column, mu)
            count = int(late.sum())
            fits = count <= self.s if self.tandon else count < self.s
            waits += not fits
            durations[r] = _finish(column, wait, fits)
        return Replay(durations, waits)


class SelectiveRepeatReplay:
    name = "sr_sgc"

    def __init__(self, B: int, W: int, lam: int) -> None:
        if B < 1 or W <= B or (W - 1) % B:
            raise ValueError(f"sr_sgc needs B >= 1 and W = B + 1 + a multiple of B, got B={B}, W={W}")
        self.B, self.W, self.lam, self.params = B, W, lam, (B, W, lam)
        self.s = tolerated(B, W, lam)
        self.delay = B

    def load(self, n: int) -> float:
        return (self.s + 1) / n

    def replay(self, delays: np.ndarray, jobs: int, mu: float) -> Replay:
        n, rounds = delays.shape[0], jobs + self.delay
        state = SelectiveRepeatRounds(n, self.s, self.B, self.W, self.lam, rounds)
        durations, waits = np.zeros(rounds), 0
        for r in range(rounds):
            due = state.due(r)
            if r >= jobs and state.results_for(due, r - 1) >= n - self.s:
                continue  # nothing left to compute for it: the round is skipped
            durations[r], fits = _round(state, r, delays[:, r], mu)
            waits += not fits
        return Replay(durations, waits, state.served)

    def decodable(self, served: np.ndarray, job: int) -> bool:
        """Job ``job`` decodes from the results ``served`` (workers x rounds) holds for it in its rounds."""
        state = SelectiveRepeatRounds(served.shape[0], self.s, self.B, self.W, self.lam, 0)
        state.served = served
        return state.results_for(job, job + self.B) >= served.shape[0] - self.s


class MultiplexedReplay:
    name = "m_sgc"

    def __init__(self, B: int, W: int, lam: int) -> None:
        if B < 1 or W < 2:
            raise ValueError(f"m_sgc needs B >= 1 and W >= 2, got B={B}, W={W}")
        self.B, self.W, self.lam, self.params = B, W, lam, (B, W, lam)
        self.slots = W - 1 + B
        self.delay = W - 2 + B

    def load(self, n: int) -> float:
        B, W, lam = self.B, self.W, self.lam
        if lam == n:
            return (W - 1 + B) / (n * (W - 1))
        return (lam + 1) * (W - 1 + B) / (n * (B + (W - 1) * (lam + 1)))

    def replay(self, delays: np.ndarray, jobs: int, mu: float) -> Replay:
        n, rounds = delays.shape[0], jobs + self.delay
        state = MultiplexedRounds(n, self.B, self.W, self.lam, rounds)
        durations, waits = np.zeros(rounds), 0
        for r in range(rounds):
            durations[r], fits = _round(state, r, delays[:, r], mu)
            waits += not fits
        return Replay(durations, waits, state.work)

    def decodable(self, work: np.ndarray, job: int) -> bool:
        """Job ``job`` decodes from the mini-task results ``work`` (workers x slots x rounds) holds for it."""
        state = MultiplexedRounds(work.shape[0], self.B, self.W, self.lam, 0)
        state.work = work
        return state.decodes(job)


class TandonGradientCodeReplay(GradientCodeReplay):
    """Gradient coding under Tandon et al.'s rule: a round with at most s stragglers ends early."""

    name = "gc_tandon"

    def __init__(self, s: int) -> None:
        super().__init__(s, tandon=True)


DESIGNS = {"uncoded": UncodedReplay, "gc": GradientCodeReplay, "gc_tandon": TandonGradientCodeReplay,
           "sr_sgc": SelectiveRepeatReplay, "m_sgc": MultiplexedReplay}  # fmt: skip


def parameters(design: str, n: int, jobs: int, max_delay: int):
    """Every admissible parameter tuple of a design the paper's search tries: s in 1..n for gradient coding;
    lam in 1..n with, for SR-SGC, B in 1..max_delay and W = B + 1, 2B + 1, ... up to ``jobs``; for M-SGC,
    W in 2..jobs - 1 and B in 1..W - 1 with W - 1 + B <= max_delay."""
    if design == "uncoded":
        yield ()
    elif design in ("gc", "gc_tandon"):
        yield from ((s,) for s in range(1, n + 1))
    elif design == "sr_sgc":
        yield from sr_sgc_parameters(n, max_delay, jobs)
    elif design == "m_sgc":
        for lam in range(1, n + 1):
            for W in range(2, jobs):
                yield from ((B, W, lam) for B in range(1, W) if W - 1 + B <= max_delay)
    else:
        raise ValueError(f"unknown design {design}")


def at_design_load(base: np.ndarray, load: float, base_load: float, base_compute: float) -> np.ndarray:
    """The repository's load model on a (workers x rounds) matrix of delays measured at ``base_load``."""
    return base + (load - base_load) * base_compute


def search(design: str, base: np.ndarray, jobs: int, mu: float, base_load: float, base_compute: float,
           max_delay: int | None = None) -> list[tuple[tuple, float, float, int]]:  # fmt: skip
    """(parameters, load, total runtime, waits) of every admissible parameter tuple of ``design`` on the delays
    ``base`` (workers x rounds, measured at ``base_load``), its load applied by the repository's model."""
    n, rounds = base.shape
    max_delay = rounds - jobs if max_delay is None else max_delay
    found = []
    for params in parameters(design, n, jobs, max_delay):
        model = DESIGNS[design](*params)
        load = model.load(n)
        replay = model.replay(at_design_load(base, load, base_load, base_compute), jobs, mu)
        found.append((params, load, replay.runtime, replay.waits))
    return found
