"""`gcbench run`: the scenario's variants trained for real, `--resume` an interrupted run, or `--sim`; what the run
says (resuming, interrupted, the summary). gcbench/real/run.py sets the run up and gcbench/real/session.py trains."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gcbench.cli.console import ForceOption, SeedsOption, SetOption, say, user_errors, wide_console
from gcbench.cli.simulation import check_scenario, simulate_scenario
from gcbench.cluster import real_backends
from gcbench.errors import GcbenchError, did_you_mean

if TYPE_CHECKING:
    from rich.console import Console

    from gcbench.real.run import RealRun


def _backend_help() -> str:
    """The backends of `gcbench run`, from the cluster registry (which imports none of them)."""
    names = [f"{entry.name} ({entry.note})" if entry.note else entry.name for entry in real_backends()]
    return f"{', '.join(names[:-1])}, or {names[-1]}."


BACKEND_HELP = _backend_help()  # "ray, torch (worker processes here), or local (one process)."


@user_errors
def run(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML file.")] = Path("scenarios/cifar10.yaml"),
    real: Annotated[bool, typer.Option("--real/--sim", help="Train for real (default) or simulate.")] = True,
    backend: Annotated[str, typer.Option("--backend", help=BACKEND_HELP)] = "ray",
    out: Annotated[Path | None, typer.Option("--out", help="Results directory.")] = None,
    address: Annotated[
        str | None, typer.Option("--address", help="With --backend ray: an existing Ray cluster (default: local).")
    ] = None,
    iterations: Annotated[int | None, typer.Option("--iterations", help="Override the scenario's.")] = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size", help="Global mini-batch size.")] = None,
    lr: Annotated[float | None, typer.Option("--lr", help="Learning rate.")] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="small_cnn, resnet18, or softmax (cheap, for sweeps).")
    ] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="cifar10 or synthetic.")] = None,
    data_dir: Annotated[str | None, typer.Option("--data-dir", help="A local CIFAR-10 copy.")] = None,
    device: Annotated[str | None, typer.Option("--device", help="auto, cpu, cuda or cuda:N.")] = None,
    variants: Annotated[
        str | None, typer.Option("--variants", help="Run only these variants: labels, comma-separated.")
    ] = None,
    seeds: SeedsOption = None,
    resume: Annotated[
        Path | None, typer.Option("--resume", help="Continue an interrupted real run (its directory).")
    ] = None,
    sets: SetOption = None,
    force: ForceOption = False,
    check: Annotated[
        bool, typer.Option("--check", help="Check the scenario, backend and data for this run; train nothing.")
    ] = False,
) -> None:
    """Train the scenario's variants on Ray, torch.distributed or one process (--backend), or simulate with --sim.

    The variants take turns, one block of training.checkpoint_every iterations each.

    Ctrl-C (exit 130) and SIGTERM (exit 143) keep the checkpoints and the rows so far; --resume DIR continues.
    """
    if real:  # before anything else: the one sentence a user without the [real] extra needs
        from gcbench.real.requirements import REAL_MODULES, require_real_extra

        known = {entry.name: entry for entry in real_backends()}  # (an unknown one is refused next, by name)
        require_real_extra(modules=known[backend].modules if backend in known else REAL_MODULES)
    if not real:
        from gcbench.scenario.overrides import command_line

        overrides = command_line(sets, seeds, iterations)
        if check:
            check_scenario(scenario, wide_console(), overrides)
            return
        simulate_scenario(scenario, out, None, True, wide_console(), overrides=overrides, force=force)
        return
    from gcbench.real.run import serve_as_helper

    check_backend(backend)
    if serve_as_helper(backend):  # (under torchrun, every rank but the driver's)
        return
    training = {"batch_size": batch_size, "learning_rate": lr, "model": model, "dataset": dataset}
    training.update(data_dir=data_dir, device=device)
    choose = {"variants": variants, "seeds": seeds, "sets": sets}
    if check:
        from gcbench.real.run import checked_run

        if resume is not None:
            raise GcbenchError("--check checks a new run; a resumed one was checked when it began.")
        say(wide_console(), checked_run(scenario, backend, iterations, training, choose))
        return
    if resume is not None:
        given = {"--out": out, "--iterations": iterations, "--batch-size": batch_size, "--lr": lr, "--model": model}
        given.update({"--dataset": dataset, "--data-dir": data_dir, "--device": device, "--variants": variants})
        refuse_with_resume({**given, "--seeds": seeds, "--set": sets or None, "--force": force or None})
    run_real(scenario, backend, out, address, iterations, training, wide_console(), resume, choose, force)


def run_real(
    path: Path,
    backend: str,
    out: Path | None,
    address: str | None,
    iterations: int | None,
    training: dict,
    console: Console,
    resume: Path | None = None,
    choose: dict[str, str | None] | None = None,
    force: bool = False,
) -> Path:
    """A new real run of the scenario file, or (``resume``) the rest of an interrupted one."""
    from gcbench.real.run import complete_sentence, new_run, resumed_run

    if resume is not None:
        run = resumed_run(resume)
        if run.complete:
            say(console, complete_sentence(run))
            return run.out
    else:
        run = new_run(path, backend, out, iterations, training, choose, force)
    run.check_backend()  # before the data is read and Ray starts
    with run.driving():
        return _train(run, address, console)


def _train(run: RealRun, address: str | None, console: Console) -> Path:
    """Train the session (gcbench/real/run.py's ``train``) and print how it ended; on Ctrl-C or SIGTERM, what was
    kept, and exit 130 or 143."""
    from gcbench.cli.progress import RunProgress
    from gcbench.real.run import train

    outcome = train(run, address, lambda: RunProgress(console), lambda line: say(console, line))
    if outcome.status == "interrupted":
        say(console, outcome.message)
        raise SystemExit(outcome.exit_code)
    if outcome.status == "complete":
        say(console, outcome.message)
        return run.out
    report(outcome.session, outcome.status, run.out, console)
    return run.out


def report(session, status: str, out: Path, console: Console) -> None:
    """The summary table, test accuracies and where the files are; exit 2 if a variant stopped early."""
    from gcbench.cli.summary import print_summary
    from gcbench.real.run import write_summary
    from gcbench.results.summary import interval_note
    from gcbench.scenario.describe import scenario_sentence

    iterations, summary = write_summary(session, out)
    say(console, scenario_sentence(session.scenario))
    print_summary(summary, [], console, session.scenario.variants)
    if note := interval_note(summary):
        say(console, note)
    evaluated = iterations.dropna(subset=["accuracy"]).groupby(["variant", "seed"], sort=False)
    for (variant, seed), last in evaluated[["accuracy", "iteration"]].last().iterrows():
        after = int(last["iteration"]) + 1
        say(console, f"{variant}, seed {seed}: test accuracy {last['accuracy']:.1%} after {after} iterations")
    say(console, f"results: {out}")
    if status == "stopped":
        raise GcbenchError(
            f"{len(session.stopped)} variant(s) stopped early ({', '.join(session.stopped)}); "
            f"the iterations they finished are in {out}."
        )


def check_backend(backend: str) -> None:
    """One of the backends of `gcbench run`, as the cluster registry lists them."""
    names = [entry.name for entry in real_backends()]
    if backend not in names:
        hint = did_you_mean(backend, names).strip()
        raise GcbenchError(
            f"--backend must be {', '.join(names[:-1])} or {names[-1]}, got '{backend}'{'; ' + hint if hint else '.'}"
        )


def refuse_with_resume(options: dict[str, Any]) -> None:
    """--resume continues the run as it was set up; options that would change it are refused, not ignored."""
    given = [name for name, value in options.items() if value is not None]
    if given:
        raise GcbenchError(
            f"--resume continues the run as it was set up; {', '.join(given)} cannot change it (drop "
            f"{'it' if len(given) == 1 else 'them'}, or start a new run)."
        )
