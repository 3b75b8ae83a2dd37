"""The scenario of a new real run: the file, with the command line's overrides, checked for real mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gcbench.cluster import backend_class, real_backends
from gcbench.coding import scheme_class
from gcbench.errors import GcbenchError
from gcbench.scenario import load_scenario
from gcbench.scenario.build import scheme_for
from gcbench.scenario.loading import with_overrides
from gcbench.scenario.overrides import command_line, parse_sets
from gcbench.scenario.schema import Scenario


def real_scenario(
    path: Path,
    iterations: int | None,
    training: dict[str, Any],
    variants: str | None = None,
    seeds: str | None = None,
    sets: list[str] | None = None,
) -> Scenario:
    """The scenario to run: ``--set`` changes any field as the file would, ``--variants`` picks variants by
    label, ``--seeds`` sets the seeds (all validated like the file)."""
    points = load_scenario(path, parse_sets(sets or []))
    if len(points) > 1:
        raise GcbenchError(f"{path}: real runs do not sweep; remove 'sweep' or simulate it with --sim.")
    scenario = points[0].scenario
    changes = command_line(None, seeds, iterations, **{f"training.{key}": value for key, value in training.items()})
    if variants is not None:
        chosen = select_variants(scenario, variants)
        changes["variants"] = [scenario.variants[i].model_dump(mode="json") for i in chosen]
    scenario = with_overrides(scenario, path, changes) if changes else scenario
    check_real(scenario, path)
    return scenario


def with_trained_gradient(scenario: Scenario) -> Scenario:
    """The scenario with the gradient its model has: a real run's messages carry the model's gradient (float32),
    whatever the file's ``gradient`` says, and run.json's scenario says what they carried (calibration reads the
    size of a message there, its compressors' payloads included)."""
    from gcbench.training.data import CLASSES
    from gcbench.training.models import parameter_count

    gradient = {"length": parameter_count(scenario.training.model, len(CLASSES)), "dtype": "float32"}
    if scenario.gradient.model_dump(mode="json") == gradient:
        return scenario
    return scenario.model_copy(update={"gradient": scenario.gradient.model_copy(update=gradient)})


def select_variants(scenario: Scenario, names: str) -> list[int]:
    """Indices of the variants named in ``names`` (labels, comma-separated; a label may itself hold commas)."""
    labels = [v.display_label() for v in scenario.variants]
    pieces, chosen, i = names.split(","), [], 0
    while i < len(pieces):
        for j in range(len(pieces), i, -1):  # the longest run of pieces that is a label
            name = ",".join(pieces[i:j]).strip()
            if name in labels:
                break
        else:
            listed = "; ".join(f"'{label}'" for label in labels)
            raise GcbenchError(
                f"--variants: no variant is labelled '{pieces[i].strip()}'; the scenario's labels are {listed}."
            )
        if labels.index(name) not in chosen:
            chosen.append(labels.index(name))
        i = j
    return chosen


def check_real(scenario: Scenario, path: Path) -> None:
    """What real mode needs beyond a valid scenario: equal partitions, and data options that apply."""
    training = scenario.training
    if training.dataset == "synthetic" and training.data_dir:
        raise GcbenchError(f"{path}: training.data_dir ({training.data_dir}) is for cifar10; the dataset is synthetic.")
    refuse_allreduce_failures(scenario, path)
    partitions_of = [(f"variant '{v.display_label()}'", scheme_for(scenario, v).k) for v in scenario.variants]
    for label, partitions in partitions_of + [("the local backend", scenario.workers)]:
        if training.batch_size % partitions:
            fit = max(partitions, round(training.batch_size / partitions) * partitions)
            raise GcbenchError(
                f"{path}: training.batch_size ({training.batch_size}) must be a multiple of the {partitions} data "
                f"partitions of {label}, so each partition gets as many samples; use {fit}, for example."
            )


def refuse_pipelined_without_caches(scenario: Scenario, backend: str) -> None:
    """A pipelined scheme needs workers that keep its cached partition gradients between jobs
    (gcbench/real/wallclock/gradient_worker.py), which a backend declares (``keeps_caches``)."""
    pipelined = [v for v in scenario.variants if scheme_class(v.scheme).pipelined]
    if pipelined and not backend_class(backend).keeps_caches:
        keeping = " or ".join(f"--backend {e.name}" for e in real_backends() if backend_class(e.name).keeps_caches)
        raise GcbenchError(
            f"variant '{pipelined[0].display_label()}' ({pipelined[0].scheme}) needs workers that keep their cached "
            f"partition gradients between iterations, which only {keeping} has; --backend {backend} cannot run it."
        )


def refuse_sequential_without_earlier_weights(scenario: Scenario, backend: str) -> None:
    """A sequential scheme computes tasks of earlier jobs on those jobs' weights (SR-SGC repeats the task of the
    job B rounds back, M-SGC's mini-tasks serve W - 1 + B jobs), which a backend's jobs can compute on only where
    it declares so (``computes_earlier_weights``)."""
    sequential = [v for v in scenario.variants if scheme_class(v.scheme).sequential]
    if sequential and not backend_class(backend).computes_earlier_weights:
        able = " or ".join(
            f"--backend {e.name}" for e in real_backends() if backend_class(e.name).computes_earlier_weights
        )
        raise GcbenchError(
            f"variant '{sequential[0].display_label()}' ({sequential[0].scheme}) computes tasks of earlier jobs on "
            f"those jobs' weights, which only {able} sends its workers; --backend {backend} cannot run it (simulate "
            "it with --sim)."
        )


def refuse_allreduce_failures(scenario: Scenario, path: Path) -> None:
    """DDP has no fault tolerance (a rank that dies ends every rank's all-reduce): no drawn crashes to inject
    there. A schedule alone is run, to show what the all-reduce does when a rank or a node is lost (the variant
    stops; gcbench/real/ddp/ddp_run.py)."""
    ddp = [v.display_label() for v in scenario.variants if not v.policy.needs_master]
    failures = scenario.failures
    scheduled_only = failures.model == "crash" and failures.probability == 0.0 and failures.schedule
    if ddp and failures.model != "none" and not scheduled_only:
        raise GcbenchError(
            f"{path}: failures.model is {failures.model}, but variant '{ddp[0]}' is DistributedDataParallel, "
            "which has no fault tolerance; give failures: {model: none} or a schedule alone, or leave it out with "
            "--variants."
        )
