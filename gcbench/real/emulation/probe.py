"""A message sent over TCP from one node of an emulated cluster to another, timed: what a link carries, for the
tests and benchmarks/emulated_cluster.py to hold against the rate set."""

from __future__ import annotations

import subprocess
import sys

from gcbench.real.emulation.cluster import EmulatedCluster

PORT = 5001
RECEIVER = f"""
import socket, sys
server = socket.create_server((sys.argv[1], {PORT}))
print("listening", flush=True)
connection, _ = server.accept()
received = 0
while chunk := connection.recv(1 << 20):
    received += len(chunk)
connection.sendall(str(received).encode())
"""
SENDER = f"""
import socket, sys, time
payload = b"x" * int(sys.argv[2])
connection = socket.create_connection((sys.argv[1], {PORT}))
began = time.perf_counter()
connection.sendall(payload)
connection.shutdown(socket.SHUT_WR)
received = int(connection.recv(64))
print(received, time.perf_counter() - began)
"""


def transfer(cluster: EmulatedCluster, sender: int, receiver: int, size: int) -> tuple[int, float]:
    """Send ``size`` bytes from node ``sender`` to node ``receiver``: the bytes the receiver counted, and the
    seconds from the first byte sent to that count coming back (one round trip more than the transfer)."""
    address = cluster.addresses[receiver]
    listening = cluster.start_in(receiver, [sys.executable, "-c", RECEIVER, address], stdout=subprocess.PIPE,
                                 text=True)  # fmt: skip
    try:
        if listening.stdout.readline().strip() != "listening":
            raise RuntimeError(f"the receiver on node {receiver} did not start")
        sent = cluster.run_in(sender, [sys.executable, "-c", SENDER, address, str(size)], capture_output=True,
                              text=True, timeout=600, check=True)  # fmt: skip
        listening.wait(60)
    finally:
        listening.kill()
    received, seconds = sent.stdout.split()
    return int(received), float(seconds)
