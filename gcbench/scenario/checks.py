"""Checks that involve more than one field: each problem is one sentence naming its field."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gcbench.coding import SchemeParameterError, make_scheme

if TYPE_CHECKING:
    from gcbench.scenario.schema import Scenario


def cross_field_problems(scenario: Scenario) -> list[str]:
    n = scenario.workers
    problems = []
    if scenario.compute.speeds is not None and len(scenario.compute.speeds) != n:
        problems.append(f"compute.speeds: needs one speed per worker ({n}), got {len(scenario.compute.speeds)}")
    fixed = getattr(scenario.straggling, "workers", None) or []
    if any(w >= n for w in fixed):
        problems.append(f"straggling.workers: worker ids must be < workers ({n})")
    labels = [v.display_label() for v in scenario.variants]
    for i, variant in enumerate(scenario.variants):
        where = f"variants[{i}]"
        if variant.s >= n:
            problems.append(f"{where}.s: must be < workers ({n})")
            continue
        try:
            make_scheme(variant.scheme, n=n, s=variant.s, **variant.scheme_params())
        except SchemeParameterError as error:
            problems.append(f"{where}: {error}")
        k = getattr(variant.policy, "k", None)
        if k is not None and k > n and getattr(variant.policy, "distinct", True):
            problems.append(f"{where}.policy.k: must be <= workers ({n})")
        if labels.count(labels[i]) > 1 and labels.index(labels[i]) == i:
            problems.append(f"{where}.label: '{labels[i]}' names more than one variant; give each a distinct label")
    return problems
