"""A sweep's tasks as Ray tasks (`gcbench simulate --ray`), on the Ray instance this process has joined.

Each task runs wherever Ray places it and writes its tables as a part, as a
local worker process does (``run_part``); the part comes back as its files'
Parquet bytes, since a cluster's nodes share no folder. The driver appends the
parts in task order, exactly as ``--jobs`` does, so the files and the summary
are a local run's, bit for bit.

A task lost with its worker process or its node is run again, up to ``RETRIES``
times (Ray's ``max_retries``): a task is seeded only by its seed, so a rerun
gives the same tables. An error the task raises itself is never retried
(``retry_exceptions`` off): it would only raise again. A user's error
(GcbenchError) is raised here as it is, as a local run raises it; any other
keeps Ray's report, with the traceback from where it ran. Ray is imported only
here, when ``--ray`` is given.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from gcbench.errors import GcbenchError
from gcbench.results.stream import ResultsWriter
from gcbench.results.summary import RunningSummary
from gcbench.scenario.loading import SweepPoint
from gcbench.sim.tasks import Tables, Task, append_part, run_part

RETRIES = 3  # reruns of a task lost with its worker or node (Ray's own default for tasks)
AHEAD = 2  # tasks sent ahead of the one appended next, per CPU of the cluster


def task_files(point: SweepPoint, index: int, task: Task, tables: Tables) -> dict[str, bytes]:
    """One task's part, written in a temporary folder where the task runs, as its files' bytes."""
    with tempfile.TemporaryDirectory(prefix="gcbench-part-") as folder:
        run_part(point, index, task, tables, Path(folder))
        return {path.name: path.read_bytes() for path in sorted(Path(folder).glob("*.parquet"))}


def in_ray(
    points: list[SweepPoint],
    tasks: list[tuple[int, Task]],
    tables: Tables,
    writer: ResultsWriter,
    running: RunningSummary,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Every task on Ray, each one's part appended to ``writer`` in task order as it is ready.

    Tasks are sent ``AHEAD`` times the cluster's CPUs ahead of the one appended next, and each part is let go
    once appended, so the object store holds that many tasks' parts at most, not the run's.
    """
    import ray

    remote = ray.remote(num_cpus=1, max_retries=RETRIES, retry_exceptions=False)(task_files)
    shared = [ray.put(point) for point in points]  # each point travels once, not once per task
    window = AHEAD * max(1, int(ray.cluster_resources().get("CPU", 1)))
    sent: dict[int, ray.ObjectRef] = {}

    def send(k: int) -> None:
        if k < len(tasks):
            sent[k] = remote.remote(shared[tasks[k][0]], tasks[k][0], tasks[k][1], tables)

    try:
        for k in range(window):
            send(k)
        with tempfile.TemporaryDirectory(prefix=".parts-", dir=writer.directory) as parts:
            for k, (i, task) in enumerate(tasks):
                files = _result(sent.pop(k), describe(points[i], task))
                send(k + window)  # before appending: the cluster works while this process writes
                append_part(writer, running, _unpack(files, Path(parts) / f"task{k}"))
                if progress:
                    progress(k + 1)
    except BaseException:
        for ref in sent.values():
            ray.cancel(ref)
        raise


def _result(ref, what: str) -> dict[str, bytes]:
    """The task's files; its user error as a local run raises it; one sentence when Ray lost it every time."""
    import ray
    from ray import exceptions

    try:
        return ray.get(ref)
    except exceptions.RayTaskError as error:
        if isinstance(error.cause, GcbenchError):
            raise error.cause from None
        raise
    except (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.ObjectLostError) as error:
        raise GcbenchError(
            f"{what} was lost with its Ray worker or node {RETRIES + 1} times ({type(error).__name__}); check the "
            "cluster's nodes, or run the sweep here without --ray."
        ) from None
    except exceptions.OutOfMemoryError:
        raise GcbenchError(
            f"{what} ran out of memory on its Ray node; give the cluster's nodes more memory, or simulate with "
            "--no-workers-table or fewer iterations."
        ) from None


def describe(point: SweepPoint, task: Task) -> str:
    """'the task of variant 'CR s=1', seed 2, at sweep point 1 (straggling.slowdown = 8)'."""
    label = point.scenario.variants[task.variant].display_label()
    where = ", ".join(f"{name} = {value}" for name, value in point.values.items())
    return f"the task of variant '{label}', seed {task.seed}, at sweep point {task.point}" + (
        f" ({where})" if where else ""
    )


def _unpack(files: dict[str, bytes], folder: Path) -> Path:
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder
