"""Read a scenario file, expand its sweep, and turn every problem into one sentence naming the field."""

from __future__ import annotations

import copy
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from gcbench.compression import COMPRESSORS
from gcbench.errors import GcbenchError, did_you_mean
from gcbench.models import is_internal
from gcbench.models.distributions import DISTRIBUTIONS
from gcbench.models.failures import FAILURES
from gcbench.models.straggling import STRAGGLING
from gcbench.models.traces import cleaned_trace
from gcbench.policies import POLICIES
from gcbench.scenario.checks import problems_beside_field_errors
from gcbench.scenario.paths import describe, set_path, size_problem, sweep_grid
from gcbench.scenario.schema import Scenario


class ScenarioError(GcbenchError):
    """A scenario file that cannot be used; the message lists each problem."""


@dataclass(frozen=True)
class SweepPoint:
    """One point of the sweep grid: the values it sets, and the scenario they give."""

    values: dict[str, Any]
    scenario: Scenario


class _Loader(yaml.SafeLoader):
    """YAML 1.1 reads 1e9 and 1.25e9 as strings; scenarios mean numbers."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def parse_yaml(text: str, where: str) -> Any:
    """YAML text as data, with scenario numbers; ``where`` names the source in errors."""
    try:
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark else ""
        raise ScenarioError(f"{where}: not valid YAML{line}: {getattr(error, 'problem', error)}.") from None
    except RecursionError:
        raise ScenarioError(f"{where}: nests lists or mappings too deeply to read.") from None
    problem = size_problem(data)
    if problem:
        raise ScenarioError(f"{where}: {problem}.")
    return data


def read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ScenarioError(f"{path}: no such scenario file.")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(f"{path}: cannot be read as text ({error}).") from None
    data = parse_yaml(text, str(path))
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: a scenario must be a YAML mapping of fields, got {type(data).__name__}.")
    return data


def load_scenario(path: str | Path, overrides: dict[str, Any] | None = None) -> list[SweepPoint]:
    """Validate a scenario file (with dotted-path ``overrides`` from the command line) and every sweep point.

    Raise ScenarioError listing all problems.
    """
    path = Path(path)
    raw = read_yaml(path)
    label = str(path)
    if overrides:
        label = f"{path} with the command-line options"
        for dotted, value in overrides.items():
            _set(raw, dotted, value, f"--set {dotted}", label)
    base = validate(raw, Path(label))
    try:
        grid = sweep_grid(base.sweep)
    except GcbenchError as error:
        raise ScenarioError(f"{label}: {error}") from None
    points = []
    for values in grid:
        data = copy.deepcopy(raw)
        for dotted, value in values.items():
            _set(data, dotted, value, f"sweep.{dotted}", label)
        scenario = validate(data, Path(label), context=describe(values)) if values else base
        points.append(SweepPoint(values, resolve_paths(scenario, path)))
    return points


def point_scenario(data: dict[str, Any], values: dict[str, Any], label: str) -> Scenario:
    """The scenario of one sweep point of a run: the run's scenario as recorded (run.json's ``scenario``, its first
    point) with the point's ``values`` set, validated like a scenario file; ``label`` names it in errors."""
    data = copy.deepcopy(data)
    for dotted, value in values.items():
        _set(data, dotted, value, f"sweep.{dotted}", label)
    return validate(data, Path(label), context=describe(values) if values else "")


def _set(data: dict[str, Any], dotted: str, value: Any, where: str, label: str) -> None:
    try:
        set_path(data, dotted, value, where, _section_defaults())
    except GcbenchError as error:
        raise ScenarioError(f"{label}: {error}") from None


def _section_defaults() -> dict[str, Any]:
    """Each optional section's default, as the data a scenario file would give for it."""
    return {
        name: field.default.model_dump(mode="json")
        for name, field in Scenario.model_fields.items()
        if isinstance(field.default, BaseModel)
    }


def validate(data: dict[str, Any], path: Path, context: str = "") -> Scenario:
    prefix = f"{path}{f' (sweep point {context})' if context else ''}"
    try:
        return Scenario.model_validate(data)
    except ValidationError as error:
        problems = [format_problem(e).rstrip(".") for e in error.errors()]
        if not any(e["loc"] == () for e in error.errors()):  # field errors: the cross-field checks did not run
            problems += problems_beside_field_errors(data)
        text = "; ".join(dict.fromkeys(problems))
        raise ScenarioError(f"{prefix}: {text}{'' if text.endswith('?') else '.'}") from None
    except RecursionError:
        raise ScenarioError(f"{prefix}: nests lists or mappings too deeply to validate.") from None


def with_overrides(scenario: Scenario, path: Path, overrides: dict[str, Any]) -> Scenario:
    """The scenario with dotted-path overrides (command-line options), validated like the file itself."""
    data = scenario.model_dump(mode="json")
    label = f"{path} with the command-line options"
    for dotted, value in overrides.items():
        _set(data, dotted, value, f"--set {dotted}", label)
    return validate(data, Path(label))


def format_problem(error: dict[str, Any]) -> str:
    """'variants[2].s: Input should be ...' from one pydantic error, without union tags."""
    if len(error["loc"]) >= 2 and error["loc"][-1] == "[key]":  # a mapping's key, not its value, is wrong
        key, parent = error["loc"][-2], format_problem({**error, "loc": error["loc"][:-2], "type": "key"})
        return parent.replace(": ", f": the key '{key}': ", 1)
    location, tags = "", []
    for part in error["loc"]:
        if isinstance(part, int):
            location += f"[{part}]"
        elif part in _TAGS or part.startswith("function-"):
            tags.append(part)
        else:
            location += f".{part}" if location else part
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown field (check its spelling and section)"
        if "none" in tags:  # also where a sweep or --set gave a field to a section the scenario lacks
            section = location.split(".")[0]
            message = f"unknown field (check its spelling and section; the {section} model 'none' takes no fields)"
        elif hint := did_you_mean(error["loc"][-1], field_names_beside(error["loc"])):
            message = f"unknown field; {hint.strip()}"
    if error["type"] == "union_tag_invalid":
        ctx = error["ctx"]
        kind, hint = ctx["discriminator"].strip(chr(39)), did_you_mean(ctx["tag"], _quoted(ctx["expected_tags"]))
        message = f"unknown {kind} '{ctx['tag']}'; {hint}expected one of {ctx['expected_tags']}"
    if error["type"] == "literal_error" and (hint := did_you_mean(error["input"], _quoted(error["ctx"]["expected"]))):
        message = f"{message} ({hint.strip()})"
    if error["type"] == "union_tag_not_found":
        message = f"give its {error['ctx']['discriminator'].strip(chr(39))}"
    return f"{location}: {message}" if location else message


def field_names_beside(location: tuple) -> list[str]:
    """The fields a key at this error location could have meant: those of every model its parent path can
    hold (a section's registered models, narrowed to the one a union tag in the path names)."""
    models: list[type[BaseModel]] = [Scenario]
    for part in location[:-1]:
        if isinstance(part, int) or part.startswith("function-"):
            continue
        if part in _TAGS:
            models = [model for model in models if _tagged(model, part)] or models
            continue
        fields = [model.model_fields[part] for model in models if part in model.model_fields]
        models = [inner for field in fields for inner in _models_in(field.annotation)]
    return sorted({name for model in models for name, field in model.model_fields.items() if not is_internal(field)})


def _tagged(model: type[BaseModel], tag: str) -> bool:
    """Whether one of the model's fields admits only this name (the tag its registry knows it by)."""
    return any(typing.get_args(field.annotation) == (tag,) for field in model.model_fields.values())


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's annotation can hold: itself, a list's items, a union's members."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for argument in typing.get_args(annotation) for model in _models_in(argument)]


def _quoted(text: str) -> list[str]:
    return re.findall(r"'([^']*)'", text)


# union tags pydantic puts into error locations; they are not field names
_TAGS = {name for registry in (DISTRIBUTIONS, POLICIES, STRAGGLING, FAILURES, COMPRESSORS) for name in registry.names()}


def resolve_paths(scenario: Scenario, scenario_file: Path) -> Scenario:
    """Trace paths are relative to the scenario file's folder; the file must exist and replay cleanly."""
    trace = scenario.compute.trace
    if trace is None:
        return scenario
    resolved = trace.resolve(scenario_file.parent)
    where = Path(resolved.path).resolve()
    if not where.is_file():
        relative = "" if Path(trace.path).is_absolute() else f" ('{trace.path}' relative to the scenario's folder)"
        raise ScenarioError(f"{scenario_file}: compute.trace.path: no such file: {where}{relative}.")
    resolved = resolved.model_copy(update={"path": str(where)})
    try:
        cleaned_trace(resolved, scenario.workers)
        resolved.base_compute_seconds()  # (a base_comp.pkl is read, and refused, here)
    except GcbenchError as error:
        raise ScenarioError(f"{scenario_file}: {str(error).rstrip('.')}.") from None
    compute = scenario.compute.model_copy(update={"trace": resolved})
    return scenario.model_copy(update={"compute": compute})
