"""What a summary says, in sentences: the fastest exact variant at each sweep point (and where that changes), the
variants tied with it within the 95% intervals, and the faster variants that are approximate or stale, with
what they give up (an approximate decode's residual, a stale one's staleness).

Read from the summary's columns alone (gcbench/results/summary.py), so a simulation's summary and a real run's
get the same sentences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

RESIDUAL_SCALE = "1.0 is one partition's gradient left out"


@dataclass(frozen=True)
class PointVerdict:
    """One sweep point's reading: the fastest exact variant, those tied with it, and the faster inexact ones."""

    where: str  # "straggling.slowdown = 6.0", or "" without a sweep
    value: object  # the swept value (one swept column), else None
    fastest: pd.Series | None  # the summary row of the fastest exact variant (None: no variant was exact)
    ties: list[str]  # exact variants whose interval overlaps the fastest's
    faster: list[pd.Series]  # approximate or stale rows faster than the fastest exact (beyond the intervals)
    intervals: bool  # whether the point's rows have 95% intervals
    undecided: bool = False  # every other exact variant is tied with the fastest: the runs tell none apart


def overlaps(a: pd.Series, b: pd.Series) -> bool:
    """Whether two rows' 95% intervals overlap (so their means are not told apart)."""
    return bool(a["ci_low"] <= b["ci_high"] and b["ci_low"] <= a["ci_high"])


def read_point(rows: pd.DataFrame, sweep_columns: list[str]) -> PointVerdict:
    """The verdict of one sweep point's summary rows."""
    where = ", ".join(f"{c} = {rows[c].iloc[0]}" for c in sweep_columns)
    value = rows[sweep_columns[0]].iloc[0] if len(sweep_columns) == 1 else None
    intervals = bool(rows["ci_low"].notna().all())
    exact = rows[rows["kind"] == "exact"]
    if exact.empty:
        return PointVerdict(where, value, None, [], [], intervals)
    fastest = exact.loc[exact["mean"].idxmin()]
    others = [r for _, r in exact.iterrows() if r["variant"] != fastest["variant"]]
    ties = [r["variant"] for r in others if intervals and overlaps(r, fastest)]
    faster = [
        r
        for _, r in rows[rows["kind"] != "exact"].iterrows()
        if pd.notna(r["speedup"]) and r["mean"] < fastest["mean"] and not (intervals and overlaps(r, fastest))
    ]
    undecided = bool(others) and len(ties) == len(others)
    return PointVerdict(where, value, fastest, ties, faster, intervals, undecided)


def conclusions(summary: pd.DataFrame, sweep_columns: list[str], stopped: list[str] | None = None) -> list[str]:
    """The summary's conclusion: one line for a single point, a few for a sweep. ``stopped``: the variants of a
    real run that stopped early, whose times are of the iterations before the stop: left out of the comparison,
    and said so."""
    left_out = [] if not stopped else stopped_lines(summary, stopped)
    if stopped:
        summary = summary[~summary["variant"].isin(stopped)]
        if not summary.empty and summary["baseline"].iloc[0] in stopped:  # (a speed against a part of a run)
            summary = summary.assign(speedup=float("nan"))
    if summary.empty:
        return left_out
    verdicts = [read_point(rows, sweep_columns) for _, rows in summary.groupby("point", sort=True)]
    baseline = summary["baseline"].iloc[0]
    lines = fastest_lines(verdicts, baseline, sweep_columns)
    lines += undecided_lines(verdicts)
    lines += inexact_lines(verdicts, baseline)
    if not all(v.intervals for v in verdicts):
        lines.append("Without 95% intervals, close means may be noise.")
    return lines + left_out


def stopped_lines(summary: pd.DataFrame, stopped: list[str]) -> list[str]:
    """'Left out of the comparison: FR s=1 and uncoded stopped early (...).'"""
    named = [label for label in dict.fromkeys(summary["variant"]) if label in stopped]
    if not named:
        return []
    listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
    return [f"Left out of the comparison: {listed} stopped early (the table's times are of the iterations before "
            "the stop)."]  # fmt: skip


def fastest_lines(verdicts: list[PointVerdict], baseline: str, sweep_columns: list[str]) -> list[str]:
    """'Fastest exact variant: uncoded at slowdown 1.5 to 3.0; FR s=2 from 6.0 on (1.53x to 4.94x uncoded's speed).'"""
    if len(verdicts) == 1:
        v = verdicts[0]
        if v.fastest is None:
            return ["No variant decoded exactly in every iteration."]
        return [f"Fastest exact variant: {name_with_ties(v)}{speed(v.fastest, baseline)}."]
    stretches: list[list[PointVerdict]] = []
    for v in verdicts:
        if stretches and fastest_name(stretches[-1][0]) == fastest_name(v):
            stretches[-1].append(v)
        else:
            stretches.append([v])
    parts = []
    for i, stretch in enumerate(stretches):
        at = span(stretch, last=i == len(stretches) - 1 and len(stretches) > 1, sweep_columns=sweep_columns)
        first = stretch[0].fastest
        if first is None:
            parts.append(f"none exact {at}")
            continue
        speeds = [v.fastest["speedup"] for v in stretch]
        ties = sorted({t for v in stretch for t in v.ties})
        tied = f", tied within the 95% intervals with {', '.join(ties)}" if ties else ""
        parts.append(f"{first['variant']} {at}{speed_range(speeds, first['variant'], baseline)}{tied}")
    return [f"Fastest exact variant: {'; '.join(parts)}."]


def undecided_lines(verdicts: list[PointVerdict]) -> list[str]:
    """Where the fastest exact variant is tied with every other exact one, say plainly that nothing is decided."""
    undecided = [v for v in verdicts if v.undecided]
    if not undecided:
        return []
    if len(verdicts) == 1:
        where = ""
    elif undecided[0].value is not None:  # one swept column: its name once, then the values
        column = undecided[0].where.split(" = ")[0]
        where = f"At {column} = {', '.join(str(v.value) for v in undecided)}, "
    else:
        where = f"At {'; '.join(v.where for v in undecided)}, "
    every = "every" if where else "Every"
    return [f"{where}{every} exact variant's 95% interval overlaps the fastest's: these runs do not tell the exact "
            "variants apart (more seeds or iterations would)."]  # fmt: skip


def fastest_name(v: PointVerdict) -> str | None:
    return None if v.fastest is None else v.fastest["variant"]


def span(stretch: list[PointVerdict], last: bool, sweep_columns: list[str]) -> str:
    """'at slowdown = 3.0', 'from slowdown = 6.0 on', 'for slowdown = 1.5 to 3.0', or the points listed."""
    if stretch[0].value is None:
        return "at " + "; ".join(v.where for v in stretch)
    column = sweep_columns[0]
    if len(stretch) == 1 and (not last or isinstance(stretch[0].value, str)):  # (no "on" past a name: no order)
        return f"at {column} = {stretch[0].value}"
    if last:
        return f"from {column} = {stretch[0].value} on"
    return f"for {column} = {stretch[0].value} to {stretch[-1].value}"


def speed(row: pd.Series, baseline: str) -> str:
    if row["variant"] == baseline or pd.isna(row["speedup"]):
        return ""
    return f", {row['speedup']:.2f}x {baseline}'s speed"


def speed_range(speeds: list[float], variant: str, baseline: str) -> str:
    if variant == baseline or any(pd.isna(s) for s in speeds):
        return ""
    low, high = min(speeds), max(speeds)
    text = f"{low:.2f}x" if math.isclose(low, high, rel_tol=5e-3) else f"{low:.2f}x to {high:.2f}x"
    return f" ({text} {baseline}'s speed)"


def name_with_ties(v: PointVerdict) -> str:
    name = v.fastest["variant"]
    return f"{name} (tied within the 95% intervals with {', '.join(v.ties)})" if v.ties else name


def inexact_lines(verdicts: list[PointVerdict], baseline: str) -> list[str]:
    """One line per approximate or stale variant faster than the fastest exact one somewhere (beyond the
    intervals), saying what it gives up there."""
    found: dict[str, list[tuple[PointVerdict, pd.Series]]] = {}
    for v in verdicts:
        for row in v.faster:
            found.setdefault(row["variant"], []).append((v, row))
    lines = []
    for variant, seen in found.items():
        rows = [row for _, row in seen]
        at = "" if len(verdicts) == 1 else f" at {len(seen)} of {len(verdicts)} points ({points_text(seen)})"
        speeds = speed_range([r["speedup"] for r in rows], variant, baseline).strip(" ()")
        if rows[0]["kind"] == "approximate":
            shares, residual = [r["exact_share"] for r in rows], max(r["residual"] for r in rows)
            exact = f"{min(shares):.0%}" + ("" if min(shares) == max(shares) else f" to {max(shares):.0%}")
            cost = (f"approximate: none of its decodes were exact (residual up to {residual:.3g}; {RESIDUAL_SCALE})"
                    if max(shares) == 0 else f"approximate: {exact} of its decodes were exact, and the others had "
                    f"a residual of up to {residual:.3g} ({RESIDUAL_SCALE})")  # fmt: skip
        else:
            cost = f"stale: its results were {max(r['staleness'] for r in rows):.2f} steps old on average"
        lines.append(f"Faster than that{at}, {variant} ({speeds}) is {cost}.")
    return lines


def points_text(seen: list[tuple[PointVerdict, pd.Series]]) -> str:
    return ", ".join(str(v.value) if v.value is not None else v.where for v, _ in seen)
