"""A Markdown and an HTML report: the scenario, the summary table, every figure with its caption."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd

from gcbench.plot import figures
from gcbench.plot.make import Written
from gcbench.plot.runs import Run
from gcbench.plot.training import run_target
from gcbench.results import summarize

# the summary's columns as the console table names them
HEADINGS = {"mean": "mean (s)", "ci_low": "95% CI low", "ci_high": "95% CI high", "p50": "p50", "p99": "p99",
            "speedup": "speedup", "exact_share": "exact share"}  # fmt: skip


TRAINED_HEADINGS = {"final_loss": "final loss", "final_accuracy": "final accuracy"}  # a run that trained


def summary_table(run: Run) -> pd.DataFrame:
    table = summarize(run.iterations, run.sweep_columns)
    headings = {**HEADINGS, **{k: v for k, v in TRAINED_HEADINGS.items() if k in table.columns}}
    columns = ["variant", *run.sweep_columns, *headings]
    return table[columns].round(5).rename(columns=headings)


def markdown_table(frame: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def _cell(value) -> str:
    """A number as the console prints it: 4 significant digits, n/a where there is none."""
    if isinstance(value, float):
        return "n/a" if value != value else f"{value:.4g}"
    return str(value)


def report_name(runs: list[Run]) -> str:
    """Named after the runs' directories, as their figures are, so reports of different runs never collide."""
    return "+".join(run.label for run in runs)


def accuracy_lines(run: Run, target: float | None) -> tuple[str, pd.DataFrame | None]:
    """A sentence on the time to reach the target accuracy, and the table of the variants that reached it."""
    goal = run_target(run.iterations, run.metadata, target)
    if goal is None:
        return "", None
    reached = figures.time_to_accuracy(run.iterations, goal).dropna().round(3)
    if reached.empty:
        best = run.iterations["accuracy"].max()
        return f"No variant reached {goal:.1%} test accuracy (the best reached {best:.1%}).", None
    missed = [v for v in run.iterations["variant"].drop_duplicates() if v not in set(reached["variant"])]
    rest = f" ({', '.join(missed)}: not reached)" if missed else ""
    return f"Time to reach {goal:.1%} test accuracy (s){rest}:", reached


def write_report(runs: list[Run], written: list[Written], out: Path, target: float | None = None,
                 attributions: dict[Path, pd.DataFrame] | None = None) -> list[Path]:  # fmt: skip
    name = runs[0].scenario_name
    markdown = [f"# gcbench report: {name}", ""]
    body = [f"<h1>gcbench report: {html.escape(name)}</h1>"]
    for run in runs:
        _run_section(run, target, markdown, body)
        table = (attributions or {}).get(run.path)
        if table is not None:
            _attribution_section(run, table, markdown, body)
    markdown += ["## Figures", ""]
    body += ["<h2>Figures</h2>"]
    for item in written:
        png = next((f for f in item.files if f.suffix == ".png"), item.files[0])
        markdown += [f"![{item.caption}]({png.name})", "", f"*{item.name}*: {item.caption}", ""]
        caption = html.escape(item.caption)
        body += [f'<figure><img src="{png.name}" style="max-width:100%"><figcaption>{caption}</figcaption></figure>']
    paths = [out / f"{report_name(runs)}-report.md", out / f"{report_name(runs)}-report.html"]
    paths[0].write_text("\n".join(markdown) + "\n")
    paths[1].write_text("<!doctype html><meta charset='utf-8'><title>gcbench report</title>\n" + "\n".join(body) + "\n")
    return paths


def _run_section(run: Run, target: float | None, markdown: list[str], body: list[str]) -> None:
    scenario = run.metadata.get("scenario", {})
    description = str(scenario.get("description", ""))
    markdown += [f"## {run.mode} run `{run.path}`", "", description, ""]
    body += [
        f"<h2>{run.mode} run <code>{html.escape(str(run.path))}</code></h2>",
        f"<p>{html.escape(description)}</p>",
    ]
    if run.partial:
        markdown += [f"**{run.partial}.**", ""]
        body += [f"<p><strong>{html.escape(run.partial)}.</strong></p>"]
    markdown += ["```json", json.dumps(scenario, indent=1)[:4000], "```", "", markdown_table(summary_table(run)), ""]
    body += [summary_table(run).to_html(index=False, border=0, na_rep="n/a")]
    sentence, reached = accuracy_lines(run, target)
    if sentence:
        markdown += [sentence, ""] + ([markdown_table(reached), ""] if reached is not None else [])
        body += [f"<p>{html.escape(sentence)}</p>"] + (
            [reached.to_html(index=False, border=0)] if reached is not None else []
        )


ATTRIBUTION_HEADINGS = {"variant": "variant", "worker": "worker", "pattern": "pattern", "straggled": "straggled",
                        "ended": "ended it", "absorbed": "absorbed", "p50_ratio": "p50 / median",
                        "p99_ratio": "p99 / median", "share": "share of slowdown",
                        "speedup_without": "speedup without it"}  # fmt: skip
TOP_WORKERS = 3


def attribution_rows(run: Run, table: pd.DataFrame) -> pd.DataFrame:
    """The attribution table's first ``TOP_WORKERS`` workers per variant at the run's last sweep point."""
    last = table[table["point"] == run.iterations["point"].max()]
    top = last[last["rank"] <= TOP_WORKERS].sort_values(["variant", "rank"], key=_in_run_order(run))
    if "level" in top.columns:  # a node whose workers straggled together (rank 0): named as the node
        named = zip(top["worker"], top["node"], top["level"], strict=True)
        top = top.assign(worker=[f"node {node}" if level == "node" else worker for worker, node, level in named])
    return top[list(ATTRIBUTION_HEADINGS)].round(3).rename(columns=ATTRIBUTION_HEADINGS)


def _in_run_order(run: Run):
    order = {label: i for i, label in enumerate(dict.fromkeys(run.iterations["variant"]))}
    return lambda column: column.map(order) if column.name == "variant" else column


def _attribution_section(run: Run, table: pd.DataFrame, markdown: list[str], body: list[str]) -> None:
    rows = attribution_rows(run, table)
    sentence = (
        f"Who slowed the run (the {TOP_WORKERS} costliest workers per variant at the last sweep point; shares of "
        "iterations, and of the time a what-if replay saves without each worker's slowness; docs/attribution.md):"
    )
    from gcbench.plot.attribution import signal_sentence

    verdict = signal_sentence(table, int(run.iterations["point"].max()))
    verdict = verdict[0].upper() + verdict[1:] + "."
    markdown += [sentence, "", markdown_table(rows), "", verdict, ""]
    body += [f"<p>{html.escape(sentence)}</p>", rows.to_html(index=False, border=0, na_rep="n/a"),
             f"<p>{html.escape(verdict)}</p>"]  # fmt: skip
