"""Whether this machine lets an unprivileged process build an emulated cluster: user namespaces allowed, and the
iproute2 and util-linux commands it runs. Checked before anything starts, so a machine that cannot is one sentence
naming what to change, and exit 2."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from gcbench.errors import GcbenchError

COMMANDS = {"unshare": "util-linux", "nsenter": "util-linux", "ip": "iproute2", "tc": "iproute2"}
# each setting that can forbid unprivileged user namespaces, with the value that allows them
SETTINGS = (
    ("sys/kernel/unprivileged_userns_clone", "kernel.unprivileged_userns_clone", lambda value: value != "0", "1"),
    (
        "sys/user/max_user_namespaces",
        "user.max_user_namespaces",
        lambda value: value.isdigit() and int(value) > 0,
        "a positive number",
    ),  # fmt: skip
    (
        "sys/kernel/apparmor_restrict_unprivileged_userns",
        "kernel.apparmor_restrict_unprivileged_userns",
        lambda value: value == "0",
        "0 (or an AppArmor profile that allows gcbench's python)",
    ),  # fmt: skip
)


def namespaces_refused(proc: Path = Path("/proc"), trial: bool = True) -> str | None:
    """None where this machine can build an emulated cluster; otherwise one sentence naming what forbids it and
    what would allow it. ``trial``: also start an empty user and network namespace, the test that settles it."""
    for command, package in COMMANDS.items():
        if shutil.which(command) is None:
            return f"--emulate needs the '{command}' command ({package}), which is not installed here."
    for path, name, allows, allowed in SETTINGS:
        file = proc / path
        if file.is_file():
            value = file.read_text().strip()
            if not allows(value):
                return (
                    f"--emulate needs unprivileged user namespaces, which this machine forbids: {name} is {value} "
                    f"(it must be {allowed}; `sysctl -w {name}=...` as root)."
                )
    if trial:
        done = subprocess.run(["unshare", "-rn", "true"], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
            return (
                f"--emulate needs unprivileged user namespaces, and `unshare -rn true` failed here ({why}); a "
                "container may forbid them (Docker's default seccomp profile does: run it with "
                "--security-opt seccomp=unconfined)."
            )
    return None


def require_namespaces() -> None:
    """Refuse, in one sentence, where this machine cannot build an emulated cluster."""
    refused = namespaces_refused()
    if refused:
        raise GcbenchError(refused)
