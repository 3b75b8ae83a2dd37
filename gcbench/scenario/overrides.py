"""Command-line overrides of a scenario: ``--set path=value``, ``--seeds 0,1,2`` and ``--iterations N``.

Written once for `gcbench simulate`, `gcbench run` and `gcbench recommend` (``command_line``); the values are
validated later, with the file, exactly as if the file had said them.
"""

from __future__ import annotations

from typing import Any

from gcbench.errors import GcbenchError


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` -> [0, 1, 2]; anything else is one sentence naming --seeds."""
    items = [item.strip() for item in text.split(",")]
    try:
        seeds = [int(item) for item in items]
    except ValueError:
        raise GcbenchError(f"--seeds: give comma-separated whole numbers such as 0,1,2, not '{text}'.") from None
    if any(seed < 0 for seed in seeds):
        raise GcbenchError(f"--seeds: seeds are whole numbers >= 0, not '{text}'.")
    return seeds


def parse_sets(items: list[str]) -> dict[str, Any]:
    """``["straggling.probability=0.2", "variants[1].s=2"]`` -> {dotted path: YAML-read value}."""
    from gcbench.scenario.loading import parse_yaml

    overrides: dict[str, Any] = {}
    for item in items:
        path, equals, text = item.partition("=")
        if not equals or not path.strip():
            raise GcbenchError(f"--set {item}: write it as path=value, e.g. --set straggling.probability=0.2.")
        overrides[path.strip()] = parse_yaml(text, f"--set {item}") if text.strip() else None
    return overrides


def command_line(sets: list[str] | None = None, seeds: str | None = None, iterations: int | None = None,
                 **fields: Any) -> dict[str, Any]:  # fmt: skip
    """The overrides a command's options make: each ``--set``, then ``--seeds`` and ``--iterations`` where given,
    then any other ``fields`` (a dotted path each) that are not None."""
    overrides = parse_sets(sets or [])
    if seeds is not None:
        overrides["seeds"] = parse_seeds(seeds)
    if iterations is not None:
        overrides["iterations"] = iterations
    overrides.update({path: value for path, value in fields.items() if value is not None})
    return overrides
