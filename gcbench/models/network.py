"""The network between workers and master: dispatch, latency, bandwidth, and the links messages share.

A message of b bytes ready at time r arrives at r + latency + b / bandwidth, each worker on a link of its own.
With ``shared_link`` the master's ingress is one FIFO link at ``bandwidth``: messages queue in order of
reaching it and cross it one at a time, so smaller uploads (CCE) finish sooner. ``link_model`` picks how the
event engine's SimPy cluster models that link (gcbench/sim/links.py); both give the same times.

With a topology (gcbench/models/topology.py) or ``master.ingress``, links are shared fairly instead, as TCP
flows share them (gcbench/models/wire.py): each node's uplink (``bandwidth``, or the node's own in ``nodes``)
by the messages of its workers, and the master's ingress by every node's; a worker on the master's node
crosses no link, and each node's messages take its own ``latency``. With ``master.egress`` or a ``downlink``, each
job also waits for the weights: a copy a job, sent as the master sends the job, through the master's egress
(shared by every copy) and the worker's node's downlink (shared by its workers' copies).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from gcbench.models._config import Config, Seconds
from gcbench.models.distributions import Distribution


class NodeLinks(Config):
    """One node's own settings, where they differ from the network's (null: the network's)."""

    bandwidth: Annotated[float, Field(gt=0)] | None = None  # bytes per second of the node's uplink
    downlink: Annotated[float, Field(gt=0)] | None = None  # bytes per second the node receives at
    latency: Seconds | None = None
    burst: Annotated[float, Field(ge=0)] | None = None  # bytes its links send at once after idling (see Network)


class MasterLinks(Config):
    """The master's NIC."""

    ingress: Annotated[float, Field(gt=0)] | None = None  # bytes per second every node's messages share; null: no limit
    egress: Annotated[float, Field(gt=0)] | None = None  # bytes per second the weights' copies share; null: no limit


class Network(Config):
    latency: Seconds = 0.0
    bandwidth: Annotated[float, Field(gt=0)] | None = None  # bytes per second; null: infinite
    downlink: Annotated[float, Field(gt=0)] | None = None  # bytes per second each node receives at; null: infinite
    shared_link: bool = False
    # the event engine's model of the shared link: a chain of calendar events (fast), or a simpy.Resource
    link_model: Literal["events", "resource"] = "events"
    # seconds from the master's sending a job to its worker starting it (one draw per job; null: none). The
    # simulator models it; a real cluster takes its own (real mode never sleeps it).
    dispatch: Distribution | None = None
    master: MasterLinks = MasterLinks()
    nodes: dict[Annotated[int, Field(ge=0)], NodeLinks] = {}  # a topology's node -> its own settings
    # how unequally fairly shared links are shared: 0, equally (max-min); u, the flow that joined a link first
    # weighs 1 and every later one 1 - u (TCP's sending flow keeps more: gcbench/models/fair_share.py)
    unfairness: Annotated[float, Field(ge=0, lt=1)] = 0.0
    # what becomes of a message of work the master abandoned (stale_work: abandon) once its worker has sent it:
    # drop, it leaves the links at once (each iteration's messages have links of their own); finish, it crosses
    # them to its end, sharing them with the next iterations' messages and weights, as TCP sends what it was
    # given (a real cluster's, and the emulated one's; the event engine's only). Work not yet computed is
    # stopped either way.
    abandoned_messages: Literal["drop", "finish"] = "drop"
    # bytes a node's link sends at once after it has idled, beyond its rate: a token bucket's depth, which shaped
    # links keep (tc's tbf, as the emulated cluster shapes; a cloud's rate limiter). The bucket refills at the
    # link's rate while the link idles, up to ``burst``; a message joining an idle link crosses its first bytes
    # at once. 0: none (a NIC at line rate). Fairly shared links only (a topology's, or the master's NIC)
    burst: Annotated[float, Field(ge=0)] = 0.0

    def arrivals(self, ready: np.ndarray, message_bytes: int, delay: float | None = None) -> np.ndarray:
        """Arrival times at the master of messages ready at ``ready`` (inf: never sent).

        ``ready`` may hold one row per iteration; messages of different rows never share the link. ``delay``:
        seconds every message takes besides its transfer (default the latency; a compressed message's adds the
        time to compress and decompress it).
        """
        transfer = 0.0 if self.bandwidth is None else message_bytes / self.bandwidth
        delay = self.latency if delay is None else delay
        ready = np.asarray(ready, dtype=float)
        # adding a zero changes no time (times are never -0.0): skipped, as a pass over the array and a temporary
        reach = ready + delay if delay else _read_only(ready)
        if not self.shared_link or transfer == 0.0:
            return reach + transfer if transfer else reach
        order = np.argsort(reach, axis=-1, kind="stable")
        sorted_reach = np.take_along_axis(reach, order, axis=-1)
        # FIFO queue: departure_i = max(reach_i, departure_{i-1}) + transfer, unrolled as a running max
        steps = np.arange(1, reach.shape[-1] + 1) * transfer
        departures = steps + np.maximum.accumulate(sorted_reach - steps + transfer, axis=-1)
        out = np.empty_like(reach)
        np.put_along_axis(out, order, departures, axis=-1)
        return out


def _read_only(times: np.ndarray) -> np.ndarray:
    """A view of ``times`` that no caller can write to (the arrivals may be the caller's own ready times)."""
    view = times.view()
    view.flags.writeable = False
    return view
