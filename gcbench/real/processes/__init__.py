"""Worker processes of their own, what the torch backend and the DDP baseline share: each process's channel
to the driver (channel.py), the driver's end of a session (session.py), the process's side of it (child.py),
and the zygote that forks them (zygote.py). Here: whether a process still runs on this machine, what every
backend's ``leftovers`` reports after shutdown."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs here (a zombie, exited but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True  # no /proc (macOS): it answered the signal
