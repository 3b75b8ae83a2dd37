"""A worker session's channel (gcbench/real/processes/channel.py): every message, posted without waiting, arrives
whole and in order with its arrays and its attachment, on two two-rank gloo groups (an echo process at the
other end)."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")

from gcbench.real.processes import channel as torch_channel  # noqa: E402

ECHO = """
import sys
from gcbench.real.processes import channel as c
store = c.store(int(sys.argv[1]), 60.0)
down, up = (c.group(store, 0, 0, direction, 1, 60.0) for direction in (c.DOWN, c.UP))
sender = c.Sender(up, 0, 0)
c.receive_forever(down, 0, sender.send)
"""


def read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def messages() -> list[dict]:
    rng = np.random.default_rng(0)
    return [
        {"kind": "job", "job": 3, "crash": False, "weights": rng.random(100_000, dtype=np.float32)},
        {
            "kind": "reply",
            "job": 3,
            "reply": {"messages": [rng.random(7), read_only(rng.random(5))], "losses": {0: 1.5}},
        },
        {"kind": "data", "shards": {j: (rng.random((4, 3)), np.arange(4)) for j in range(12)}},
        {
            "kind": "odd",
            "job": 4,
            "empty": np.zeros(0),
            "fortran": np.asfortranarray(rng.random((3, 4))),
            "strided": rng.random(10)[::3],
        },
        {"kind": "stop"},
    ]


def assert_same(got, sent) -> None:
    if isinstance(sent, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == sent.dtype and got.shape == sent.shape
        np.testing.assert_array_equal(got, sent)
    elif isinstance(sent, dict):
        assert got.keys() == sent.keys()
        for key in sent:
            assert_same(got[key], sent[key])
    elif isinstance(sent, list | tuple):
        assert len(got) == len(sent)
        for a, b in zip(got, sent, strict=True):
            assert_same(a, b)
    else:
        assert got == sent


@pytest.mark.slow
def test_posted_messages_arrive_whole_in_order_with_their_arrays():
    """Slow: the echo process imports torch."""
    store = torch_channel.store(0, 60.0)
    echo = subprocess.Popen([sys.executable, "-c", ECHO, str(store.port)])
    try:
        down, up = (torch_channel.group(store, 0, 0, direction, 0, 60.0) for direction in ("down", "up"))
        inbox: queue.Queue = queue.Queue()
        threading.Thread(target=torch_channel.receive_forever, args=(up, 1, inbox.put), daemon=True).start()
        sender, sent = torch_channel.Sender(down, 0, 1), messages()
        for message in sent:
            sender.post(message)  # (each waits for the one before it)
        # one value pickled once, attached to two messages: each arrives with it under its key
        weights = np.random.default_rng(1).random(50_000, dtype=np.float32)
        attachment = torch_channel.Attachment("weights", weights)
        attached = [{"kind": "job", "job": 5 + i, "crash": False} for i in range(2)]
        for message in attached:
            sender.post(message, attachment)
        sender.wait()
        for message in [*sent, *({**m, "weights": weights} for m in attached)]:
            assert_same(inbox.get(timeout=60), message)  # there and back: both directions
    finally:
        echo.kill()
        echo.wait()
