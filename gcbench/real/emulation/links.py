"""A node's links as the kernel shapes them: a token bucket (tc's ``tbf``) on each end of the node's veth pair, the
uplink on the node's side and the downlink on the bridge's.

A scenario's bandwidth is the rate a message's bytes travel at. On the wire each TCP segment of 1448 bytes of
payload (an MTU of 1500 less the IP and TCP headers, TCP timestamps on) is a frame of 1514 bytes, and a token
bucket counts frames: a link set to the scenario's rate carried 95.6% of it (19.13 Mb/s of payload through a
20 Mb/s bucket, 956 Mb/s through 1 Gb/s, measured here). The bucket's rate is therefore the scenario's times
1514/1448, so that messages travel at the rate the scenario sets (benchmarks/emulated_cluster.py measures it).
"""

from __future__ import annotations

from dataclasses import dataclass

INTERFACE = "eth0"  # each node's one interface: its end of the veth pair, on the bridge, at its address
FRAME_BYTES, PAYLOAD_BYTES = 1514, 1448  # a full TCP segment on the wire, and the message bytes it carries
KERNEL_TICK = 1 / 250  # seconds: a bucket must hold at least a tick's worth of tokens to reach its rate
MIN_BURST = 16 * 1024  # bytes: at least a few frames, whatever the rate
QUEUE_DELAY = "100ms"  # how long a frame may wait in the bucket's queue before it is dropped


@dataclass(frozen=True)
class LinkRates:
    """A node's link rates, in bytes a second of message payload each way (None: not shaped)."""

    up: float | None = None  # from the node: its workers' uploads
    down: float | None = None  # to the node: the weights it is sent

    def __post_init__(self) -> None:
        for name in ("up", "down"):
            rate = getattr(self, name)
            if rate is not None and not rate > 0:
                raise ValueError(f"a link's {name} rate must be positive bytes per second, got {rate!r}")


def bucket_bytes(rate: float) -> int:
    """The depth of the token bucket that shapes a link to ``rate`` bytes a second of payload: bytes of frames."""
    return max(MIN_BURST, int(rate * FRAME_BYTES / PAYLOAD_BYTES * KERNEL_TICK))


def payload_burst(rate: float | None) -> float:
    """The message bytes such a link sends at once after idling (its bucket, less the frames' headers; 0: not
    shaped): a scenario's ``network.burst`` for it (gcbench calibrate reads it from run.json)."""
    return 0.0 if rate is None else bucket_bytes(rate) * PAYLOAD_BYTES / FRAME_BYTES


def shaping(device: str, rate: float | None) -> list[list[str]]:
    """The tc commands that shape what leaves ``device`` to ``rate`` bytes a second of payload (none: not shaped)."""
    if rate is None:
        return []
    wire = rate * FRAME_BYTES / PAYLOAD_BYTES  # bytes a second of frames
    burst = bucket_bytes(rate)
    bits = max(8, round(wire * 8))
    return [["tc", "qdisc", "replace", "dev", device, "root", "tbf", "rate", f"{bits}bit", "burst", str(burst),
             "latency", QUEUE_DELAY]]  # fmt: skip
