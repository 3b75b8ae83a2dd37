"""Read a scenario file, expand its sweep, and turn every problem into one sentence naming the field."""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gcbench.errors import GcbenchError
from gcbench.models.distributions import DISTRIBUTIONS
from gcbench.policies.union import POLICY_NAMES
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


def read_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ScenarioError(f"{path}: no such scenario file.")
    try:
        data = yaml.load(path.read_text(), Loader=_Loader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise ScenarioError(f"{path}: not valid YAML{where}: {getattr(error, 'problem', error)}.") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: a scenario must be a YAML mapping of fields, got {type(data).__name__}.")
    return data


def load_scenario(path: str | Path) -> list[SweepPoint]:
    """Validate a scenario file and every point of its sweep; raise ScenarioError listing all problems."""
    path = Path(path)
    raw = read_yaml(path)
    base = validate(raw, path)
    points = []
    try:
        grid = sweep_grid(base.sweep)
    except ScenarioError as error:
        raise ScenarioError(f"{path}: {error}") from None
    for values in grid:
        data = copy.deepcopy(raw)
        for dotted, value in values.items():
            set_path(data, dotted, value, path)
        scenario = validate(data, path, context=describe(values)) if values else base
        points.append(SweepPoint(values, resolve_paths(scenario, path.parent)))
    return points


def validate(data: dict[str, Any], path: Path, context: str = "") -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as error:
        problems = [format_problem(e).rstrip(".") for e in error.errors()]
        prefix = f"{path}{f' (sweep point {context})' if context else ''}"
        raise ScenarioError(f"{prefix}: " + "; ".join(problems) + ".") from None


def with_overrides(scenario: Scenario, path: Path, overrides: dict[str, Any]) -> Scenario:
    """The scenario with dotted-path overrides (command-line options), validated like the file itself."""
    data = scenario.model_dump(mode="json")
    for dotted, value in overrides.items():
        set_path(data, dotted, value, path)
    return validate(data, Path(f"{path} with the command-line options"))


def format_problem(error: dict[str, Any]) -> str:
    """'variants[2].s: Input should be ...' from one pydantic error, without union tags."""
    location = ""
    for part in error["loc"]:
        if isinstance(part, int):
            location += f"[{part}]"
        elif part in _TAGS or part.startswith("function-"):
            continue
        else:
            location += f".{part}" if location else part
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown field (check its spelling and section)"
    if error["type"] == "union_tag_invalid":
        ctx = error["ctx"]
        message = (
            f"unknown {ctx['discriminator'].strip(chr(39))} '{ctx['tag']}'; expected one of {ctx['expected_tags']}"
        )
    return f"{location}: {message}" if location else message


# union tags pydantic puts into error locations; they are not field names
_TAGS = set(DISTRIBUTIONS) | set(POLICY_NAMES) | {"none", "independent", "markov", "fixed", "crash"}


def sweep_grid(sweep: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the swept values (one empty point without a sweep)."""
    if not sweep:
        return [{}]
    keys = list(sweep)
    for key in keys:
        if not sweep[key]:
            raise ScenarioError(f"sweep.{key}: give at least one value.")
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(sweep[k] for k in keys))]


def describe(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def set_path(data: dict[str, Any], dotted: str, value: Any, path: Path) -> None:
    """Set data at a dotted path such as ``straggling.slowdown`` or ``variants[1].s``."""
    parts = [int(index) if index else name for name, index in _PART.findall(dotted)]
    parts = [int(p) if isinstance(p, str) and p.isdigit() else p for p in parts]
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                raise ScenarioError(f"{path}: sweep.{dotted}: there is no item {part} to set.")
        elif not isinstance(node, dict):
            raise ScenarioError(f"{path}: sweep.{dotted}: '{part}' is not inside a mapping.")
        if last:
            node[part] = value
        else:
            if isinstance(node, dict) and part not in node:
                node[part] = {}
            node = node[part]


def resolve_paths(scenario: Scenario, base: Path) -> Scenario:
    """Trace paths are relative to the scenario file's folder; the file must exist."""
    trace = scenario.compute.trace
    if trace is None:
        return scenario
    resolved = trace.resolve(base)
    if not Path(resolved.path).is_file():
        raise ScenarioError(f"{base}: compute.trace.path: no such file: {Path(resolved.path).resolve()}.")
    compute = scenario.compute.model_copy(update={"trace": resolved})
    return scenario.model_copy(update={"compute": compute})
