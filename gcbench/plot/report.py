"""A Markdown and an HTML report: the scenario, the summary table, every figure with its caption."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd

from gcbench.plot import figures
from gcbench.plot.make import Written
from gcbench.plot.runs import Run
from gcbench.results import summarize


def summary_table(run: Run) -> pd.DataFrame:
    table = summarize(run.iterations, run.sweep_columns)
    columns = ["variant", *run.sweep_columns, "mean", "ci_low", "ci_high", "p50", "p99", "speedup", "exact_share"]
    return table[columns].round(5)


def markdown_table(frame: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += [
        "| " + " | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join(lines)


def write_report(runs: list[Run], written: list[Written], out: Path, target: float | None = None) -> list[Path]:
    name = runs[0].scenario_name
    markdown = [f"# gcbench report: {name}", ""]
    body = [f"<h1>gcbench report: {html.escape(name)}</h1>"]
    for run in runs:
        scenario = run.metadata.get("scenario", {})
        markdown += [f"## {run.mode} run `{run.path}`", "", scenario.get("description", ""), ""]
        markdown += [
            "```json",
            json.dumps(scenario, indent=1)[:4000],
            "```",
            "",
            markdown_table(summary_table(run)),
            "",
        ]
        body += [
            f"<h2>{run.mode} run <code>{html.escape(str(run.path))}</code></h2>",
            f"<p>{html.escape(scenario.get('description', ''))}</p>",
        ]
        body += [summary_table(run).to_html(index=False, border=0)]
        goal = target if target is not None else figures.default_target(run.iterations)
        if goal is not None:
            reached = figures.time_to_accuracy(run.iterations, goal).round(3)
            markdown += [f"Time to reach {goal:.1%} test accuracy (s):", "", markdown_table(reached), ""]
            body += [f"<p>Time to reach {goal:.1%} test accuracy (s):</p>", reached.to_html(index=False, border=0)]
    markdown += ["## Figures", ""]
    body += ["<h2>Figures</h2>"]
    for item in written:
        png = next((f for f in item.files if f.suffix == ".png"), item.files[0])
        markdown += [f"![{item.caption}]({png.name})", "", f"*{item.name}*: {item.caption}", ""]
        caption = html.escape(item.caption)
        body += [f'<figure><img src="{png.name}" style="max-width:100%"><figcaption>{caption}</figcaption></figure>']
    paths = [out / f"{name}-report.md", out / f"{name}-report.html"]
    paths[0].write_text("\n".join(markdown) + "\n")
    paths[1].write_text("<!doctype html><meta charset='utf-8'><title>gcbench report</title>\n" + "\n".join(body) + "\n")
    return paths
