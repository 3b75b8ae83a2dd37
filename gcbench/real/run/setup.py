"""A real run from the command line's choices to its summary (``real_run``): a new run's scenario, results directory
and run.json, or an interrupted run's, taken up where its checkpoints left it; checked, trained and summarised, with
an ``Outcome`` that gcbench/cli/run.py prints.

Nothing here imports torch at import time, so the checks of a scenario and of run.json answer before it loads.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from gcbench.cluster import backend_class
from gcbench.errors import GcbenchError
from gcbench.real.run.resume import continued, finished_before_status, read_run_json, resumed_scenario
from gcbench.real.run.scenario import (
    check_real,
    real_scenario,
    refuse_pipelined_without_caches,
    refuse_sequential_without_earlier_weights,
    with_trained_gradient,
)
from gcbench.results import summarize
from gcbench.results.metadata import new_run_directory, resume_entry, run_metadata
from gcbench.results.store import check_out
from gcbench.scenario.build import partition_shares
from gcbench.scenario.loading import SweepPoint
from gcbench.scenario.schema import Scenario


@dataclass
class RealRun:
    """What a session trains: the scenario, its file, the backend, the results directory and run.json."""

    scenario: Scenario
    path: Path
    backend: str
    out: Path
    meta: dict[str, Any]
    resumed: bool = False

    @property
    def complete(self) -> bool:
        """A resumed run that had finished: nothing to do."""
        return self.resumed and self.meta.get("status") == "complete"

    @property
    def planned(self) -> int:
        """The iterations the backend's runs of the scenario will train, all together."""
        return backend_class(self.backend).planned(self.scenario)

    def check_backend(self) -> None:
        """What the backend and this machine must offer the scenario, before the data is read and Ray starts."""
        from gcbench.training.device import check_ddp_backend, check_device

        refuse_pipelined_without_caches(self.scenario, self.backend)
        refuse_sequential_without_earlier_weights(self.scenario, self.backend)
        check_device(self.scenario.training.device)
        if any(not variant.policy.needs_master for variant in self.scenario.variants):  # the DDP baseline
            check_ddp_backend(self.scenario.training)

    @contextmanager
    def driving(self) -> Iterator[None]:
        """The backend's frame around the run (under torchrun: the world fits, and the agents end with it)."""
        with backend_class(self.backend).driving(self.scenario):
            yield


def new_run(
    path: Path,
    backend: str,
    out: Path | None,
    iterations: int | None,
    training: dict[str, Any],
    choose: dict[str, Any] | None = None,
    force: bool = False,
) -> RealRun:
    """A new run of the scenario file with the command line's overrides, in ``out`` or a new directory."""
    scenario = with_trained_gradient(real_scenario(path, iterations, training, **(choose or {})))
    out = out or new_run_directory(Path("results"), f"{scenario.name}-real")
    refuse_checkpoints(out, force)  # before check_out: a run with checkpoints is resumed, or begun again by --force
    check_out(out, force)
    extra = {"backend": backend, "cores": machine_cores(), "partition_shares": partition_shares(scenario)}
    extra.update(emulated_cluster(scenario))
    meta = run_metadata("real", path, [SweepPoint({}, scenario)], extra)
    return RealRun(scenario, path, backend, out, meta)


def checked_run(path: Path, backend: str, iterations: int | None, training: dict[str, Any],
                choose: dict[str, Any] | None = None) -> str:  # fmt: skip
    """``gcbench run --check``: the scenario as the run would take it, refused in one sentence where the backend or
    this machine could not run it (a CIFAR-10 copy that is not there included); what would run. Nothing starts."""
    scenario = real_scenario(path, iterations, training, **(choose or {}))
    RealRun(scenario, path, backend, Path("."), {}).check_backend()
    data = ""
    if scenario.training.dataset == "cifar10":
        from gcbench.training.data import find_cifar10

        data = f" CIFAR-10 from {find_cifar10(scenario.training)}."
    seeds, count = len(scenario.seeds), len(scenario.variants)
    what = f"{count} variant{'s' if count != 1 else ''} x {seeds} seed{'s' if seeds != 1 else ''}"
    where = f"would train on the {backend} backend; nothing was run."
    return f"{path}: {what} x {scenario.iterations} iterations {where}{data}"


def emulated_cluster(scenario: Scenario) -> dict[str, Any]:
    """run.json's record of the emulated cluster this run trains on (none outside one): each node's address,
    link rates (bytes a second of message payload each way; null: unshaped) and the message bytes each link sends
    at once after idling (its token bucket: ``network.burst``), and each worker's node."""
    from gcbench.real.emulation.links import payload_burst
    from gcbench.real.run.emulated import inside_emulation, node_specs, worker_nodes

    nodes = inside_emulation()
    if nodes is None:
        return {}
    links = [{"up": spec.links.up, "down": spec.links.down, "up_burst": payload_burst(spec.links.up),
              "down_burst": payload_burst(spec.links.down)} for spec in node_specs(scenario)]  # fmt: skip
    nodes_record = [{"address": address, **link} for address, link in zip(nodes.addresses, links, strict=True)]
    return {"emulated": {"nodes": nodes_record, "worker_nodes": worker_nodes(scenario)}}


def machine_cores() -> int:
    """The cores this process may run on (the workers of a local cluster share them): gcbench calibrate models
    their contention when there are fewer than workers."""
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def resumed_run(run_dir: Path) -> RealRun:
    """The rest of the interrupted run in ``run_dir``, as its run.json set it up."""
    meta = read_run_json(run_dir)
    scenario = resumed_scenario(meta, run_dir)
    check_real(scenario, run_dir / "run.json")
    return RealRun(scenario, Path(meta["scenario_file"]), meta["backend"], run_dir, meta, resumed=True)


def serve_as_helper(backend: str) -> bool:
    """Where this process was launched as a helper of the run rather than its driver (under torchrun, a rank
    other than 0 is worker (rank - 1)'s agent): it serves until the driver's run is over; True when it did."""
    return backend_class(backend).serve_helper()


def refuse_checkpoints(out: Path, force: bool = False) -> None:
    """A new run never picks up another run's checkpoints: it refuses them, or with ``force`` deletes them (the run
    they were of is overwritten, its tables too)."""
    folder = out / "checkpoints"
    if not (folder.is_dir() and any(folder.iterdir())):
        return
    if force:
        shutil.rmtree(folder)
        return
    raise GcbenchError(
        f"--out {out} already holds a run's checkpoints; continue that run with --resume {out}, start it again "
        "from its first iteration with --force (its checkpoints and tables are deleted), or choose another --out."
    )


@dataclass(frozen=True)
class Outcome:
    """How a real run ended: ``complete`` (a resumed run had nothing left to train), ``trained`` or ``stopped`` (a
    variant stopped early; ``session`` holds what it trained, ``iterations`` and ``summary`` its tables, written to
    ``out``), or ``interrupted`` by a signal (``message``: what was kept and how to resume; ``exit_code``: 130 for
    SIGINT, 143 for SIGTERM)."""

    status: str
    session: Any = None
    message: str = ""
    exit_code: int = 0
    out: Path | None = None
    iterations: pd.DataFrame | None = None
    summary: pd.DataFrame | None = None


def real_run(
    request: RunRequest, address: str | None, display: Callable[[], Any], say: Callable[[str], None]
) -> Outcome:
    """A real run from the command line's choices to its summary.csv: a new run of the scenario file, or the rest of
    the interrupted run in ``request.resume``; checked against the backend and this machine before the data is read
    and Ray starts, trained in the backend's frame (``driving``), then summarised. ``display()`` makes the progress
    display once the backend has started; ``say`` prints a line. The caller prints the outcome."""
    if request.resume is not None:
        run = resumed_run(request.resume)
        if run.complete:
            return Outcome("complete", message=complete_sentence(run), out=run.out)
    else:
        run = new_run(request.path, request.backend, request.out, request.iterations, request.training,
                      request.choose, request.force)  # fmt: skip
    run.check_backend()
    with run.driving():
        outcome = train(run, address, display, say)
        if outcome.status in ("trained", "stopped"):
            iterations, summary = write_summary(outcome.session, run.out)
            outcome = replace(outcome, iterations=iterations, summary=summary)
    return replace(outcome, out=run.out)


@dataclass(frozen=True)
class RunRequest:
    """What the command line asks of a real run: the scenario file and backend, with its overrides, or an
    interrupted run's directory to resume (whose run.json then says everything else)."""

    path: Path
    backend: str
    out: Path | None = None
    iterations: int | None = None
    training: dict[str, Any] = field(default_factory=dict)
    choose: dict[str, Any] | None = None
    force: bool = False
    resume: Path | None = None


def train(run: RealRun, address: str | None, display: Callable[[], Any], say: Callable[[str], None]) -> Outcome:
    """Train the run to its end, or until Ctrl-C or SIGTERM, which leave its checkpoints and rows as they are.
    ``display()``: the progress display, made once the backend has started; ``say``: a line to print (data
    decoding, the runs a resume continues). The caller prints the outcome."""
    from gcbench.real.run.session import EXIT_CODES, Terminated, sigterm_as_interrupt

    guard, started = sigterm_as_interrupt(), []
    try:
        with guard:
            session = open_session(run, address, display, guard, say)
            if session is None:
                return Outcome("complete", message=complete_sentence(run))
            started.append(session)
            status = session.train()
    except KeyboardInterrupt as interrupt:
        how = "SIGTERM" if isinstance(interrupt, Terminated) or guard.terminated else "SIGINT"
        message = (
            interrupted_sentence(started[0].runs, run.out, how, run.scenario.training.checkpoint_every)
            if started
            else f"interrupted ({how}) before training began; nothing was written to {run.out}."
        )
        return Outcome("interrupted", started[0] if started else None, message, EXIT_CODES[how])
    return Outcome("stopped" if status == "stopped" else "trained", session)


def open_session(run: RealRun, address: str | None, display: Callable[[], Any], guard,
                 say: Callable[[str], None] | None = None):  # fmt: skip
    """The session, ready to train: data loaded, checkpoints checked, Ray started (SIGTERM handled after it);
    None if there is nothing left to do. ``display()``: the session's progress display, made once the backend has
    started; ``say``: progress lines while the data is decoded, and the runs a resume continues."""
    from gcbench.real.run.session import Session, build_runs
    from gcbench.training.data import load_data

    data = load_data(run.scenario, say)
    runs = build_runs(run.scenario, run.backend, data, run.out)  # checks the checkpoints before anything starts
    if run.resumed and finished_before_status(run.meta, runs, run.out):
        return None
    if run.resumed:
        run.meta.setdefault("resumes", []).append(resume_entry([continued(each) for each in runs]))
        for line in [f"resuming {run.out}:", *(f"  {each.describe()}: {each.continues()}" for each in runs)]:
            (say or print)(line)
    backend_class(run.backend).prepare(runs, address)  # (Ray starts here, unless no run needs it)
    guard.install()  # again: a runtime it started (Ray's core worker) may have put its own SIGTERM handler in place
    return Session(run.scenario, runs, run.out, run.meta, display())


def complete_sentence(run: RealRun) -> str:
    return f"{run.out}: the run is complete ({run.planned} of {run.planned} iterations); nothing to resume."


def interrupted_sentence(runs: list, out: Path, how: str, every: int) -> str:
    """One line: what was kept, and what a resume will do."""
    command = f"gcbench run --resume {out}"
    if runs and not runs[0].keeps_checkpoints:
        return f"interrupted ({how}); the local backend keeps no checkpoints: {command} runs it again from iteration 0."
    saved = [each for each in runs if each.checkpointed > 0]
    if not saved:
        return (
            f"interrupted ({how}) before the first checkpoint (one is written every {every} iterations): no "
            f"checkpoint exists yet, so {command} starts from iteration 0."
        )
    kept = "; ".join(
        f"{each.describe()} at iteration {each.checkpointed}" if each.checkpointed else f"{each.describe()}: none yet"
        for each in runs
    )
    return f"interrupted ({how}); checkpoints kept: {kept}; continue with: {command}"


def write_summary(session, out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The session's iterations table and its summary, written to summary.csv."""
    iterations, _ = session.tables()
    if iterations is None:
        raise GcbenchError(f"no variant finished an iteration; nothing was written to {out} but run.json.")
    summary = summarize(iterations, stopped=session.stopped)
    summary.to_csv(out / "summary.csv", index=False)
    return iterations, summary
