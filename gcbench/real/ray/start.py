"""Start Ray for gcbench, or join a cluster: token authentication on, a local instance on loopback only.

Apart from the runner so that what needs only Ray (`gcbench simulate --ray`)
starts it without importing torch.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

from gcbench.errors import GcbenchError

LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # 0: Ray's node address is 127.0.0.1, as on macOS and Windows
METRICS = "RAY_enable_metrics_collection"  # Ray's own switch; gcbench turns it off unless the user set it
DEATH_INFO_WAIT = "RAY_timeout_ms_task_wait_for_death_info"  # Ray's own; gcbench sets 0 unless the user set it


def start_ray(address: str | None) -> None:
    """Join the cluster at ``address``, or start a local instance reachable from this machine only.

    Token authentication stays on: Ray 2.60 turns it on for a new local instance,
    but a client given an explicit address only uses it when ``RAY_AUTH_MODE``
    says so, so gcbench sets ``RAY_AUTH_MODE=token`` unless the user set it.
    The token is the cluster's (``~/.ray/auth_token`` by default).

    A local instance is kept to the loopback interface: with
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` Ray takes 127.0.0.1 as the node's
    address, as it does on macOS and Windows, and its gRPC servers and agents
    bind to it (``_node_ip_address`` alone does not: Ray replaces 127.0.0.1 by
    the machine's address). Its metrics export (a Prometheus endpoint without a
    token) is off unless ``RAY_enable_metrics_collection`` is set. What still
    listens is in docs/security.md. Ray reads these settings when it is
    imported, so they are set before the import.
    """
    if address:
        os.environ.setdefault("RAY_AUTH_MODE", "token")
    else:
        os.environ.setdefault(LOOPBACK_ONLY, "0")
    import ray

    if ray.is_initialized():
        return
    try:
        if address:
            # (its INFO line "Connecting to existing Ray cluster at address ..." says what the command line did)
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        else:
            with sessions_of_their_own():
                ray.init(include_dashboard=False, log_to_driver=False, **local_ray_options())
    except (ConnectionError, RuntimeError, ValueError) as error:
        hint = (
            "; check the address, and that ~/.ray/auth_token holds the cluster's token (ray get-auth-token)"
            if address
            else ""
        )
        raise GcbenchError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {error}{hint}.") from None


@contextmanager
def sessions_of_their_own() -> Iterator[None]:
    """The processes a local Ray instance starts (its GCS, raylet, monitors; the raylet's workers follow
    the raylet) get sessions, so process groups, of their own, not the driver's.

    A scheduler's SIGTERM to the driver's process group (SLURM's, or ``kill -TERM -PGID``) otherwise reaches
    the raylet too: it stopped at once, and Ray's core worker ended the driver with status 1 before gcbench's
    handler (which runs between the driver's 50 ms waits) could stop the run and say how to resume
    (tests/test_real_resume.py, 3 runs in about 10 on a loaded machine). Now only the driver gets the signal,
    and it stops Ray itself. Ray still ends them if the driver dies (its fate sharing, PR_SET_PDEATHSIG,
    does not depend on the group). Done by giving Ray's ``ConsolePopen`` ``start_new_session`` while
    ``ray.init`` runs; where that class is missing (another Ray version) Ray starts them as it always did."""
    import ray._private.services as services

    original = getattr(services, "ConsolePopen", None)
    if original is None or os.name != "posix":
        yield
        return

    class SessionPopen(original):
        def __init__(self, *args, **kwargs) -> None:
            kwargs.setdefault("start_new_session", True)
            super().__init__(*args, **kwargs)

    services.ConsolePopen = SessionPopen
    try:
        yield
    finally:
        services.ConsolePopen = original


def local_ray_options() -> dict:
    """ray.init's options for a local instance: no metrics export unless the user asked for it, and a worker's
    exit noticed at once.

    When an actor's process exits, Ray fails its tasks only once it has the
    death's cause, or after ``timeout_ms_task_wait_for_death_info`` (1 s): the
    cause came late on these machines, so a crash was noticed 1.4 to 1.9 s after
    the exit. Without the wait it is noticed within 8 to 15 ms (12 crashes in a
    row); gcbench never shows the cause. The Ray crash checks of
    tests/test_cluster_conformance.py fail without it.
    """
    config = {} if METRICS in os.environ else {"enable_metrics_collection": False}
    if DEATH_INFO_WAIT not in os.environ:
        config["timeout_ms_task_wait_for_death_info"] = 0
    return {"_system_config": config} if config else {}
