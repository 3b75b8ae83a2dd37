"""The one scheme interface: a linear code over partition gradients (DESIGN.md).

A subclass says which partitions each worker holds and the coefficient matrix
(m x k) of each message it sends; everything else (encoding, decodability,
decoding weights, their cache, conditioning) is shared here.
"""

from __future__ import annotations

import abc
import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from gcbench.coding._amplification import AmplificationReport, amplification_report
from gcbench.coding._apply import combine_into, empty_like_vector, pad_to, weighted_sum_into
from gcbench.coding._conditioning import ConditionReport, condition_report
from gcbench.coding._errors import NotDecodable, SchemeParameterError, check_int, check_like_default, plain
from gcbench.coding._linear import Decoding, least_squares_weights, make_decoding, targets
from gcbench.coding._threads import on_one_blas_thread, one_blas_thread

MAX_WORKERS = 4096  # coefficients are stored densely: n * n * m floats
CONDITION_LIMIT = 1e7  # above this, float64 decoding can miss 1e-8 relative error
_CACHE_FLOATS = 20_000_000  # bound on the floats the two decoding caches hold (about 160 MB each)


@dataclass(frozen=True)
class Layout:
    """What a scheme construction produces: partitions and message coefficients per worker."""

    partitions: tuple[tuple[int, ...], ...]
    coefficients: tuple[tuple[np.ndarray, ...], ...]  # per worker, per message: (m, k)


class Scheme(abc.ABC):
    """A gradient-coding scheme over n workers tolerating s stragglers.

    Subclasses set ``name``, ``reference``, ``exact``, ``defaults`` (extra
    parameters and their default values) and implement ``_layout``.
    """

    name: ClassVar[str] = ""
    reference: ClassVar[str] = ""
    exact: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {}
    # the docstring's fixed block, as `gcbench schemes` prints it
    facts: ClassVar[dict[str, str]] = {}
    # schemes whose conditioning depends on (n, s) refuse parameters above CONDITION_LIMIT
    checks_conditioning: ClassVar[bool] = False
    # True when exactly the sets of at least n - s workers decode (the suite checks it)
    threshold_decodable: ClassVar[bool] = False
    # True when a received set's decoding (exactness, residual) depends only on its size
    symmetric: ClassVar[bool] = False
    # True when the decode is unbiased over a uniformly random set of s stragglers (the suite checks it)
    unbiased: ClassVar[bool] = False
    # the conformance suite's largest n for Hypothesis: big enough to reach the
    # conditioning limits, small enough that construction stays fast
    hypothesis_max_n: ClassVar[int] = 16
    # integer parameters Hypothesis draws freely, as (low, high), beside valid_parameter_sets
    hypothesis_ranges: ClassVar[dict[str, tuple[int, int]]] = {}
    # True when a worker computes one held partition per step and encodes from its cache (coding/pipelined.py)
    pipelined: ClassVar[bool] = False
    # True when a job is decoded rounds after its dispatch from results of several rounds (coding/sequential.py):
    # such a scheme gives ``delay`` and ``rounds(count)``, the bookkeeping the master asks when a round may end
    sequential: ClassVar[bool] = False
    # a worker that sends several messages sends each as soon as its partitions are computed; False: all of them
    # together when its job ends (M-SGC's mini-tasks make one round's result, as in the authors' model)
    streams_messages: ClassVar[bool] = True
    # what the conformance suite's exhaustive checks cost (tests/test_scheme_conformance.py): True when checking
    # every straggler set at n <= 10 takes seconds, or every responder set at n <= 7 takes minutes; such a check
    # then runs only in the slow lane (pytest -m slow), and Hypothesis still samples the scheme in the everyday one
    slow_every_straggler_set: ClassVar[bool] = False
    slow_every_responder_set: ClassVar[bool] = False

    def __init__(self, n: int, s: int, **params: Any) -> None:
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            takes = ", ".join(sorted(self.defaults)) or "no extra parameters"
            raise SchemeParameterError(f"{self.name} does not take the parameter '{unknown[0]}'; it takes {takes}.")
        params = {key: plain(value) for key, value in params.items()}  # numpy numbers stored as Python's
        for key, value in params.items():
            check_like_default(self.name, key, value, self.defaults[key])
        self.n = check_int(self.name, "n", n, 1, MAX_WORKERS)
        self.params = {**self.defaults, **params}
        if params and self.derived_s(params) == s:  # s follows from the parameters given: they are checked first
            self.s, self.m, self.k = s, 1, self.n
            self._check_parameters()
        self.s = check_int(self.name, "s", s, 0, self.n - 1)
        self.m = check_int(self.name, "m", self.params.get("m", 1), 1, self.n)
        self.k = self.n
        self._check_parameters()
        with one_blas_thread():  # constructions solve and decompose small matrices (see _threads.py)
            layout = self._layout()
        self._partitions = layout.partitions
        flat = [c for per_worker in layout.coefficients for c in per_worker]
        self.coefficients = np.stack(flat).astype(np.float64)  # (messages, m, k)
        self.rows = self.coefficients.reshape(len(flat), self.m * self.k)
        owners = [w for w, per_worker in enumerate(layout.coefficients) for _ in per_worker]
        self.message_owner = np.array(owners, dtype=np.int64)
        ids = iter(range(len(flat)))
        self._messages = tuple(tuple(next(ids) for _ in c) for c in layout.coefficients)
        self._target = targets(self.m, self.k)
        # each cached decoding holds about m * m * k floats of error coefficients
        self._cache_size = max(256, _CACHE_FLOATS // (self.m * self.m * self.k + self.n))
        self._cache: OrderedDict[tuple[int, ...], Decoding | None] = OrderedDict()
        self._approximate: dict[tuple[int, ...], Decoding] = {}
        self._d: int | None = None
        if self.checks_conditioning:
            self._refuse_if_ill_conditioned()

    # -- what subclasses provide -------------------------------------------------
    @classmethod
    def valid_parameter_sets(cls, n: int) -> list[tuple[int, dict[str, Any]]]:
        """Every (s, extra parameters) the scheme's rules admit for n workers (the conformance suite's table).

        The scheme may still refuse some as numerically unusable; the suite
        skips those and checks that the refusal says why.
        """
        return [(s, {}) for s in range(n)]

    def _check_parameters(self) -> None:  # noqa: B027  (optional hook)
        """Raise SchemeParameterError for parameters the construction cannot take."""

    @property
    def delay(self) -> int:
        """Rounds from a job's dispatch to its decode: 0, but for a sequential scheme (its B)."""
        return 0

    @classmethod
    def derived_s(cls, params: Mapping[str, Any]) -> int | None:
        """The s these parameters fix, for a scheme whose s follows from its other parameters (None: s is free,
        or the parameters are not valid enough to say; the construction then says why)."""
        return None

    @abc.abstractmethod
    def _layout(self) -> Layout:
        """Partitions and message coefficients of every worker."""

    def _decodable_workers(self, workers: frozenset[int]) -> bool | None:
        """Decodability from the structure alone (None: ask the linear algebra).

        Called with the workers whose every message arrived. The conformance
        suite checks each structural answer against the rank computation.
        """
        if len(workers) >= self.n - self.s:
            return True
        return False if self.threshold_decodable else None

    def _structural_quality(self, key: tuple[int, ...]) -> tuple[bool, float] | None:
        """``decode_quality`` from the structure alone (None: ask the linear algebra)."""
        return None

    def _weights(self, ids: tuple[int, ...], rows: np.ndarray) -> tuple[np.ndarray, float | None]:
        """Decoding weights W (m x r) for the received rows, and their condition number if known."""
        return least_squares_weights(rows, self._target)

    # -- properties users and `gcbench schemes` see --------------------------------
    @property
    def load(self) -> int:
        """Partitions computed by the busiest worker."""
        return max(len(p) for p in self._partitions)

    def step_load(self, worker: int) -> int:
        """Partitions a worker computes in one step's job (what the timing models scale by)."""
        return len(self.partitions(worker))

    @property
    def partition_share(self) -> float:
        """One partition's size in uncoded partitions (n / k: 1 but where k != n, as M-SGC's), what the compute
        models scale a load by."""
        return self.n / self.k

    def computes(self, worker: int, step: int) -> tuple[int, ...]:
        """The partitions a worker computes in its job of iteration ``step``: all it holds, unless pipelined."""
        return self.partitions(worker)

    @property
    def upload(self) -> float:
        """Length of one message as a fraction of the gradient."""
        return 1.0 / self.m

    @property
    def messages_per_worker(self) -> int:
        return max(len(m) for m in self._messages)

    @property
    def tolerance(self) -> int:
        """Stragglers tolerated: any n - s workers decode."""
        return self.s

    @property
    def construction(self) -> str:
        """One line naming the construction used for these parameters."""
        return self.reference

    def partitions(self, worker: int) -> tuple[int, ...]:
        """The ordered partitions a worker computes."""
        return self._partitions[self._worker(worker)]

    def messages(self, worker: int) -> tuple[int, ...]:
        """Global ids of the messages a worker sends, in order."""
        return self._messages[self._worker(worker)]

    def ready_after(self, message_id: int) -> int:
        """How many of its owner's partitions must be computed before this message exists."""
        message_id = check_int(self.name, "message_id", message_id, 0, len(self.message_owner) - 1)
        order = self._partitions[self.message_owner[message_id]]
        used = np.flatnonzero(np.any(self.coefficients[message_id] != 0.0, axis=0))
        return max(order.index(j) for j in used) + 1

    def assignment_matrix(self) -> np.ndarray:
        """0/1 matrix (n x k): worker i holds partition j."""
        a = np.zeros((self.n, self.k), dtype=np.int8)
        for w, parts in enumerate(self._partitions):
            a[w, list(parts)] = 1
        return a

    def worst_condition(self, limit: int | None = 5000, stop_above: float = float("inf")) -> ConditionReport:
        """Worst condition number over the straggler sets of size s (all, or a seeded sample).

        ``limit``: the most sets (None: what a bounded check affords). ``stop_above``: stop at the
        first set above it (enough to refuse a construction).
        """
        return condition_report(self, limit, stop_above)

    def error_amplification(self, limit: int = 2000) -> AmplificationReport:
        """The decoding weights' Frobenius norm over the straggler sets of size s: the factor by which errors in
        the messages (compression's) reach the decoded gradient (gcbench/coding/_amplification.py)."""
        return amplification_report(self, limit)

    # -- decodability and weights ------------------------------------------------
    def can_decode(self, message_ids: Iterable[int]) -> bool:
        """Whether these received messages determine the gradient (approximately, for approximate schemes)."""
        key = message_key(message_ids)
        verdict = self._structural_verdict(key)
        if verdict is not None:
            return verdict
        return self._cached_decoding(key) is not None

    def decoding(self, received: Mapping[int, Sequence[Any]] | Iterable[int]) -> Decoding:
        """Weights, residual and conditioning for a received set (worker -> messages, or message ids)."""
        ids = self._gather(received)[0] if isinstance(received, Mapping) else list(received)
        key = message_key(ids)
        found = self._cached_decoding(key)
        if found is None:
            workers = sorted({int(self.message_owner[i]) for i in key})
            raise NotDecodable(f"{self.name} cannot decode from workers {workers} (n={self.n}, s={self.s}).")
        return found

    def approximate_decoding(self, message_ids: Iterable[int]) -> Decoding:
        """The scheme's best estimate from any non-empty set, with its residual (exact or not)."""
        key = message_key(message_ids)
        if not key:
            raise NotDecodable(f"{self.name} received no message.")
        if key not in self._approximate:
            self._approximate[key] = self._least_squares(key)
            if len(self._approximate) > self._cache_size:
                self._approximate.pop(next(iter(self._approximate)))
        return self._approximate[key]

    def decode_quality(self, message_ids: Iterable[int]) -> tuple[bool, float]:
        """Whether a received set decodes exactly, and its residual (0 when exact; inf for no message).

        Exactness is the decode's, not the scheme's: an approximate scheme that
        received everything decodes exactly too.
        """
        key = message_key(message_ids)
        if not key:
            return False, float("inf")
        structural = self._structural_quality(key)
        if structural is not None:
            return structural
        if self.exact and self.can_decode(key):
            return True, 0.0
        found = self.approximate_decoding(key)
        return (True, 0.0) if found.exact else (False, found.residual)

    # -- timing: when does a received set first decode? -----------------------------
    def decode_times(self, arrivals: np.ndarray) -> np.ndarray:
        """Per row of message arrival times (inf: never arrives), the first time the arrived set decodes.

        inf where it never does. Messages are indexed by global message id.
        """
        arrivals = np.atleast_2d(np.asarray(arrivals, dtype=float))
        if self.threshold_decodable:
            return kth_smallest(arrivals, self.n - self.s)
        return np.array([self._decode_time(row) for row in arrivals])

    def _decode_time(self, row: np.ndarray) -> float:
        order = np.argsort(row, kind="stable")
        finite = int(np.isfinite(row).sum())
        if finite == 0 or not self.can_decode(order[:finite]):
            return float("inf")
        need = self.n - self.s  # the first n - s messages decode when each worker sends one (not otherwise)
        if self.messages_per_worker == 1 and need <= finite and (need == 1 or not self.can_decode(order[: need - 1])):
            return float(row[order[need - 1]])
        low, high = 1, finite  # the smallest prefix that decodes lies in [low, high]
        while low < high:
            middle = (low + high) // 2
            if self.can_decode(order[:middle]):
                high = middle
            else:
                low = middle + 1
        return float(row[order[low - 1]])

    # -- encoding and decoding vectors ---------------------------------------------
    @on_one_blas_thread
    def encode(self, worker: int, partition_grads: Any) -> list[Any]:
        """Messages a worker sends, from a (k, d) array/tensor or a {partition: gradient} mapping."""
        parts = self.partitions(worker)
        grads = [_partition_gradient(partition_grads, j) for j in parts]
        d = int(grads[0].shape[0])
        if any(g.ndim != 1 or g.shape[0] != d for g in grads):
            raise ValueError("every partition gradient must be a 1-D vector of the same length")
        length = -(-d // self.m)
        grads = [pad_to(g, self.m * length) for g in grads]
        self._d = d
        out = []
        for message_id in self._messages[worker]:
            coeffs = self.coefficients[message_id]
            weights, vectors = [], []
            for u in range(self.m):
                for j, g in zip(parts, grads, strict=True):
                    if coeffs[u, j] != 0.0:
                        weights.append(coeffs[u, j])
                        vectors.append(g[u * length : (u + 1) * length])
            message = empty_like_vector(grads[0], length)
            weighted_sum_into(message, weights, vectors)
            out.append(message)
        return out

    @on_one_blas_thread
    def decode(
        self, received: Mapping[int, Sequence[Any]], d: int | None = None, approximate: bool = False, out: Any = None
    ) -> Any:
        """The full gradient (length d) from worker -> list of its messages (None for one not received).

        ``approximate=True`` returns the least-squares estimate even when the set
        does not decode exactly (its residual: ``approximate_decoding``). ``out``: a
        1-D array or tensor of length d (the messages' kind) to write the gradient
        into and return, so a training loop can decode into one buffer every step.
        """
        ids, vectors = self._gather(received)
        dec = self.approximate_decoding(ids) if approximate else self.decoding(ids)
        position = {mid: i for i, mid in enumerate(ids)}
        ordered = [vectors[position[mid]] for mid in dec.message_ids]
        length = int(ordered[0].shape[0])
        d = next((x for x in (d, self._d, None if out is None else int(out.shape[0])) if x is not None), None)
        if d is None and self.m > 1:
            raise ValueError("decode needs d= (the gradient length) when m > 1 and this scheme encoded nothing")
        if out is not None and tuple(out.shape) != (d,):
            raise ValueError(f"out must be a 1-D vector of the gradient's length d={d}, got shape {tuple(out.shape)}")
        if out is None:
            full = empty_like_vector(ordered[0], self.m * length)
            combine_into([full[u * length : (u + 1) * length] for u in range(self.m)], dec.weights, ordered)
            return full if d is None else full[:d]
        # every slice straight into out; one that reaches into the padding is cut at d (combine_into takes it)
        combine_into([out[u * length : min((u + 1) * length, d)] for u in range(self.m)], dec.weights, ordered)
        return out

    # -- internals ------------------------------------------------------------------
    def _worker(self, worker: int) -> int:
        return check_int(self.name, "worker", worker, 0, self.n - 1)

    def _gather(self, received: Mapping[int, Sequence[Any]]) -> tuple[list[int], list[Any]]:
        ids, vectors = [], []
        for worker, messages in received.items():
            own = self.messages(worker)
            if len(messages) > len(own):
                raise ValueError(f"worker {worker} sends {len(own)} message(s), got {len(messages)}")
            for index, vector in enumerate(messages):
                if vector is not None:
                    ids.append(own[index])
                    vectors.append(vector)
        if len({int(v.shape[0]) for v in vectors}) > 1:
            raise ValueError("all received messages must have the same length")
        return ids, vectors

    def _structural_verdict(self, key: tuple[int, ...]) -> bool | None:
        present = set(key)
        complete = frozenset(w for w, own in enumerate(self._messages) if own and present.issuperset(own))
        partial = {int(self.message_owner[i]) for i in key} - complete
        return None if partial else self._decodable_workers(complete)

    def _cached_decoding(self, key: tuple[int, ...]) -> Decoding | None:
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        found = self._solve(key)
        self._cache[key] = found
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return found

    def _solve(self, key: tuple[int, ...]) -> Decoding | None:
        """The decoding of a received set (not cached), or None when it does not decode."""
        if not key or self._structural_verdict(key) is False:
            return None
        found = self._least_squares(key)
        if self.exact and not found.exact:
            return None
        return found

    @on_one_blas_thread
    def _least_squares(self, key: tuple[int, ...]) -> Decoding:
        """Weights, residual and conditioning of a non-empty received set (not cached)."""
        rows = self.rows[list(key)]
        return make_decoding(key, rows, self._target, *self._weights(key, rows))

    @property
    def alternatives(self) -> str:
        """What to try instead when these parameters are refused as ill-conditioned."""
        return "use fewer workers or stragglers, or fr / cce_fr, which are always well conditioned"

    def _refuse_if_ill_conditioned(self) -> None:
        # limit=None: as many sets as the bounded check affords (gcbench/coding/_conditioning.py)
        report = self.worst_condition(limit=None, stop_above=CONDITION_LIMIT)
        if report.worst > CONDITION_LIMIT:
            what = (
                f"the straggler set {list(report.worst_stragglers)} cannot be decoded in floating point"
                if report.worst == float("inf")
                else f"a straggler set has decoding condition number {report.worst:.1e} > {CONDITION_LIMIT:.0e}"
            )
            raise SchemeParameterError(
                f"{self.name} is numerically unusable for n={self.n}, s={self.s}"
                f"{'' if self.m == 1 else f', m={self.m}'}: {what}; {self.alternatives}"
            )

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"make_scheme({self.name!r}, n={self.n}, s={self.s}{extra})"


def message_key(message_ids: Iterable[int]) -> tuple[int, ...]:
    """Received message ids (Python's or numpy's integers) as the sorted tuple of Python ints the caches use."""
    if isinstance(message_ids, np.ndarray):
        return tuple(sorted(set(message_ids.tolist())))
    return tuple(sorted(set(map(operator.index, message_ids))))


def kth_smallest(values: np.ndarray, k: int) -> np.ndarray:
    """The k-th smallest entry (1-based) of each row."""
    return np.partition(values, k - 1, axis=1)[:, k - 1]


def _partition_gradient(grads: Any, j: int) -> Any:
    if isinstance(grads, Mapping):
        if j not in grads:
            raise KeyError(f"partition {j} is missing from the partition gradients")
        return grads[j]
    if j >= len(grads):
        raise IndexError(f"partition {j} is missing: got gradients for {len(grads)} partitions")
    return grads[j]
