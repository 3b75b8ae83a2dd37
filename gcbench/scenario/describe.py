"""A scenario in one sentence, for the top of a summary: what was run, on how many workers, straggling and
failing how, and how many seeds and iterations each mean comes from."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def model_words(model: BaseModel, path: str, swept: dict[str, list[Any]]) -> str:
    """``independent, probability 0.1, slowdown 1.5 to 24 (swept)``: a registered model's name and its scalar
    fields (nested models and lists left to the scenario file), a swept one's values in place of its own."""
    fields = model.model_dump()
    words = [str(fields.pop("model", type(model).__name__))]
    for name, value in fields.items():
        values = swept.get(f"{path}.{name}")
        if values is not None:
            words.append(f"{name} {values[0]} to {values[-1]} (swept)" if len(values) > 1 else f"{name} {values[0]}")
        elif isinstance(value, (int, float, str, bool)) and value is not None:
            words.append(f"{name} {value}")
    return ", ".join(words)


def scenario_sentence(scenario: Any) -> str:
    """``stragglers (Gradient codes ...): 12 workers; straggling: independent, probability 0.1, ...; 5 seeds x
    300 iterations per variant and sweep point.``"""
    swept = dict(scenario.sweep)
    about = f" ({scenario.description})" if scenario.description else ""
    parts = [_workers(scenario), f"straggling: {model_words(scenario.straggling, 'straggling', swept)}"]
    if scenario.failures.model_dump().get("model") != "none":
        scheduled = len(getattr(scenario.failures, "schedule", []))
        crashes = f"{scheduled} scheduled crash{'es' if scheduled > 1 else ''}"
        if scheduled and scenario.failures.probability == 0.0 and "failures.probability" not in swept:
            parts.append(f"failures: {crashes} only")  # (a schedule alone: no drawn crash)
        else:
            drawn = model_words(scenario.failures, "failures", swept)
            parts.append(f"failures: {drawn}{f', {crashes}' if scheduled else ''}")
    others = [path for path in swept if not path.startswith(("straggling.", "failures."))]
    parts += [f"{path} swept over {', '.join(str(v) for v in swept[path])}" for path in others]
    seeds = len(scenario.seeds)
    each = "per variant and sweep point" if swept else "per variant"
    parts.append(f"{seeds} seed{'s' if seeds > 1 else ''} x {scenario.iterations} iterations {each}")
    return f"{scenario.name}{about}: {'; '.join(parts)}."


def _workers(scenario: Any) -> str:
    """``12 workers``, or ``12 workers on 3 nodes (spread)`` with a topology."""
    topology = scenario.topology
    if topology is None:
        return f"{scenario.workers} workers"
    placement = topology.placement if isinstance(topology.placement, str) else "placed by name"
    if "topology.placement" in dict(scenario.sweep):
        placement = "placement swept"
    return f"{scenario.workers} workers on {topology.nodes} node{'s' if topology.nodes > 1 else ''} ({placement})"
