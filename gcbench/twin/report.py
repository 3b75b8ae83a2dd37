"""`gcbench calibrate --report DIR`: per fitted part, the measurements against the fit (ECDF and QQ plot, with the
KS statistic and the errors at p50 and p99), then each leg's table (replay, fitted, predicted) with Kendall's tau.
Markdown, PNG and PDF."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gcbench.twin.calibrate import Calibration
from gcbench.twin.evaluate import SIMULATED_ITERATIONS, ranking
from gcbench.twin.fit import frozen, measured_quantiles

PARTS = {
    "per_partition": "compute per partition (s)",
    "dispatch": "dispatch (s)",
    "between": "master's time between iterations (s)",
}


def part_samples(calibration: Calibration, part: str) -> tuple[np.ndarray, np.ndarray]:
    """The measurements a part was fitted to, and which were censored."""
    p = calibration.parts
    if part == "per_partition":
        return calibration.per_partition, p.censored
    values = p.dispatch if part == "dispatch" else p.between
    return values, np.zeros(len(values), dtype=bool)


PAIRED_NOTE = (
    "Simulated: the calibrated scenario run with the measured run's seeds and iterations, so its injected "
    "stragglers, failures and overheads are the very ones the run drew, and only the fitted parts differ. "
    f"Long run: the same scenario over {SIMULATED_ITERATIONS} iterations of other draws, what the cluster does "
    "on average; a short run's mean departs from it by the stragglers it happened to draw."
)


def write_report(calibration: Calibration, legs: dict[str, pd.DataFrame], out: Path,
                 verdict_runs: dict | None = None) -> list[Path]:  # fmt: skip
    """report.md and a figure per part in ``out``; the paths written. ``verdict_runs``: the leg titles to judge per
    variant (gcbench/twin/verdict.py), each with its measured run."""
    from gcbench.twin.verdict import injected_models, verdicts

    verdict_runs = verdict_runs or {}
    from gcbench.plot.style import apply

    apply()
    out.mkdir(parents=True, exist_ok=True)
    written, lines = [], ["# Calibration report", "", f"Runs: {', '.join(calibration.sources)}", ""]
    lines += ["## Fitted parts", "", "| part | distribution | samples | censored | order-stat. error (CV) | KS | "
              "p50 error | p99 error |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for part, fit in calibration.fits.items():
        x, c = part_samples(calibration, part)
        keep = np.isfinite(x) & (x > 0)
        measured = measured_quantiles(x[keep], c[keep], np.array([0.5, 0.99]))
        model = frozen(fit.distribution).ppf(np.array([0.5, 0.99]))
        errors = [
            f"{m / q - 1:+.1%}" if np.isfinite(q) and q > 0 else "n/a" for m, q in zip(model, measured, strict=True)
        ]
        lines.append(f"| {part} | {fit.distribution['distribution']} | {fit.samples} | {fit.censored} | "
                     f"{fit.score:.3f} | {fit.ks:.3f} | {errors[0]} | {errors[1]} |")  # fmt: skip
        written += _part_figure(part, x[keep], c[keep], fit.distribution, out)
    lines += [""] + [f"![{part}]({part}.png)\n" for part in calibration.fits]
    fixed = f"{calibration.fixed:.4g} s" if calibration.fixed else "none"
    lines += [
        f"compute.fixed: {fixed}; speeds: {calibration.speeds or 'none'} (Kruskal-Wallis p = "
        f"{calibration.speed_test:.2g}); {calibration.upload_words()}",
        "",
    ]
    lines += [f"- {note}" for note in calibration.notes] + [""]  # fmt: skip
    for title, table in legs.items():
        if "target" in table.columns:  # time to accuracy
            lines += [f"## {title}", "", _accuracy_markdown(table), ""]
            continue
        lines += [f"## {title}", "", _markdown(table), ""]
        if table["long_run_mean"].notna().any():
            lines += [PAIRED_NOTE, ""]
        if title in verdict_runs:
            run = verdict_runs[title]
            lines += ["Verdicts:", ""]
            lines += [f"- {v.sentence()}" for v in verdicts(table, bool(injected_models(run.scenario)))] + [""]
        tau, kept = ranking(table)
        if len(table) > 1:
            lines += [f"Kendall's tau {tau:.2f}; ranking {'kept' if kept else 'not kept'} where the measured "
                      "means' 95% CIs are apart.", ""]  # fmt: skip
    report = out / "report.md"
    report.write_text("\n".join(lines))
    return [report, *written]


def _part_figure(part: str, x: np.ndarray, c: np.ndarray, distribution: dict, out: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    model = frozen(distribution)
    fig, (ecdf, qq) = plt.subplots(1, 2, figsize=(9, 3.6), constrained_layout=True)
    grid = np.linspace(0.005, 0.995, 199)
    measured = measured_quantiles(x, c, grid)
    ecdf.step(measured, grid, where="post", label="measured" + (" (Kaplan-Meier)" if c.any() else ""))
    span = np.linspace(np.nanmin(measured), np.nanmax(measured), 200)
    ecdf.plot(span, model.cdf(span), label=f"fitted {distribution['distribution']}")
    ecdf.set_xlabel(PARTS[part])
    ecdf.set_ylabel("cumulative probability")
    ecdf.legend(frameon=False)
    fitted = model.ppf(grid)
    qq.plot(fitted, measured, ".", markersize=3)
    low, high = np.nanmin([fitted.min(), np.nanmin(measured)]), np.nanmax([fitted.max(), np.nanmax(measured)])
    qq.plot([low, high], [low, high], "--", linewidth=1, color="grey")
    qq.set_xlabel(f"fitted quantile ({distribution['distribution']})")
    qq.set_ylabel("measured quantile")
    paths = [out / f"{part}.png", out / f"{part}.pdf"]
    for path in paths:
        fig.savefig(path, dpi=150)
    plt.close(fig)
    return paths


def _markdown(table: pd.DataFrame) -> str:
    long_run = table["long_run_mean"].notna().any()  # (the replay has none)
    head = "| variant | measured mean (s) | 95% CI | simulated mean (s) | error | bias (s) | p50 error | p99 error |"
    rows = [head + (" long-run mean (s) | long-run error |" if long_run else ""),
            "|---|---|---|---|---|---|---|---|" + ("---|---|" if long_run else "")]  # fmt: skip
    for r in table.itertuples():
        rows.append(f"| {r.variant} | {r.measured_mean:.4f} | [{r.ci_low:.4f}, {r.ci_high:.4f}] | "
                    f"{r.simulated_mean:.4f} | {r.error_mean:+.1%} | {r.bias:+.4f} | {r.error_p50:+.1%} | "
                    f"{r.error_p99:+.1%} |" + (f" {r.long_run_mean:.4f} | {r.error_long_run:+.1%} |" if long_run
                                                else ""))  # fmt: skip
    return "\n".join(rows)


def _accuracy_markdown(table: pd.DataFrame) -> str:
    rows = ["| variant | target | measured (s) | simulated (s) | error |", "|---|---|---|---|---|"]
    for r in table.itertuples():
        rows.append(f"| {r.variant} | {r.target:.1%} | {r.measured_seconds:.2f} | {r.simulated_seconds:.2f} | "
                    f"{r.error:+.1%} |")  # fmt: skip
    return "\n".join(rows)
