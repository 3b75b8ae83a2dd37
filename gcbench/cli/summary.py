"""The summary table of a simulation or a real run, per sweep point, with what each kind of variant means and the
conclusion (gcbench/results/conclusion.py): the CLI prints what the results layer computed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gcbench.cli.console import say

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console


def print_summary(
    summary: pd.DataFrame,
    sweep_columns: list[str],
    console: Console,
    variants: list | None = None,
    stopped: list[str] | None = None,
) -> None:
    """The summary table per sweep point; ``variants`` (every point's) say which staleness sentences apply;
    ``stopped``: the variants of a real run that stopped early (the conclusion leaves them out)."""
    import pandas as pd
    from rich.table import Table

    from gcbench.results.conclusion import conclusions

    for _, rows in summary.groupby("point", sort=True):
        where = ", ".join(f"{c} = {rows[c].iloc[0]}" for c in sweep_columns)
        stale = bool((rows["staleness"] > 0).any())
        title = f"iteration time (s){f' at {where}' if where else ''}; speedup over {rows['baseline'].iloc[0]}"
        table = Table(title=title)
        names = ["variant", "kind", "mean", "95% CI", "p50", "p99", "speedup", "exact"]
        names += ["staleness"] if stale else []
        for name in names + training_headings(rows):
            table.add_column(name, justify="left" if name in ("variant", "kind") else "right")
        for row in rows.itertuples():
            interval = f"[{interval_low(row.ci_low)}, {row.ci_high:.4g}]" if pd.notna(row.ci_low) else "n/a"
            cells = [row.variant, row.kind, f"{row.mean:.4g}", interval, f"{row.p50:.4g}", f"{row.p99:.4g}"]
            speedup = f"{row.speedup:.2f}x" if pd.notna(row.speedup) else "n/a"
            cells += [speedup, f"{row.exact_share:.0%}"] + ([f"{row.staleness:.2f}"] if stale else [])
            table.add_row(*cells, *training_cells(row))
        console.print(table)
        if "final_loss" in rows.columns:
            console.print(TRAINED_NOTE + (TARGET_NOTE if "time_to_target" in rows.columns else ""))
        if stale:
            console.print(staleness_note(variants))
    say(console, KIND_NOTE)
    for line in conclusions(summary, sweep_columns, stopped):
        say(console, line)


KIND_NOTE = (
    "kind: exact (every decode exact), approximate (some decodes were not: an approximate scheme, or a policy that "
    "stopped waiting) or stale (results older than the model); exact: the share of exact decodes."
)


def interval_low(low: float) -> str:
    """A 95% interval's lower end as printed: one clipped at 0 (a mean time cannot be negative) says so."""
    return "0 (clipped)" if low == 0.0 else f"{low:.4g}"


STALENESS_NOTES = {
    "asynchronous": "Asynchronous policies: an iteration is one model update from k results, and staleness is how "
    "many updates old the used results were on average; their speedup over synchronous iterations is not "
    "comparable (n/a).",
    "pipelined": "Pipelined schemes: staleness is the mean age, in steps, of the oldest cached partition gradient a "
    "decode used.",
    "sequential": "Sequential schemes (sr_sgc, m_sgc): staleness is the rounds between a job's dispatch and its "
    "decode (sr_sgc's B, m_sgc's W - 2 + B); an iteration is a round.",
}


def staleness_note(variants: list | None) -> str:
    """What staleness means for the kinds of stale variants run (``variants``: the scenarios' variants; every kind
    where not known)."""
    from gcbench.coding import scheme_class

    kinds = set(STALENESS_NOTES)
    if variants is not None:
        kinds = {kind for v in variants for kind, stale in (("asynchronous", not v.policy.synchronous),
                 ("pipelined", scheme_class(v.scheme).pipelined), ("sequential", scheme_class(v.scheme).sequential))
                 if stale}  # fmt: skip
    return " ".join(note for kind, note in STALENESS_NOTES.items() if kind in kinds)


TRAINED_NOTE = "Final loss and test accuracy: each seed's last, averaged over the seeds."
TARGET_NOTE = (
    " Time to the target: seconds on the run's clock (simulated, or wall-clock for a real run) to the first test "
    "evaluation reaching it, averaged over the seeds that did."
)


def training_headings(rows: pd.DataFrame) -> list[str]:
    """The summary's training columns, for a run that trained: final loss and accuracy, time to the target."""
    if "final_loss" not in rows.columns:
        return []
    target = [f"time to {rows['target_accuracy'].iloc[0]:.1%}"] if "time_to_target" in rows.columns else []
    return ["final loss", "final accuracy", *target]


def training_cells(row) -> list[str]:
    import pandas as pd

    if not hasattr(row, "final_loss"):
        return []
    accuracy = f"{row.final_accuracy:.1%}" if pd.notna(row.final_accuracy) else "n/a"
    cells = [f"{row.final_loss:.4g}", accuracy]
    if hasattr(row, "time_to_target"):
        cells.append(time_to_target_cell(row))
    return cells


def time_to_target_cell(row) -> str:
    """'1.234 s', '1.234 s (2 of 3 seeds)' or 'not reached' (in the run's clock: simulated seconds here)."""
    if not row.target_reached:
        return "not reached"
    seeds = "" if row.target_reached == row.seeds else f" ({row.target_reached} of {row.seeds} seeds)"
    return f"{row.time_to_target:.4g} s{seeds}"
