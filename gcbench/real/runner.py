"""Run a scenario for real: every variant and seed on Ray (or the local backend); results in the shared schema."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gcbench.errors import GcbenchError
from gcbench.real.asynchronous import AsyncRayMaster
from gcbench.real.checkpoint import load_checkpoint, save_checkpoint
from gcbench.real.data import DEFAULT_CACHE, Dataset, cifar10, synthetic
from gcbench.real.gradients import evaluate, recalibrate_batch_norm
from gcbench.real.local import train_local
from gcbench.real.master import RayMaster, Step
from gcbench.real.models import resolve_device
from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario, Variant


class VariantStopped(GcbenchError):
    """A variant could not go on (e.g. its cluster is stuck); carries the tables of the iterations it finished."""

    def __init__(self, message: str, iterations: pd.DataFrame, workers: pd.DataFrame) -> None:
        super().__init__(message)
        self.iterations, self.workers = iterations, workers


def load_data(scenario: Scenario) -> Dataset:
    training = scenario.training
    if training.dataset == "synthetic":
        return synthetic()
    cache = Path(training.cache_dir) if training.cache_dir else DEFAULT_CACHE
    return cifar10(Path(training.data_dir) if training.data_dir else None, cache)


LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # 0: Ray's node address is 127.0.0.1, as on macOS and Windows
METRICS = "RAY_enable_metrics_collection"  # Ray's own switch; gcbench turns it off unless the user set it


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
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(include_dashboard=False, log_to_driver=False, **local_ray_options())
    except (ConnectionError, RuntimeError, ValueError) as error:
        hint = (
            "; check the address, and that ~/.ray/auth_token holds the cluster's token (ray get-auth-token)"
            if address
            else ""
        )
        raise GcbenchError(f"cannot start or reach Ray{f' at {address}' if address else ''}: {error}{hint}.") from None


def local_ray_options() -> dict:
    """ray.init's options for a local instance: no metrics export unless the user asked for it."""
    if METRICS in os.environ:
        return {}
    return {"_system_config": {"enable_metrics_collection": False}}


def run_variant(
    scenario: Scenario,
    variant: Variant,
    data: Dataset,
    seed: int,
    progress: Callable[[int], None] | None = None,
    checkpoint: Path | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train one variant for the scenario's iterations; iterations and workers tables.

    With ``checkpoint``, the run saves every ``training.checkpoint_every`` iterations
    and, if a checkpoint exists, continues from it (times continue from where it stopped).
    """
    training = scenario.training
    scheme = scheme_for(scenario, variant)
    state = load_checkpoint(checkpoint) if checkpoint else None
    if state is not None and state["next_iteration"] >= scenario.iterations:  # finished before the interruption
        return _frames(state["rows"], state["workers"], scenario, variant, scheme, seed)
    master_class = RayMaster if variant.policy.synchronous else AsyncRayMaster
    master = master_class(scenario, variant, scheme, data, seed, str(resolve_device(training.device)))
    rows, workers, first = [], [], 0
    if state is not None:
        master.model.load_state_dict(state["model"])
        master.optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        rows, workers, first = state["rows"], state["workers"], state["next_iteration"]
        master.origin -= rows[-1]["end"] if rows else 0.0  # the clock continues from the checkpoint
    table = WorkerTable(workers, scheme, master.origin)
    evaluation_threads = torch.get_num_threads()
    try:
        with torch_threads(master_threads(scheme.n)):
            for t, step in enumerate(master.steps(first, scenario.iterations), start=first):
                accuracy = np.nan
                if (t + 1) % training.eval_every == 0 or t == scenario.iterations - 1:
                    with torch_threads(evaluation_threads):
                        accuracy = evaluate_master(master.model, data, training.batch_size)
                rows.append(_iteration_row(t, step, master.origin, scheme, accuracy))
                table.add(t, step)
                if checkpoint and ((t + 1) % training.checkpoint_every == 0 or t == scenario.iterations - 1):
                    save_checkpoint(checkpoint, master.model, master.optimizer, t + 1, rows, workers)
                if progress:
                    progress(t + 1)
        table.add_late(master.finish())
    except GcbenchError as error:
        raise VariantStopped(str(error), *_frames(rows, workers, scenario, variant, scheme, seed)) from None
    finally:
        master.shutdown()
    return _frames(rows, workers, scenario, variant, scheme, seed)


def evaluate_master(model: torch.nn.Module, data: Dataset, batch_size: int) -> float:
    """Test accuracy of the master's model (on the CPU), with its BatchNorm statistics set first."""
    cpu = torch.device("cpu")
    recalibrate_batch_norm(model, data.train_images, cpu, chunk=batch_size)
    return evaluate(model, data.test_images, data.test_labels, cpu)


def master_threads(workers: int) -> int:
    """Torch threads for the master's decode and step: the cores its local workers leave free.

    On a single-node cluster the workers share this machine's cores; spare
    OpenMP threads in the master would only spin against them.
    """
    import ray

    if len([node for node in ray.nodes() if node.get("Alive")]) > 1:
        return torch.get_num_threads()
    return max(1, (os.cpu_count() or 1) - workers)


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _frames(rows, workers, scenario, variant, scheme, seed) -> tuple[pd.DataFrame, pd.DataFrame]:
    keys = {"variant": variant.display_label(), "scheme": variant.scheme, "s": variant.s, "m": scheme.m}
    keys.update(policy=variant.policy.name, point=0, seed=seed)
    iterations = pd.DataFrame(rows).assign(**keys)
    return iterations, pd.DataFrame(workers).assign(variant=keys["variant"], point=0, seed=seed)


def _iteration_row(t: int, step: Step, origin: float, scheme, accuracy: float) -> dict:
    return {
        "iteration": t, "start": step.start - origin, "end": step.end - origin, "duration": step.end - step.start,
        "messages_used": step.messages_used, "stop": step.reason, "exact": step.exact,
        "residual": step.residual, "staleness": step.staleness, "loss": step.loss, "accuracy": accuracy,
    }  # fmt: skip


class WorkerTable:
    """The workers table's rows (one per iteration and worker), kept in ``rows`` as they are built.

    Work the master stopped waiting for reports its timings later (``Step.late``);
    those fill in the rows of the iteration it belonged to.
    """

    def __init__(self, rows: list[dict], scheme, origin: float) -> None:
        self.rows, self.scheme, self.origin = rows, scheme, origin
        self.index = {(row["iteration"], row["worker"]): row for row in rows}

    def add(self, t: int, step: Step) -> None:
        for w in range(self.scheme.n):
            timing = step.timings.get(w)
            row = {"iteration": t, "worker": w, "partitions": len(self.scheme.partitions(w))}
            row.update(used=timing is not None, straggling=step.straggling.get(w, False), failed=w in step.failed)
            row.update(compute_start=np.nan, compute_end=np.nan, injected_delay=np.nan, arrival=np.nan)
            if timing is not None:
                row.update(
                    compute_start=timing["compute_start"] - self.origin,
                    compute_end=timing["ready"] - self.origin,
                    injected_delay=timing["injected"],
                    arrival=step.start - self.origin + step.arrivals[w],
                )
            self.rows.append(row)
            self.index[(t, w)] = row
        self.add_late(step.late)

    def add_late(self, late: list[dict]) -> None:
        for timing in late:
            row = self.index.get((timing["iteration"], timing["worker"]))
            if row is None or row["used"]:
                continue
            row.update(
                compute_start=timing["compute_start"] - self.origin,
                compute_end=timing["compute_end"] - self.origin,
                injected_delay=timing["injected"],
                arrival=timing["arrival"] - self.origin,
            )


def run_local(scenario: Scenario, data: Dataset, seed: int, progress=None) -> tuple[pd.DataFrame, None]:
    """The single-process baseline on the same mini-batches (k = workers partitions)."""
    device = resolve_device(scenario.training.device)
    frame = train_local(data, scenario.training, scenario.workers, scenario.iterations, seed, device, progress)
    return frame, None
