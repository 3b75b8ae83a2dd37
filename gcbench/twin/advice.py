"""`gcbench recommend`'s bottom line, from its ranked table (gcbench/twin/recommend.py): the pick and why, uncoded's
time and the pick's speedup over it, the candidates close enough that only a real run can order them, the faster
candidates that are not exact and what they give up, and the pick as a scenario's variant, ready to paste or
written as a scenario file that runs it beside uncoded and its near ties.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from gcbench.errors import GcbenchError
from gcbench.scenario.schema import Scenario, Variant
from gcbench.twin.candidates import REFERENCE, Candidate, with_placement, with_variants
from gcbench.twin.recommend import NEAR


@dataclass(frozen=True)
class Advice:
    lines: list[str]  # what to print first, in order
    pick: str  # the picked candidate's label
    close: list[str]  # the near ties, distinct candidates within NEAR of the pick, best first
    variants: list[Variant]  # uncoded, the pick and its near ties: what --write-scenario runs
    placement: str | None = None  # the pick's placement (a scenario with a topology): the written scenario's


def advise(table: pd.DataFrame, basis: dict, candidates: list[Candidate], scenario: Scenario) -> Advice:
    """The advice on a ranked table: its pick is the best exact candidate (the best of all where the scenario
    trains, every kind ranked together by the time to its target)."""
    together = basis["target_accuracy"] is not None
    pool = table if together else table[table["kind"] == "exact"]
    if pool.empty:
        pool = table
    pick = pool.iloc[0]
    unit = "s per iteration" if not together else f"s to {basis['target_accuracy']:.1%} accuracy"
    uncoded = reference_value(table)
    lines = [pick_line(pick, unit, uncoded)]
    ties = basis["near_ties"].get("all" if together else pick["kind"], [])  # (recommend's, the pick first)
    close = [table[table["candidate"] == label].iloc[0] for label in ties if label != pick["candidate"]]
    if close:
        gaps = ", ".join(f"{row['candidate']} (+{row['value'] / pick['value'] - 1:.0%})" for row in close)
        lines.append(
            f"Close behind, within the {NEAR:.0%} a calibrated simulation can err by (docs/calibration.md): {gaps}; "
            "they are different codes, so run them beside the pick before choosing."
        )
    if not together:
        lines += faster_lines(table, pick)
    variants = variants_of([REFERENCE, pick["candidate"], *(row["candidate"] for row in close)], candidates)
    pick_variant = variants[1] if pick["candidate"] != REFERENCE else variants[0]
    lines.append(f"As a scenario's variant: {variant_yaml(pick_variant)}")
    placement = next((c.placement for c in candidates if c.variant.display_label() == pick["candidate"]), None)
    if placement is not None:
        lines.append(f"Its workers placed: topology.placement: {placement} (the scenario it is written to says so).")
    return Advice(lines, str(pick["candidate"]), [str(row["candidate"]) for row in close], variants, placement)


def reference_value(table: pd.DataFrame) -> float:
    """Uncoded's value, from any row's speedup (value x speedup; every speedup is over it)."""
    finite = table[np.isfinite(table["value"]) & np.isfinite(table["speedup"]) & (table["speedup"] > 0)]
    return float(finite["value"].iloc[0] * finite["speedup"].iloc[0]) if len(finite) else np.nan


def pick_line(pick: pd.Series, unit: str, uncoded: float) -> str:
    interval = f" (95% CI {pick['ci_low']:.4g} to {pick['ci_high']:.4g})" if pd.notna(pick["ci_low"]) else ""
    if pick["candidate"] == REFERENCE:
        return (f"Pick: uncoded, {pick['value']:.4g} {unit}{interval}: no code is predicted to pay for its load on "
                "this cluster.")  # fmt: skip
    speed = f"{pick['speedup']:.2f}x" if np.isfinite(pick["speedup"]) else "n/a"
    return (
        f"Pick: {pick['candidate']}, predicted {pick['value']:.4g} {unit}{interval} against uncoded's {uncoded:.4g}: "
        f"{speed} its speed. Why: it {pick['reason']}."
    )


def faster_lines(table: pd.DataFrame, pick: pd.Series) -> list[str]:
    """The best approximate and the best stale candidate where faster per iteration than the exact pick."""
    lines = []
    for kind, cost in (("approximate", "an approximate decode drops part of the gradient"),
                       ("stale", "a stale update applies an older gradient")):  # fmt: skip
        rows = table[(table["kind"] == kind) & (table["value"] < pick["value"])]
        if rows.empty:
            continue
        best = rows.iloc[0]
        lines.append(
            f"Faster per iteration but {kind}: {best['candidate']} ({best['speedup']:.2f}x uncoded's speed): {cost}, "
            "so it may take more iterations to train; to rank it with the pick by time to accuracy, train in the "
            "simulator (training.in_simulator and training.target_accuracy)."
        )
    return lines


def variants_of(labels: list[str], candidates: list[Candidate]) -> list[Variant]:
    """The candidates' variants by label (uncoded's built where the filters left it out)."""
    by_label = {c.variant.display_label(): c.variant for c in candidates}
    by_label.setdefault(REFERENCE, Variant(label=REFERENCE, scheme="uncoded", policy={"name": "wait_all"}))
    return [by_label[label] for label in dict.fromkeys(labels)]


def variant_yaml(variant: Variant) -> str:
    """``{label: fr(s=1), scheme: fr, s: 1}``: the variant as a scenario's `variants:` entry, defaults left out."""
    data = variant.model_dump(mode="json", exclude_defaults=True)
    if variant.compression is None or variant.compression.name == "none":  # (what a variant without one gets)
        data.pop("compression", None)
    if "policy" in data:  # (the policy's name is its tag's default: keep it)
        data["policy"] = {"name": variant.policy.name, **data["policy"]}
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=True, width=10_000).strip()


def write_scenario(scenario: Scenario, advice: Advice, path: Path) -> Path:
    """The scenario recommend weighed, running uncoded, the pick and its near ties: `gcbench run` or `gcbench
    simulate` it as it is."""
    if path.is_dir():
        raise GcbenchError(f"--write-scenario {path}: is a directory; give a file name such as picked.yaml.")
    if not path.parent.exists():
        raise GcbenchError(f"--write-scenario {path}: the folder {path.parent} does not exist.")
    chosen = with_variants(scenario, advice.variants)
    if advice.placement is not None:  # the pick's placement: its near ties run there too
        chosen = with_placement(chosen, advice.placement)
    data = chosen.model_dump(mode="json", exclude_none=True)
    data.pop("sweep", None)
    data["name"] = f"{scenario.name}-picked"[:100]  # (its results are not the swept scenario's)
    data["description"] = f"gcbench recommend's pick for {scenario.name}: {advice.pick} beside uncoded"[:500]
    for entry in data["variants"]:  # (each variant holds the scenario's compression once loaded: leave it there)
        if entry.get("compression") == data.get("compression"):
            entry.pop("compression")
    head = (f"# gcbench recommend's pick, {advice.pick}, beside uncoded (the baseline)"
            + (f" and its near ties ({', '.join(advice.close)})" if advice.close else "") + ".\n")  # fmt: skip
    path.write_text(head + yaml.safe_dump(data, sort_keys=False, width=120))
    return path
