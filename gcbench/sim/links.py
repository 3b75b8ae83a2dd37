"""The links as the SimPy cluster models them: the master's ingress as a FIFO link (``Link``, or
``ResourceLink``, the same as a ``simpy.Resource``) that sends one message at a time at the full bandwidth
(``network.shared_link``), or links shared fairly (``FairShareLink``: every node's uplink and the master's
ingress for the messages, the master's egress and every node's downlink for the weights; a topology's and
``network.master``'s), and the calendar event they are made of (``Due``)."""

from __future__ import annotations

from collections import deque
from heapq import heappush

import numpy as np
import simpy
from simpy.core import NORMAL

from gcbench.cluster import Job, Result
from gcbench.models.fair_share import ending, rates, sent
from gcbench.models.wire import Wire


class Due:
    """A triggered event on a SimPy calendar with a value and one callback, scheduled ``delay`` from now as it
    is made (as a ``Timeout`` is, with any priority): all ``Environment.step`` reads of an event
    (``callbacks``, ``_ok``, ``_value``), made and scheduled in about three quarters of a ``simpy.Event``'s
    time (no ``__dict__``, no ``env``, no ``schedule`` call; measured). The key is ``env.schedule``'s (time,
    priority, event id), so events keep their order. Only the cluster's own messages are ``Due``: no
    process yields one."""

    __slots__ = ("callbacks", "_ok", "_value")

    def __init__(self, env: simpy.Environment, delay: float, priority: int, value, callback) -> None:
        self.callbacks, self._ok, self._value = [callback], True, value
        heappush(env._queue, (env._now + delay, priority, next(env._eid), self))


class Link:
    """The master's ingress link: sends its queued messages one at a time, first come first served, each
    holding the link for ``transfer`` seconds.

    A chain of transfer events: each one's callback delivers its message and starts the next transfer. With
    the message reaching the link, that is two calendar events a message, where a capacity-one
    ``simpy.Resource`` costs four (reaching it, the request granted, the transfer, the release) and the SimPy
    process this link was before two, plus a start and an end event per busy spell and a generator's
    resumption a message. A transfer's event is made when the transfer starts, as that process made its
    timeout, so events due at one instant keep their order (SimPy breaks such ties by when events were made)."""

    def __init__(self, env: simpy.Environment, transfer: float, sent, idle=None, key=0) -> None:
        """``sent(result)`` takes each message as it arrives; ``idle(link)``, if given, hears the link go idle."""
        self.env, self.transfer, self.sent, self.idle, self.key = env, transfer, sent, idle, key
        self.queue: deque = deque()
        self.busy = False

    def reach(self, event: Due) -> None:
        """A message (job, compute start, compute end) reaches the link now: the callback of its event."""
        if self.busy:
            self.queue.append(event._value)
        else:
            self.busy = True
            Due(self.env, self.transfer, NORMAL, event._value, self._sent)

    def _sent(self, event: Due) -> None:
        job, begin, ready, message = event._value
        queue = self.queue
        self.busy = bool(queue)  # (before delivering, as the process had it)
        now = self.env._now
        self.sent(Result(job, now, begin, ready) if message is None else part(job, now, begin, ready, message))
        if queue:
            Due(self.env, self.transfer, NORMAL, queue.popleft(), self._sent)
        elif self.idle is not None:
            self.idle(self)


class ResourceLink:
    """The same FIFO link as a ``simpy.Resource`` of ``capacity`` one and one SimPy process a message
    (``network.link_model: resource``): the textbook model, at a third to a half of ``Link``'s speed (four
    calendar events a message against two, and a process). A subclass extends it (docs/architecture.md: a link of
    capacity two); tests/test_event_engine.py holds its tables equal to ``Link``'s."""

    capacity = 1  # messages on the link at once, each at the full bandwidth

    def __init__(self, env: simpy.Environment, transfer: float, sent, idle=None, key=0) -> None:
        self.env, self.transfer, self.sent, self.idle, self.key = env, transfer, sent, idle, key
        self.resource = simpy.Resource(env, capacity=self.capacity)

    def reach(self, event) -> None:
        self.env.process(self._send(event._value))

    def _send(self, message):
        job, begin, ready, index = message
        with self.resource.request() as granted:
            yield granted
            yield self.env.timeout(self.transfer)
            now = self.env.now
            self.sent(Result(job, now, begin, ready) if index is None else part(job, now, begin, ready, index))
        if self.idle is not None and not self.resource.users and not self.resource.queue:
            self.idle(self)


class FairShareLink:
    """Every node's link and the master's NIC, shared fairly by the flows crossing them
    (gcbench/models/fair_share.py): each message (or copy of the weights) a flow from the moment it reaches its
    node's link, at the rate max-min fairness gives it, which changes as flows join and end. One calendar event
    is due at a time, the next end at the present rates; a flow joining meanwhile makes a new one, and the old
    one, due at a time that no longer holds, is skipped when it comes (SimPy cannot cancel an event). A flow of a
    worker on the master's own node crosses no link: it is through as it starts.

    ``uploads`` (the workers' messages, through each node's uplink and the master's ingress) takes the messages
    as ``reach`` events and hands each on as a result; ``weights`` (the master's copies, through its egress and
    each node's downlink) takes ``add(worker, value)`` and calls ``through(value)``."""

    def __init__(self, env: simpy.Environment, node: np.ndarray, node_rate: np.ndarray, shared_rate: float,
                 size: float, through, idle=None, key=0, unfairness: float = 0.0,
                 burst: np.ndarray | None = None) -> None:  # fmt: skip
        self.env, self.node, self.node_rate, self.shared_rate = env, node, node_rate, shared_rate
        self.size, self.through, self.idle, self.key = float(size), through, idle, key
        self.unfairness = unfairness
        # each node link's token bucket (gcbench/models/fair_share.py, ``Buckets``): bytes held, since when idle
        self.burst = burst
        self.tokens = None if burst is None else np.array(burst, dtype=float)
        self.since = None if burst is None else np.full(len(burst), -INF)
        # the flows, in the order they joined (ties: by worker, as the vectorised engine's columns)
        self.values: list = []  # what each flow carries, handed to ``through`` as it is through
        self.workers = np.zeros(0, dtype=int)
        self.joined = np.zeros(0)
        self.nodes = np.zeros(0, dtype=int)
        self.remaining = np.zeros(0)
        self.rate = np.zeros(0)
        self.updated = 0.0  # when ``remaining`` was last brought up to date
        self.due, self.ends, self.generation = INF, np.zeros(0, dtype=bool), 0

    @classmethod
    def uploads(cls, env: simpy.Environment, wire: Wire, size: float, sent, idle=None, key=0) -> FairShareLink:
        """The workers' messages to the master; ``sent(result)`` takes each as it arrives."""
        return cls(env, wire.node, wire.uplink, wire.ingress, size, lambda value: sent(_result(value, env._now)),
                   idle, key, wire.unfairness, wire.burst)  # fmt: skip

    @classmethod
    def weights(cls, env: simpy.Environment, wire: Wire, size: float, through, idle=None, key=0) -> FairShareLink:
        """The master's copies of the weights to the workers."""
        return cls(env, wire.node, wire.downlink, wire.egress, size, through, idle, key, wire.unfairness, wire.burst)

    def reach(self, event: Due) -> None:
        """A message reaches its node's link now (the callback of its event)."""
        value = event._value
        self.add(value[0].worker, value)

    def add(self, worker: int, value) -> None:
        """A flow of ``worker``'s starts now."""
        node = int(self.node[worker])
        now = self.env._now
        if node < 0:
            self.through(value)
            if not self.values and self.idle is not None:
                self.idle(self)
            return
        self._advance(now)
        at = int(np.sum((self.joined < now) | (self.workers < worker)))  # (every flow joined by now)
        self.values.insert(at, value)
        self.workers, self.joined = np.insert(self.workers, at, worker), np.insert(self.joined, at, now)
        self.remaining = np.insert(self.remaining, at, self.size - self._from_bucket(node, now))
        self.nodes = np.insert(self.nodes, at, node)
        self._schedule(now)

    def refilled_at(self) -> float:
        """When every node link's bucket is full again, sending nothing meanwhile (-inf: full now, or none)."""
        if self.burst is None:
            return -INF
        with np.errstate(divide="ignore", invalid="ignore"):
            until = self.since + (self.burst - self.tokens) / self.node_rate
        shaped = (self.burst > 0) & (self.node_rate < INF) & (self.tokens < self.burst)
        return float(until[shaped].max()) if shaped.any() else -INF

    def _from_bucket(self, node: int, now: float) -> float:
        """What the node link's bucket gives a flow joining it now: its bytes if the link idles (refilled at the
        link's rate since it went idle, up to the burst), none while it sends (the bucket stays empty)."""
        if self.burst is None or not self.burst[node] > 0 or not self.node_rate[node] < INF:
            return 0.0
        if np.any((self.nodes == node) & (self.remaining > 0)):  # (a flow the bucket took whole is not sending)
            self.tokens[node] = 0.0
            return 0.0
        tokens = min(float(self.burst[node]), self.tokens[node] + self.node_rate[node] * (now - self.since[node]))
        free = min(tokens, self.size)
        self.tokens[node], self.since[node] = tokens - free, now
        return free

    def _advance(self, now: float) -> None:
        if self.values:
            self.remaining -= sent(self.rate, now - self.updated)
        self.updated = now

    def _schedule(self, now: float) -> None:
        """The rates from now on, and an event at the first end they give."""
        active = np.ones((1, len(self.values)), dtype=bool)
        order = np.arange(len(self.values), dtype=float)[None, :]  # (their order of joining: ``rates``' rank)
        self.rate = rates(active, self.nodes, self.node_rate, self.shared_rate, order, self.unfairness)[0]
        end = ending(np.asarray(now), self.remaining, self.rate)
        self.due = float(end.min())
        self.ends = end <= self.due
        self.generation += 1
        Due(self.env, self.due - now, NORMAL, self.generation, self._end)

    def _end(self, event: Due) -> None:
        if event._value != self.generation:
            return  # made before a flow joined: the rates it was due at no longer hold
        now = self.due
        self._advance(now)
        ends, kept = np.flatnonzero(self.ends), np.flatnonzero(~self.ends)
        ended = [self.values[i] for i in ends]
        if self.burst is not None:  # links whose last flow ends now start to refill
            for k in set(self.nodes[ends].tolist()) - set(self.nodes[kept].tolist()):
                self.since[k] = now
        self.values = [self.values[i] for i in kept]
        self.nodes, self.remaining = self.nodes[kept], self.remaining[kept]
        self.workers, self.joined = self.workers[kept], self.joined[kept]
        if self.values:
            self._schedule(now)
        for value in ended:
            self.through(value)
        if not self.values and self.idle is not None:
            self.idle(self)


def _result(value, now: float) -> Result:
    job, begin, ready, message = value
    return Result(job, now, begin, ready) if message is None else part(job, now, begin, ready, message)


LINK_MODELS = {"events": Link, "resource": ResourceLink}  # network.link_model -> the FIFO link's class
INF = float("inf")


def part(job: Job, at: float, begin: float, ready: float, index: int) -> Result:
    """The result carrying one message (index ``index`` of its worker's) of a job."""
    result = Result(job, at, begin, ready)
    result.message = index
    return result
