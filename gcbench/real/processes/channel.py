"""One worker session's channel on torch.distributed: two two-rank gloo groups, one per direction.

Why this shape (the traps it avoids): the master never receives from "any source"
and never times out a receive: a group's operations wait up to ``IDLE`` (gloo times
out every operation at its group's timeout, and a worker whose variant waits for
the others' turns is silent for minutes), while joining a group waits at most the
run's timeout. Each worker session (one process) gets its own
pair of ProcessGroupGloo objects on the run's TCPStore under a prefix of its
own (``w{worker}.{session}``; torchft's parameter_server.py builds one group per
session the same way), so a replacement process rendezvouses on fresh keys and
no receive of a dead session can pair with a message of a new one. One group
carries master -> worker messages, the other worker -> master, so each group
has one sender and one receiving thread on each side. A receiver thread per
channel blocks on its receive and feeds one queue; when the peer exits, gloo
fails that receive ("Connection closed by peer") and the thread ends.

A message is a header, int64 (worker, job id, message index, payload bytes,
attachment bytes), then the pickled payload as a uint8 tensor, then its
attachment if it has one; the index counts the channel's messages, so a lost or
repeated one is an error, never a silent mix-up. An attachment is one value
pickled once for every channel it goes to (the weights the master sends each
worker with its first job after a publication): pickled per worker, the 0.75 MB
of the small CNN's weights cost the master a pickle and two copies per worker.
"""

from __future__ import annotations

import datetime
import pickle
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

HOST = "127.0.0.1"
opened = False  # whether this process built a group (its end skips the interpreter's teardown: gcbench/cli/__init__.py)
DOWN, UP = "down", "up"  # master -> worker, worker -> master
ATTACHED = "_attached"  # the key a message's attachment is unpickled into
# how long a group's receive (or send) may wait: the peer's exit ends it at once ("Connection closed by peer"),
# and a worker outlives neither its driver nor its channel (gcbench/real/processes/child.py), so this bounds nothing
# but a silence, and a session's silence between its variant's turns is as long as the other variants' turns
IDLE = datetime.timedelta(days=7)


def store(port: int = 0, timeout: float = 60.0, host: str = HOST) -> dist.TCPStore:
    """The run's rendezvous: the master's (``port`` 0: a free loopback port), or a worker's client of it
    (at ``host``: the loopback, or under torchrun the master's address)."""
    wait = datetime.timedelta(seconds=timeout)
    if port == 0:
        return dist.TCPStore(HOST, 0, is_master=True, wait_for_workers=False, timeout=wait)
    return dist.TCPStore(host, port, is_master=False, timeout=wait)


def scoped(rendezvous: dist.Store, scope: str) -> dist.Store:
    """The keys of one cluster (``scope``: empty for a store of its own; under torchrun, where the
    clusters of every variant share one store, the cluster's name)."""
    return dist.PrefixStore(f"{scope}/", rendezvous) if scope else rendezvous


def group(rendezvous: dist.Store, worker: int, session: int, direction: str, rank: int, timeout: float):
    """The two-rank gloo group of one direction of one worker session (master rank 0, worker rank 1).
    Building it waits until both ranks have joined (at most ``timeout`` seconds); its messages wait up to
    ``IDLE``."""
    global opened
    opened = True
    prefix = dist.PrefixStore(f"w{worker}.{session}.{direction}/", rendezvous)
    # gloo's connect waits at the group's timeout, which is every operation's too: the join is bounded here
    prefix.set(f"joined/{rank}", "1")
    prefix.wait([f"joined/{1 - rank}"], datetime.timedelta(seconds=timeout))
    return dist.ProcessGroupGloo(prefix, rank, 2, IDLE)


class Attachment:
    """A value pickled once, to be sent as ``key`` of any number of messages (``Sender.post``)."""

    def __init__(self, key: str, value: Any) -> None:
        self.key = key
        self.tensor = torch.frombuffer(bytearray(pickle.dumps(value, protocol=5)), dtype=torch.uint8)


class Sender:
    """The sending end of one group: numbered messages to the peer.

    ``send`` returns once the message is sent; ``post`` once it is on its way (the master posts a job to
    each worker before it waits for any: sent one after another, each waited for its worker's receiver, and
    dispatching to 8 workers cost 60 ms). A channel has at most one posted message in flight: the next
    ``post`` or ``send`` first waits for it, and raises the error it failed with.
    """

    def __init__(self, pg, worker: int, peer: int) -> None:
        self.pg, self.worker, self.peer, self.index = pg, worker, peer, 0
        self.posted: list = []  # the works of the message in flight
        self.kept = None  # the tensors they send from

    def send(self, message: dict[str, Any], attachment: Attachment | None = None) -> None:
        self.post(message, attachment)
        self.wait()

    def post(self, message: dict[str, Any], attachment: Attachment | None = None) -> None:
        """Send ``message`` (with ``attachment`` as its ``attachment.key``) without waiting for it to arrive."""
        self.wait()
        if attachment is not None:
            message = {**message, ATTACHED: attachment.key}
        payload = torch.frombuffer(bytearray(pickle.dumps(message, protocol=5)), dtype=torch.uint8)
        extra = 0 if attachment is None else attachment.tensor.numel()
        header = torch.tensor([self.worker, message.get("job", -1), self.index, payload.numel(), extra],
                              dtype=torch.int64)  # fmt: skip
        self.posted = [self.pg.send([header], self.peer, 0), self.pg.send([payload], self.peer, 1)]
        if attachment is not None:
            self.posted.append(self.pg.send([attachment.tensor], self.peer, 2))
        self.kept = (header, payload, attachment)  # (the tensors must live until their sends are done)
        self.index += 1

    def wait(self) -> None:
        posted, self.posted = self.posted, []
        for work in posted:
            work.wait()
        self.kept = None


def receive_forever(pg, peer: int, take: Callable[[dict[str, Any]], None]) -> Exception:
    """Hand every message from ``peer`` to ``take``, in order, until the channel breaks; the error it broke with."""
    expected = 0
    while True:
        header = torch.zeros(5, dtype=torch.int64)
        try:
            pg.recv([header], peer, 0).wait()
            worker, job, index, size, extra = header.tolist()
            payload = torch.empty(size, dtype=torch.uint8)
            pg.recv([payload], peer, 1).wait()
            attachment = torch.empty(extra, dtype=torch.uint8) if extra else None
            if attachment is not None:
                pg.recv([attachment], peer, 2).wait()
        except RuntimeError as error:  # the peer exited or the group was torn down
            return error
        if index != expected:
            raise RuntimeError(f"channel of worker {worker}: message {index} came where {expected} was due")
        expected += 1
        message = pickle.loads(payload.numpy().tobytes())
        if attachment is not None:
            message[message.pop(ATTACHED)] = pickle.loads(attachment.numpy().tobytes())
        if message.get("job", -1) != job:
            raise RuntimeError(f"channel of worker {worker}: header says job {job}, payload {message.get('job')}")
        take(message)
