"""A sequential scheme's rounds as the synchronous master sees them (gcbench/coding/sequential.py).

The master runs a sequential scheme as it runs any synchronous one, one round per iteration, and asks the
variant's policy when to stop; only what "decodes" means changes. ``RoundCode`` stands for the scheme during
round t: its ``can_decode`` answers whether the round may end with the messages received so far (the workers not
in are lost: the pattern must fit the scheme's straggler model, and the job due this round must decode), so
``decodable`` ends a round as soon as it may, ``wait_all`` waits for every worker, and ``relative_deadline``
follows the authors' code; its ``decode_times`` answers the same for the vectorised engine, one round at a time.
Everything else it reads from the scheme.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np


class RoundCode:
    """The scheme of a sequential variant during one round: what the policies ask, answered by the rounds'
    bookkeeping."""

    def __init__(self, scheme, rounds: int) -> None:
        self.scheme, self.state, self.t = scheme, scheme.rounds(rounds), 0
        self.results: dict[int, list] = {}  # job -> the used results that served it, while it waits for its decode
        # M-SGC: job -> worker -> (message index, round result, mini-task) of each of its mini-tasks' results
        self._pieces: dict[int, dict[int, list]] = {}

    def __getattr__(self, name: str):
        return getattr(self.scheme, name)

    def begin(self, t: int) -> RoundCode:
        """Round t starts: its tasks are set (a worker may repeat an earlier job's task)."""
        self.t = t
        self.state.begin(t)
        return self

    def late(self, received) -> np.ndarray:
        """The workers none of whose messages are among ``received``."""
        late = np.ones(self.scheme.n, bool)
        late[self.scheme.message_owner[np.asarray(list(received), dtype=np.int64)]] = False
        return late

    def can_decode(self, received) -> bool:
        return self.state.can_end(self.t, self.late(received))

    def decode_times(self, arrivals: np.ndarray) -> np.ndarray:
        """When round t may end, given its messages' arrival times (one row: the round in progress): the first
        arrival after which the workers not yet in may be lost (inf if none). Ending is monotone in who is in
        (fewer lost fit the model, and leave more results for the job due), so a binary search finds it."""
        if arrivals.shape[0] != 1:
            raise ValueError("a sequential scheme's rounds depend on the rounds before them: one round at a time")
        times = arrivals[0]
        if self.state.can_end(self.t, np.ones(self.scheme.n, dtype=bool)):
            return np.array([0.0])  # the round needs no one's result (no job is due yet): it may end as it starts
        moments = np.unique(times[np.isfinite(times)])
        owner = self.scheme.message_owner
        lost = lambda moment: np.bincount(owner[times > moment], minlength=self.scheme.n) > 0  # noqa: E731
        low, high = 0, len(moments)  # the first moment at which the round may end lies in [low, high]
        while low < high:
            middle = (low + high) // 2
            if self.state.can_end(self.t, lost(moments[middle])):
                high = middle
            else:
                low = middle + 1
        return np.array([moments[low] if low < len(moments) else np.inf])

    def serves(self, worker: int, t: int) -> int:
        """The job worker's round-t task serves, its first mini-task's for M-SGC (negative where round t ended
        without it: LOST)."""
        return self.state.serves(worker, t)

    def tasks(self, worker: int, t: int) -> tuple[tuple[int, int], ...] | None:
        """Worker's mini-tasks in round t, (job, message index) each (M-SGC); None: one task, ``serves``'s job."""
        return self.state.tasks(worker, t)

    def collect(self, results: list) -> list | None:
        """Keep round t's used results by the job each served (a multiplexed result split into its mini-tasks'
        jobs); the results of the job due at its end (None in the first rounds, which decode no job)."""
        for result in results:
            tasks = self.tasks(result.job.worker, self.t)
            if tasks is None:
                self.results.setdefault(self.serves(result.job.worker, self.t), []).append(result)
                continue
            for i, (job, index) in enumerate(tasks):
                self._pieces.setdefault(job, {}).setdefault(result.job.worker, []).append((index, result, i))
        due = self.state.due(self.t)
        if due is None:
            return None
        if due in self._pieces:
            return [_one_job(pieces, self.scheme.messages_per_worker) for pieces in self._pieces.pop(due).values()]
        return self.results.pop(due)

    def stop_times(self, policy, arrivals: np.ndarray) -> np.ndarray:
        """The policy's stop times for rounds of known arrival times (rows: rounds 0, 1, ...), stepped one round
        at a time from this bookkeeping's start, each round's late results lost (a what-if replay)."""
        stops = np.empty(len(arrivals))
        for t, row in enumerate(arrivals):
            stops[t] = policy.stop_times(row[None, :], self.begin(t)).stop[0]
            if np.isfinite(stops[t]):
                self.end(np.flatnonzero(row <= stops[t]))
        return stops

    def end(self, received) -> float:
        """Round t ended with ``received``: the rest is lost. The staleness of the update it makes: the rounds
        between the decoded job's dispatch and now (NaN in the first rounds, which decode no job)."""
        self.state.end(self.t, self.late(received))
        due = self.state.due(self.t)
        return float("nan") if due is None else float(self.t - due)


def _one_job(pieces: list, messages: int):
    """One worker's mini-task results for one job (from several rounds) as one result: its messages in their
    places (None for those not received), their uncompressed copies, the partition losses merged."""
    vectors, exact, losses = [None] * messages, [None] * messages, {}
    for index, result, i in pieces:
        vectors[index] = result.messages[i]
        exact[index] = None if result.exact is None else result.exact[i]
        losses.update(result.task_losses[i])
    last = pieces[-1][1]
    has_exact = all(result.exact is not None for _, result, _ in pieces)
    return replace(last, messages=vectors, exact=exact if has_exact else None, losses=losses, task_losses=None)
