"""`gcbench run`: the scenario's variants trained for real, `--resume` an interrupted run, or `--sim`; what the run
says (resuming, interrupted, the summary). gcbench/real/run/setup.py sets the run up and gcbench/real/run/session.py
trains."""

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

    from gcbench.real.run.setup import Outcome


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
    emulate: Annotated[
        bool,
        typer.Option(
            "--emulate",
            help="Run on an emulated cluster of the scenario's topology (required) on this machine, no root: each "
            "node a network namespace, its links shaped as the scenario's network sets them, each worker on its "
            "node; Ray or torch backend (docs/emulation.md).",
        ),
    ] = False,
) -> None:
    """Train the scenario's variants on Ray, torch.distributed or one process (--backend), or simulate with --sim.

    The variants take turns, one block of training.checkpoint_every iterations each.

    Ctrl-C (exit 130) and SIGTERM (exit 143) keep the checkpoints and the rows so far; --resume DIR continues.
    """
    if real:  # before anything else: a backend that does not exist, then the [real] extra it needs
        from gcbench.real.run.requirements import require_real_extra

        check_backend(backend)
        require_real_extra(modules={entry.name: entry for entry in real_backends()}[backend].modules)
    if not real:
        from gcbench.scenario.overrides import command_line

        if emulate:
            raise GcbenchError(
                "--emulate builds a cluster for a real run, and --sim simulates the scenario; drop one (gcbench "
                "simulate --ray --emulate NODES runs a simulation's tasks on one)."
            )

        overrides = command_line(sets, seeds, iterations)
        if check:
            check_scenario(scenario, wide_console(), overrides)
            return
        simulate_scenario(scenario, out, None, True, wide_console(), overrides=overrides, force=force)
        return
    from gcbench.real.run.setup import serve_as_helper

    if serve_as_helper(backend):  # (under torchrun, every rank but the driver's)
        return
    training = {"batch_size": batch_size, "learning_rate": lr, "model": model, "dataset": dataset}
    training.update(data_dir=data_dir, device=device)
    choose = {"variants": variants, "seeds": seeds, "sets": sets}
    if emulate:
        if address is not None:
            raise GcbenchError(f"--emulate builds a cluster on this machine, and --address {address} joins another; "
                               "drop one.")  # fmt: skip
        emulated(scenario, backend, iterations, training, choose, resume, check)
    if check:
        from gcbench.real.run.setup import checked_run

        if resume is not None:
            raise GcbenchError("--check checks a new run; a resumed one was checked when it began.")
        say(wide_console(), checked_run(scenario, backend, iterations, training, choose))
        return
    if resume is not None:
        given = {"--out": out, "--iterations": iterations, "--batch-size": batch_size, "--lr": lr, "--model": model}
        given.update({"--dataset": dataset, "--data-dir": data_dir, "--device": device, "--variants": variants})
        refuse_with_resume({**given, "--seeds": seeds, "--set": sets or None, "--force": force or None})
    from gcbench.cli.progress import RunProgress
    from gcbench.real.run.setup import RunRequest, real_run

    console = wide_console()
    request = RunRequest(scenario, backend, out, iterations, training, choose, force, resume)
    report(real_run(request, address, lambda: RunProgress(console), lambda line: say(console, line)), console)


def emulated(path: Path, backend: str, iterations: int | None, training: dict, choose: dict, resume: Path | None,
             check: bool) -> None:  # fmt: skip
    """--emulate outside the emulated cluster: check what it needs, then run this command again inside its node 0
    and exit as that run did. Inside it (or with --check, once checked), the run goes on here as any run does."""
    import sys

    from gcbench.real.run.emulated import check_emulated, inside_emulation, run_emulated
    from gcbench.real.run.scenario import real_scenario
    from gcbench.real.run.setup import resumed_run

    if inside_emulation() is not None:
        return
    scenario = resumed_run(resume).scenario if resume is not None else real_scenario(path, iterations, training,
                                                                                      **choose)  # fmt: skip
    check_emulated(scenario, backend)
    if not check:
        topology = scenario.topology
        say(wide_console(), f"on an emulated cluster of {topology.nodes} nodes on this machine (node 0: the master; "
            "docs/emulation.md)")  # fmt: skip
        raise SystemExit(run_emulated(scenario, sys.argv[1:]))


def report(outcome: Outcome, console: Console) -> None:
    """How the run ended: on Ctrl-C or SIGTERM what was kept (exit 130 or 143); otherwise the summary table, test
    accuracies and where the files are (exit 2 if a variant stopped early)."""
    from gcbench.cli.summary import print_summary
    from gcbench.results.summary import interval_note
    from gcbench.scenario.describe import scenario_sentence

    if outcome.status in ("interrupted", "complete"):
        say(console, outcome.message)
        if outcome.status == "interrupted":
            raise SystemExit(outcome.exit_code)
        return
    session, iterations, summary = outcome.session, outcome.iterations, outcome.summary
    say(console, scenario_sentence(session.scenario))
    print_summary(summary, [], console, session.scenario.variants, session.stopped)
    if note := interval_note(summary):
        say(console, note)
    evaluated = iterations.dropna(subset=["accuracy"]).groupby(["variant", "seed"], sort=False)
    for (variant, seed), last in evaluated[["accuracy", "iteration"]].last().iterrows():
        after = int(last["iteration"]) + 1
        say(console, f"{variant}, seed {seed}: test accuracy {last['accuracy']:.1%} after {after} iterations")
    say(console, f"results: {outcome.out}")
    if outcome.status == "stopped":
        raise GcbenchError(
            f"{len(session.stopped)} variant(s) stopped early ({', '.join(session.stopped)}); "
            f"the iterations they finished are in {outcome.out}."
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
