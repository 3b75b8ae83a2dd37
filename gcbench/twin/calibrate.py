"""Fit a scenario to real runs (docs/calibration.md): decompose their iterations, fit each part, and write the
runs' scenario with the fitted compute, dispatch, upload and master time in place of its hand-written ones.

The compute model: a job of load L on worker w takes (F + X_L) / speed_w, with F a fixed part (``compute.fixed``:
loading the weights, encoding) and X_L its partitions' compute: L times one draw of the per-partition time
(``compute.per_partition``, ``load: scale``), or the sum of L draws (``load: sum``) where the runs show the
spread of a job's time per partition falling with its load as a sum's does. F and the mean of X come from a
least-squares line through each load's median work (Kaplan-Meier's where jobs were cut short); with one load in
the runs F cannot be told from X and is 0. Workers get speed factors where their
per-partition times differ beyond noise (Kruskal-Wallis, p < 0.001, and medians more than 5% apart).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

import numpy as np
import yaml
from scipy import stats

from gcbench.errors import GcbenchError
from gcbench.scenario.schema import Scenario
from gcbench.twin.decompose import Parts, decompose
from gcbench.twin.fit import Fit, fit_part, measured_mean, measured_quantiles, scaled
from gcbench.twin.measured import MeasuredRun
from gcbench.twin.wire_fit import describe_links, fit_links, links_section

FEW_ITERATIONS = 50  # per variant and seed: below it calibrate warns (the refusal is at MIN_ITERATIONS in all)
SPEED_P_VALUE, SPEED_SPREAD = 1e-3, 0.05
MATCH_STEPS = 3  # steps of the compute factor's search (matched_to_means)
SHARED_MIN = 0.03  # standard deviation of log time below which no shared slowness is modelled
# the slope of log spread against log load between scale's (0: the same spread at every load) and sum's (-1/2)
LOAD_SLOPE = -0.25
MIN_LOAD_JOBS = 20  # jobs of a load below which its spread is not judged


@dataclass
class Calibration:
    """The calibrated scenario, the fits behind it, and what the runs could not explain."""

    scenario: Scenario
    fits: dict[str, Fit]  # per_partition, dispatch, between
    fixed: float  # seconds of compute.fixed (0: none)
    speeds: list[float] | None
    speed_test: float  # Kruskal-Wallis p-value across workers (NaN: not testable)
    upload: np.ndarray  # the measured uploads (the scenario keeps their mean as network.latency)
    parts: Parts
    sources: list[str]
    notes: list[str] = field(default_factory=list)
    per_partition: np.ndarray | None = None  # the per-partition times fitted (per job: work / shared, less F, by L)
    links: str | None = None  # the links fitted to the uploads, in a sentence (None: the mean upload is the latency)

    def upload_words(self) -> str:
        """How the scenario models the upload: the fitted links, or the mean upload as the latency."""
        if self.links is not None:
            return self.links
        return f"latency (mean upload): {self.scenario.network.latency:.4g} s"


def calibrate(runs: list[MeasuredRun], variants: list[str] | None = None, cores: int | None = None) -> Calibration:
    """The runs' scenario, calibrated to their measurements (every variant's, or only ``variants``'). ``cores``: the
    cores the workers shared (default: what the runs recorded); fewer than the workers, their contention is
    modelled (``compute.cores``) and each job's work is the core-seconds it computed."""
    base = runs[0].scenario
    for run in runs[1:]:
        if run.scenario.workers != base.workers:
            raise GcbenchError(
                f"{run.path}: has {run.scenario.workers} workers and {runs[0].path} {base.workers}; calibrate "
                "runs of one cluster together."
            )
    cores = shared_cores(runs, cores)
    parts = _pooled([decompose(run, variants, cores) for run in runs])
    if parts.jobs == 0:
        raise GcbenchError(f"{runs[0].path}: no worker's job ran to be measured, so there is nothing to calibrate.")
    n, notes = base.workers, []
    speeds, p_value = _speeds(parts, n)
    work = parts.work if speeds is None else parts.work * np.asarray(speeds)[parts.workers]
    fixed, note = _fixed(work, parts.loads, parts.censored)
    notes.append(note)
    shared, factor, note = _shared(work, parts.loads, parts.censored, parts.groups)
    notes.append(note)
    per_partition = (work / factor - fixed) / parts.loads  # (the model: a job takes shared x (fixed + load x X))
    load, per_partition, note = _load_model(per_partition, parts.loads, parts.censored)
    notes.insert(1, note)  # (the compute's comment in the written scenario: the fixed part's note and this one)
    source = ", ".join(str(run.path) for run in runs)
    fits = {
        "per_partition": fit_part(per_partition, parts.censored, n, what="the per-partition compute"),
        "dispatch": fit_part(parts.dispatch, None, n, what="the dispatch"),
        "between": fit_part(parts.between, None, 1, what="the master's time between iterations"),
    }
    if len(parts.upload) == 0:
        raise GcbenchError(f"{source}: no message reached the master, so the upload cannot be measured.")
    sources = [str(run.path) for run in runs]
    links, note, described = _links(runs, variants)
    notes.append(note)
    scenario = _calibrated(base, fits, fixed, speeds, float(np.mean(parts.upload)), sources, shared, cores, links, load)
    scenario, note = matched_to_means(scenario, runs, variants)
    notes.append(note)
    from gcbench.twin.evaluate import SIMULATED_ITERATIONS

    notes.append(f"The written scenario keeps the run's {base.iterations} iterations. The fitted and predicted "
                 "tables simulate each run's own seeds and iterations (its very stragglers); the long run simulates "
                 f"{SIMULATED_ITERATIONS} iterations per variant.")  # fmt: skip
    short = [run for run in runs if run.iterations.groupby(["variant", "seed"]).size().max() < FEW_ITERATIONS]
    for run in short:
        notes.append(f"{run.path} has fewer than {FEW_ITERATIONS} iterations per variant and seed, so the fits' "
                     "tails and every measured p99 rest on a handful of samples; a run of 100 or more fits "
                     "them.")  # fmt: skip
    if cores is not None:
        notes.append(f"The {base.workers} workers shared {cores} cores: each job's work is the core-seconds it "
                     "computed, and the scenario shares them again (compute.cores).")  # fmt: skip
    for run in runs:
        if run.unmodelled:
            notes.append(
                f"{run.path}: skipped {', '.join(run.unmodelled)} (no master ran it: the simulator models none)."
            )
    if parts.unexplained:
        unexplained = "; ".join(f"{count} {reason}" for reason, count in parts.unexplained.items())
        notes.append(f"Not explained by the parts: {unexplained}.")
    return Calibration(scenario, fits, fixed, speeds, p_value, parts.upload, parts, sources, notes, per_partition,
                       described)  # fmt: skip


def matched_to_means(scenario: Scenario, runs: list[MeasuredRun], variants: list[str] | None) -> tuple[Scenario, str]:
    """The scenario with its compute (the fixed and the per-partition part alike) times one factor, found so that,
    simulated paired with the calibrating variants (their seeds, iterations and injected draws), their total
    compute phase (an iteration's start to the compute end of the last job it used) is the measured one; and a
    sentence saying the factor and the error before and after.

    The parts are fitted job by job; how they combine in an iteration (jobs sharing cores, the order statistic a
    policy waits for) leaves a residual in the iteration time that no part shows. The factor is that residual,
    reported in the scenario's header and calibrate's output, not silently absorbed. It is matched on the compute
    phase, not the whole iteration: on a slow wire the compute is a small part of the iteration, and a residual of
    the wire's (1% of the iteration) would move the compute by far more; and on the iterations of a real run that
    began clear of the previous one's abandoned work, which the simulator's abandoned jobs never leave. It is
    found in ``MATCH_STEPS`` steps: the first as if the whole phase were compute, then secants (the phase is
    nearly linear in the factor)."""
    from gcbench.twin.evaluate import compute_phases, paired

    def totals(candidate: Scenario) -> tuple[float, float]:
        measured = simulated = 0.0
        for run in runs:
            labels = [label for label in run.variants if variants is None or label in variants]
            for label, times in paired(candidate, run, labels, phase=True).items():
                phases, clear = compute_phases(run, label)
                measured += float(phases[clear].sum())
                simulated += float(times[clear].sum())
        return measured, simulated

    measured, simulated = totals(scenario)
    before, factor, matched = simulated / measured - 1.0, 1.0, scenario
    previous = None  # (factor, simulated) of the step before: a secant through the two
    for _ in range(MATCH_STEPS):
        if not (np.isfinite(simulated) and np.isfinite(measured) and simulated > 0 and measured > 0):
            break
        if previous is None or simulated == previous[1]:
            step = factor * (measured / simulated) - factor  # (first: as if the whole iteration were compute)
        else:
            step = (measured - simulated) * (factor - previous[0]) / (simulated - previous[1])
        previous, factor = (factor, simulated), max(factor + step, 0.05 * factor)
        matched = compute_scaled(scenario, factor)
        simulated = totals(matched)[1]
    after = simulated / measured - 1.0
    parts = "compute.per_partition and compute.fixed" if scenario.compute.fixed else "compute.per_partition"
    return matched, (
        f"The written {parts} are the fit scaled by {factor:.4f}: fitted job by job, the parts leave a residual in "
        f"how they combine in an iteration, so the scale makes the calibrating variants' simulated compute phase "
        f"(an iteration's start to the compute end of the last job it used; their runs' own seeds and stragglers) "
        f"match the measured one in total; it differs by {after:+.1%} after the scaling and by {before:+.1%} before "
        f"it (the fitted parts' table shows the fit before scaling)."
    )


def compute_scaled(scenario: Scenario, factor: float) -> Scenario:
    """The scenario with each job's compute (its fixed and per-partition parts) ``factor`` times as long."""
    compute = scenario.compute.model_dump(mode="json", exclude_none=True)
    compute["per_partition"] = scaled(compute["per_partition"], factor)
    if "fixed" in compute:
        compute["fixed"] = scaled(compute["fixed"], factor)
    return scenario.model_copy(update={"compute": type(scenario.compute).model_validate(compute)})


def shared_cores(runs: list[MeasuredRun], cores: int | None) -> int | None:
    """The cores whose contention to model: ``cores``, else what the runs recorded (one value for all); None where
    none is known or the workers are not more than the cores (each then computes alone)."""
    if cores is None:
        recorded = {run.cores for run in runs}
        cores = recorded.pop() if len(recorded) == 1 else None
    return cores if cores is not None and cores < runs[0].scenario.workers else None


def _pooled(all_parts: list[Parts]) -> Parts:
    if len(all_parts) == 1:
        return all_parts[0]
    pooled = {name: np.concatenate([getattr(p, name) for p in all_parts]) for name in (
        "dispatch", "work", "loads", "censored", "workers", "upload", "between")}  # fmt: skip
    offsets = np.cumsum([0] + [int(p.groups.max()) + 1 if len(p.groups) else 0 for p in all_parts[:-1]])
    pooled["groups"] = np.concatenate([p.groups + offset for p, offset in zip(all_parts, offsets, strict=True)])
    unexplained: dict[str, int] = {}
    for p in all_parts:
        for reason, count in p.unexplained.items():
            unexplained[reason] = unexplained.get(reason, 0) + count
    return Parts(**pooled, unexplained=unexplained)


def _speeds(parts: Parts, n: int) -> tuple[list[float] | None, float]:
    """Per-worker speed factors where workers differ beyond noise, else None; and the test's p-value."""
    complete = ~parts.censored
    per = parts.work[complete] / parts.loads[complete]
    groups = [per[parts.workers[complete] == w] for w in range(n)]
    if n < 2 or min(len(g) for g in groups) < 5:
        return None, float("nan")
    p_value = float(stats.kruskal(*groups).pvalue)
    medians = np.array([np.median(g) for g in groups])
    if p_value < SPEED_P_VALUE and medians.max() / medians.min() > 1 + SPEED_SPREAD:
        return [float(v) for v in np.median(per) / medians], p_value  # speed w: its times are divided by it
    return None, p_value


def _fixed(work: np.ndarray, loads: np.ndarray, censored: np.ndarray) -> tuple[float, str]:
    """Seconds of compute every job takes whatever its load: the intercept of the line through each load's median
    work (none with one load, or a line through zero)."""
    levels = np.unique(loads)
    if len(levels) < 2:
        return (
            0.0,
            f"Every job had load {levels[0]:g}, so the compute's fixed part cannot be told from its per-partition "
            "part.",
        )
    medians = np.array([measured_quantiles(work[loads == L], censored[loads == L], np.array([0.5]))[0] for L in levels])
    weights = np.array([np.count_nonzero(loads == L) for L in levels], dtype=float)
    known = np.isfinite(medians)
    slope, intercept = np.polyfit(levels[known], medians[known], 1, w=np.sqrt(weights[known]))
    line = ", ".join(f"load {L:g}: {m:.4g} s" for L, m in zip(levels, medians, strict=True))
    if intercept <= 0 or slope <= 0:
        return 0.0, f"The median work per job ({line}) grows in proportion to the load, so compute has no fixed part."
    return float(intercept), (f"The median work per job ({line}) is a fixed {intercept:.4g} s plus {slope:.4g} s per "
                              "partition.")  # fmt: skip


def _shared(work: np.ndarray, loads: np.ndarray, censored: np.ndarray,
            groups: np.ndarray) -> tuple[dict | None, np.ndarray, str]:  # fmt: skip
    """Slowness the workers of an iteration share: a one-way random-effects split of the complete jobs' log work
    (centred per load) into a part per iteration and a part per job. Where the shared part's standard deviation
    exceeds SHARED_MIN, a lognormal factor of mean 1 with it (``compute.shared``), and each job's estimated factor
    (its iteration's mean log work, shrunk towards the grand mean by the share of its variance the shared part
    explains), which its work is divided by before the per-partition time is fitted; else none and factors of 1."""
    complete = ~censored & (work > 0)
    logs = np.log(work[complete])
    for load in np.unique(loads[complete]):
        same = loads[complete] == load
        logs[same] -= logs[same].mean()
    ids, index = np.unique(groups[complete], return_inverse=True)
    counts = np.bincount(index)
    means = np.bincount(index, weights=logs) / counts
    several = counts >= 2
    if several.sum() < 5:
        return (
            None,
            np.ones(len(work)),
            "Too few iterations had two complete jobs to look for slowness the workers share.",
        )
    within = np.sum((logs - means[index]) ** 2) / max(len(logs) - len(ids), 1)
    grand = 0.0  # (centred per load)
    between = np.average((means[several] - grand) ** 2, weights=counts[several]) - within / np.mean(counts[several])
    sigma = float(np.sqrt(max(between, 0.0)))
    if sigma < SHARED_MIN:
        return None, np.ones(len(work)), (f"The workers of an iteration share no slowness (no slowness shared within "
                                          f"iterations: sd {sigma:.3f} of log time).")  # fmt: skip
    shrink = sigma**2 / (sigma**2 + within / counts)
    per_group = dict(zip(ids, np.exp(shrink * (means - grand)), strict=True))
    factor = np.array([per_group.get(g, 1.0) for g in groups])
    shared = {"distribution": "lognormal", "mu": -(sigma**2) / 2, "sigma": sigma}
    note = (f"The workers of an iteration share some slowness (sd {sigma:.3f} of log time, each job's own "
            f"{np.sqrt(within):.3f}): compute.shared models it as a lognormal factor of mean 1 per "
            "iteration.")  # fmt: skip
    return shared, factor, note


def _load_model(per_partition: np.ndarray, loads: np.ndarray,
                censored: np.ndarray) -> tuple[str, np.ndarray, str]:  # fmt: skip
    """How a job's compute grows with its load, from the spread of its time per partition at each load: ``scale``
    (one draw a job, times its load: the same relative spread at every load, Tandon et al.'s model) or ``sum`` (a
    draw per partition: the spread falling as 1 / sqrt(load)). The spread of a load is its jobs' (p90 - p10) /
    p50 (Kaplan-Meier's where cut short); the model is the nearer of the two to the slope of log spread against
    log load (0 and -1/2), judged where two loads have MIN_LOAD_JOBS jobs or more (else scale). Returns the
    model, the per-partition times to fit and a sentence. Under sum each job's time per partition is its load's
    mean plus its deviation from it times sqrt(load): the spread of one partition's draw (its mean and variance;
    its shape is the sum's, nearer normal, floored at a hundredth of the mean)."""
    levels, spreads, counts = [], [], []
    for level in np.unique(loads):
        here = loads == level
        if np.count_nonzero(here & ~censored) < MIN_LOAD_JOBS:
            continue
        p10, p50, p90 = measured_quantiles(per_partition[here], censored[here], np.array([0.1, 0.5, 0.9]))
        if np.isfinite(p90) and p50 > 0 and p90 > p10:
            levels.append(level), spreads.append((p90 - p10) / p50), counts.append(np.count_nonzero(here))
    if len(levels) < 2:
        return "scale", per_partition, (f"load: scale (one draw a job, times its load); fewer than two loads had "
                                        f"{MIN_LOAD_JOBS} jobs to tell it from a draw a partition (sum).")  # fmt: skip
    slope = float(np.polyfit(np.log(levels), np.log(spreads), 1, w=np.sqrt(counts))[0])
    seen = ", ".join(f"{spread:.2f} at load {level:g}" for level, spread in zip(levels, spreads, strict=True))
    if slope > LOAD_SLOPE:
        return "scale", per_partition, (f"load: scale (one draw a job, times its load): the spread of a job's time "
                                        f"per partition, (p90 - p10) / p50, was {seen}, as load^{slope:.2f}, "
                                        "nearer the same at every load than a sum's load^-0.5.")  # fmt: skip
    out = per_partition.copy()
    for level in np.unique(loads):
        here = loads == level
        mean = measured_mean(per_partition[here], censored[here])
        out[here] = np.maximum(mean + (per_partition[here] - mean) * np.sqrt(level), 0.01 * mean)
    return "sum", out, (f"load: sum (each partition an independent draw): the spread of a job's time per "
                        f"partition, (p90 - p10) / p50, was {seen}, falling as load^{slope:.2f}, nearer a sum's "
                        "load^-0.5 than the same at every load (scale).")  # fmt: skip


def _links(runs: list[MeasuredRun], variants: list[str] | None) -> tuple[dict | None, str, str | None]:
    """The network's links fitted to the runs' uploads, where the runs ran on a wire (a topology, or a bandwidth
    set) and sent messages of two sizes or more (None otherwise); a note saying which; the links in a sentence."""
    base = runs[0].scenario
    if base.topology is None and base.network.bandwidth is None and base.network.master.ingress is None:
        return (
            None,
            "Upload: the runs' scenario sets no links, so the mean upload is the latency (network.latency).",
            None,
        )
    try:
        fit = fit_links(runs, variants)
    except GcbenchError as error:
        return None, (f"Upload: not fitted as latency and bandwidth ({error}); the mean upload is the latency and "
                      "the links are left out."), None  # fmt: skip
    described, section = describe_links(fit, base), links_section(fit, base)
    if all(run.cut_short for run in runs):  # a real cluster's TCP sends to its end a message it was given
        section["abandoned_messages"] = "finish"
        described = (f"{described[:-1]}; a message of abandoned work, once sent, crosses the links to its end "
                     "(network.abandoned_messages: finish).")  # fmt: skip
    return section, f"Upload: {described}", described


def _calibrated(base: Scenario, fits: dict[str, Fit], fixed: float, speeds, latency: float,
                sources: list[str], shared: dict | None, cores: int | None,
                links: dict | None = None, load: str = "scale") -> Scenario:  # fmt: skip
    data = base.model_dump(mode="json", exclude_none=False)
    compute = {"per_partition": fits["per_partition"].distribution, "load": load}
    if cores is not None:
        compute["cores"] = cores
    if fixed > 0:
        compute["fixed"] = {"distribution": "deterministic", "value": fixed}
    if shared is not None:
        compute["shared"] = shared
    if speeds is not None:
        compute["speeds"] = speeds
    if base.compute.overhead is not None:  # injected, and slept in the run: the scenario's, as it was
        compute["overhead"] = data["compute"]["overhead"]
    data["compute"] = compute
    network = {"latency": latency, "dispatch": fits["dispatch"].distribution}
    if links is not None:  # (the weights' way out is in the dispatch fitted: the dispatch measured took it)
        network.update(links)
    elif base.network.shared_link or base.network.bandwidth is not None:
        network["bandwidth"] = None  # the measured upload is the whole transfer
    data["network"] = network
    data["master"] = {"between_iterations": fits["between"].distribution}
    data["calibrated_from"] = sources  # (the name stays the runs': gcbench plot pairs a simulation with them by it)
    return Scenario.model_validate(_without_nulls(data))


def _without_nulls(value):
    """A model dump without the nulls that stand for defaults (the file then reads as a user would write it)."""
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def scenario_yaml(calibration: Calibration) -> str:
    """The calibrated scenario as a YAML file, each fitted field with a comment on its fit and its source."""
    from gcbench import __version__

    c, source = calibration, ", ".join(calibration.sources)
    data = _without_nulls(c.scenario.model_dump(mode="json"))
    for section, defaults in (("failures", {"model": "none"}), ("straggling", {"model": "none"})):
        if data.get(section) == defaults:
            data.pop(section)
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    head = [
        f"# Calibrated by gcbench {__version__} on {stamp} from {source}",
        f"# ({c.parts.jobs} jobs, {len(c.parts.between)} gaps between iterations).",
        "# Change the variants (or --set) to ask what another scheme or policy would do on this cluster.",
    ]
    comments = {
        "compute": [
            c.fits["per_partition"].comment("per_partition", source),
            *c.notes[:2],
            "speeds: " + (
                f"per-worker factors, workers differ (Kruskal-Wallis p = {c.speed_test:.2g})" if c.speeds
                else f"none, workers do not differ beyond noise (Kruskal-Wallis p = {c.speed_test:.2g})"
            ),
        ],
        "network": [
            c.fits["dispatch"].comment("dispatch", source),
            c.links or f"latency: the mean upload (compute end to arrival) of {len(c.upload)} messages; "
            f"p50 {np.median(c.upload):.4g} s, p99 {np.quantile(c.upload, 0.99):.4g} s",
        ],
        "master": [c.fits["between"].comment("between_iterations", source)],
    }  # fmt: skip
    lines = [*head, *(f"# {note}" for note in c.notes[2:])]
    for key, value in data.items():
        for comment in comments.get(key, []):
            lines.append(f"# {comment}")
        flow = None if isinstance(value, dict | list) else False  # (a scalar as `key: value`, not `{key: value}`)
        lines.append(yaml.safe_dump({key: value}, sort_keys=False, default_flow_style=flow, width=120).rstrip())
    return "\n".join(lines) + "\n"
