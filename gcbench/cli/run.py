"""What `gcbench run` does: the scenario's variants trained for real (or simulated with --sim)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from gcbench.cli.resume import read_run_json, resumed_scenario
from gcbench.cli.run_options import check_real, real_scenario, refuse_pipelined_without_caches
from gcbench.cluster import backend_class, real_backends
from gcbench.errors import GcbenchError
from gcbench.results import summarize
from gcbench.results.metadata import new_run_directory, resume_entry, run_metadata
from gcbench.results.store import check_out
from gcbench.scenario.loading import SweepPoint
from gcbench.scenario.schema import Scenario


def run_real(
    path: Path,
    backend: str,
    out: Path | None,
    address: str | None,
    iterations: int | None,
    training: dict,
    console,
    resume: Path | None = None,
    choose: dict[str, str | None] | None = None,
    force: bool = False,
) -> Path:
    """A new real run of the scenario file, or (``resume``) the rest of an interrupted one."""
    from gcbench.training.device import check_device

    if resume is not None:
        meta = read_run_json(resume)
        scenario = resumed_scenario(meta, resume)
        check_real(scenario, resume / "run.json")
        if meta.get("status") == "complete":
            say_complete(console, resume, scenario, meta["backend"])
            return resume
        path, backend, out = Path(meta["scenario_file"]), meta["backend"], resume
    else:
        scenario = real_scenario(path, iterations, training, **(choose or {}))
        out = out or new_run_directory(Path("results"), f"{scenario.name}-real")
        refuse_checkpoints(out)  # before check_out: a run with checkpoints is resumed, not overwritten
        check_out(out, force)
        meta = run_metadata("real", path, [SweepPoint({}, scenario)], {"backend": backend})
    refuse_pipelined_without_caches(scenario, backend)
    check_device(scenario.training.device)  # before the data is read and Ray starts
    with backend_class(backend).driving(scenario):  # (under torchrun: the world fits, and the agents end with it)
        return _train(scenario, path, backend, out, address, meta, console, resumed=resume is not None)


def serve_as_helper(backend: str) -> bool:
    """Where this process was launched as a helper of the run rather than its driver (under torchrun, a rank
    other than 0 is worker (rank - 1)'s agent): it serves until the driver's run is over; True when it did."""
    return backend_class(backend).serve_helper()


def say_complete(console, out: Path, scenario: Scenario, backend: str) -> None:
    planned = backend_class(backend).planned(scenario)
    message = f"{out}: the run is complete ({planned} of {planned} iterations); nothing to resume."
    console.print(message, highlight=False, soft_wrap=True)


def refuse_checkpoints(out: Path) -> None:
    """A new run never picks up another run's checkpoints."""
    folder = out / "checkpoints"
    if folder.is_dir() and any(folder.iterdir()):
        raise GcbenchError(
            f"--out {out} already holds a run's checkpoints; continue that run with --resume {out}, "
            "or choose another --out."
        )


def _train(scenario: Scenario, path: Path, backend: str, out: Path, address, meta: dict, console, resumed: bool):
    from gcbench.real.session import EXIT_CODES, Terminated, sigterm_as_interrupt

    guard, started = sigterm_as_interrupt(), []
    try:
        with guard:
            session = _start(scenario, backend, out, address, meta, console, resumed, guard)
            if session is None:
                say_complete(console, out, scenario, backend)
                return out
            started.append(session)
            status = session.train()
    except KeyboardInterrupt as interrupt:
        how = "SIGTERM" if isinstance(interrupt, Terminated) or guard.terminated else "SIGINT"
        message = (
            interrupted(started[0].runs, out, how, scenario.training.checkpoint_every)
            if started
            else f"interrupted ({how}) before training began; nothing was written to {out}."
        )
        console.print(message, highlight=False, soft_wrap=True)
        raise SystemExit(EXIT_CODES[how]) from None
    report(session, status, out, console)
    return out


def _start(scenario: Scenario, backend: str, out: Path, address, meta: dict, console, resumed: bool, guard):
    """The session, ready to train: data loaded, checkpoints checked, Ray started (SIGTERM handled after it);
    None if there is nothing left to do."""
    from gcbench.cli.console import RunProgress
    from gcbench.real.session import Session, build_runs
    from gcbench.training.data import load_data

    data = load_data(scenario)
    runs = build_runs(scenario, backend, data, out)  # checks the checkpoints before anything starts
    if resumed and _finished_before_status(meta, runs, out):
        return None
    if resumed:
        meta.setdefault("resumes", []).append(resume_entry([continued(run) for run in runs]))
        console.print(f"resuming {out}:", highlight=False, soft_wrap=True)
        for run in runs:
            console.print(f"  {describe(run)}: {continues(run)}", highlight=False, soft_wrap=True)
    backend_class(backend).prepare(runs, address)  # (Ray starts here, unless no run needs it)
    guard.install()  # again: a runtime it started (Ray's core worker) may have put its own SIGTERM handler in place
    return Session(scenario, runs, out, meta, RunProgress(console))


def _finished_before_status(meta: dict, runs: list, out: Path) -> bool:
    """A run written before run.json had a status, finished: its tables hold more (late timings) than rebuilding
    them from its checkpoints would, so it is left as it is."""
    return "status" not in meta and (out / "iterations.parquet").is_file() and all(run.finished for run in runs)


def describe(run) -> str:
    """'variant 2 (CR s=1), seed 0', or 'local, seed 0'."""
    return f"local, seed {run.seed}" if run.index is None else f"variant {run.index} ({run.label}), seed {run.seed}"


def continues(run) -> str:
    if run.index is None:
        return "from iteration 0 (the local backend keeps no checkpoints)"
    if run.finished:
        return f"complete ({run.next_iteration} iterations), not run again"
    return f"from iteration {run.resumed_at}" + ("" if run.resumed_at else " (it had no checkpoint)")


def continued(run) -> dict[str, Any]:
    return {"variant": run.label, "seed": run.seed, "iteration": run.resumed_at}


def interrupted(runs: list, out: Path, how: str, every: int) -> str:
    """One line: what was kept, and what a resume will do."""
    command = f"gcbench run --resume {out}"
    if runs and runs[0].index is None:
        return f"interrupted ({how}); the local backend keeps no checkpoints: {command} runs it again from iteration 0."
    saved = [run for run in runs if run.checkpointed > 0]
    if not saved:
        return (
            f"interrupted ({how}) before the first checkpoint (one is written every {every} iterations): no "
            f"checkpoint exists yet, so {command} starts from iteration 0."
        )
    kept = "; ".join(
        f"{describe(run)} at iteration {run.checkpointed}" if run.checkpointed else f"{describe(run)}: none yet"
        for run in runs
    )
    return f"interrupted ({how}); checkpoints kept: {kept}; continue with: {command}"


def report(session, status: str, out: Path, console) -> None:
    """The summary table, test accuracies and where the files are; exit 2 if a variant stopped early."""
    from gcbench.cli.simulate import print_summary
    from gcbench.results.summary import interval_note

    iterations, _ = session.tables()
    if iterations is None:
        raise GcbenchError(f"no variant finished an iteration; nothing was written to {out} but run.json.")
    summary = summarize(iterations)
    summary.to_csv(out / "summary.csv", index=False)
    print_summary(summary, [], console)
    if note := interval_note(summary):
        console.print(note, highlight=False, soft_wrap=True)
    evaluated = iterations.dropna(subset=["accuracy"]).groupby(["variant", "seed"], sort=False)
    for (variant, seed), last in evaluated[["accuracy", "iteration"]].last().iterrows():
        console.print(
            f"{variant}, seed {seed}: test accuracy {last['accuracy']:.1%} after {int(last['iteration']) + 1} "
            "iterations",
            highlight=False,
            soft_wrap=True,
        )
    console.print(f"results: {out}", highlight=False, soft_wrap=True)
    if status == "stopped":
        raise GcbenchError(
            f"{len(session.stopped)} variant(s) stopped early ({', '.join(session.stopped)}); "
            f"the iterations they finished are in {out}."
        )


def check_backend(backend: str) -> None:
    """One of the backends of `gcbench run`, as the cluster registry lists them."""
    names = [entry.name for entry in real_backends()]
    if backend not in names:
        raise GcbenchError(f"--backend must be {', '.join(names[:-1])} or {names[-1]}, got '{backend}'.")


def console() -> Console:
    from gcbench.cli.schemes import wide_console

    return wide_console()


def refuse_with_resume(options: dict[str, Any]) -> None:
    """--resume continues the run as it was set up; options that would change it are refused, not ignored."""
    given = [name for name, value in options.items() if value is not None]
    if given:
        raise GcbenchError(
            f"--resume continues the run as it was set up; {', '.join(given)} cannot change it (drop "
            f"{'it' if len(given) == 1 else 'them'}, or start a new run)."
        )
