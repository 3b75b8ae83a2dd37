"""Dotted paths into a scenario's data (``straggling.slowdown``, ``variants[1].s``): sweeps and --set use them."""

from __future__ import annotations

import itertools
import re
from typing import Any

from gcbench.errors import GcbenchError

MAX_INT = 2**63 - 1  # results are int64 columns
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_DOTTED = re.compile(r"[^.\[\]\s]+(\[\d+\])*(\.[^.\[\]\s]+(\[\d+\])*)*")


def parse_path(dotted: str, where: str) -> list[str | int]:
    """The keys and indices of a dotted path; ``where`` names it in errors (``sweep.x`` or ``--set x``)."""
    if not isinstance(dotted, str) or not _DOTTED.fullmatch(dotted):
        raise GcbenchError(f"{where}: not a dotted path such as straggling.slowdown or variants[1].s.")
    parts = [int(index) if index else name for name, index in _PART.findall(dotted)]
    return [int(p) if isinstance(p, str) and p.isdigit() else p for p in parts]


def set_path(data: dict[str, Any], dotted: str, value: Any, where: str, defaults: dict[str, Any]) -> None:
    """Set data at a dotted path; a section the data lacks starts as its default (``defaults[name]``)."""
    parts = parse_path(dotted, where)
    node: Any = data
    for i, part in enumerate(parts):
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                raise GcbenchError(f"{where}: there is no item {part} to set.")
        elif not isinstance(node, dict):
            raise GcbenchError(f"{where}: '{part}' is not inside a mapping.")
        if i == len(parts) - 1:
            node[part] = value
            return
        if isinstance(node, dict) and part not in node:
            # the same message as when the section is written out: sweep its default, not an empty mapping
            node[part] = dict(defaults.get(part, {})) if node is data else {}
        node = node[part]


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else "other"


def sweep_problems(sweep: dict[str, Any]) -> list[str]:
    """Sweep values become result columns: scalars of one kind per path, integers that fit 64 bits."""
    problems = []
    for key, values in sweep.items():
        kinds = {_kind(v) for v in values} - {"null"}
        if not values:
            problems.append(f"sweep.{key}: give at least one value")
        elif "other" in kinds:
            problems.append(
                f"sweep.{key}: values must be numbers, strings, booleans or null "
                "(sweep one field of a mapping at a time)"
            )
        elif len(kinds) > 1:
            problems.append(
                f"sweep.{key}: values must all be numbers, all strings or all booleans, not {sorted(kinds)}"
            )
        elif any(isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT for v in values):
            problems.append(f"sweep.{key}: integers must fit in 64 bits (at most {MAX_INT})")
    return problems


def sweep_grid(sweep: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the swept values (one empty point without a sweep)."""
    if not sweep:
        return [{}]
    problems = sweep_problems(sweep)
    if problems:
        raise GcbenchError("; ".join(problems) + ".")
    keys = list(sweep)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(sweep[k] for k in keys))]


def describe(values: dict[str, Any]) -> str:
    """``straggling.slowdown=2, variants[0].s=1``, each value cut to a readable length."""
    shown = (str(v) for v in values.values())
    return ", ".join(f"{k}={v if len(v) <= 40 else v[:37] + '...'}" for k, v in zip(values, shown, strict=True))


MAX_DEPTH = 32
MAX_VALUES = 1_000_000


def size_problem(data: Any) -> str | None:
    """Why the data is too deep or too large to validate, if it is.

    Iterative, because the point is to refuse what would recurse too deep; counted
    with YAML aliases expanded, as validation would see them.
    """
    values, stack = 0, [(data, 1)]
    while stack:
        node, depth = stack.pop()
        values += 1
        if values > MAX_VALUES:
            return f"holds more than {MAX_VALUES:,} values (counting YAML aliases expanded)"
        if isinstance(node, (dict, list)):
            if depth > MAX_DEPTH:
                return f"nests lists or mappings more than {MAX_DEPTH} levels deep"
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return None
