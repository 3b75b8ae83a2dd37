"""How well the simulator follows a real run (docs/calibration.md, "Judge"): per variant, the measured mean, p50
and p99 iteration time (the mean with its 95% CI) against the simulated ones, with the errors, and Kendall's tau
between the variants' simulated and measured means.

- replay: the run's own measured arrival times (dispatch, compute, injected delay and upload, as they happened)
  through the policy's stop rule, the one the simulator's engines run: it proves the engine follows the real
  master's rules, whatever the fits;
- fitted: the calibrated scenario simulated, against the run it was fitted to, paired with it: the run's seeds and
  iterations, so the injected models draw what the run drew (``compare``), with the long run's mean beside it;
- predicted: the calibrated scenario with another run's variants (and its workers and injected models), against
  that run: calibrate from one run, predict another. With other workers or another batch size a partition holds
  batch_size / workers samples: the per-partition compute is scaled by that ratio (the fixed part is not).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from gcbench.errors import GcbenchError
from gcbench.master.replay import message_arrivals, replayed_stops, stop_rule
from gcbench.results.summary import mean_confidence_interval
from gcbench.scenario.build import scheme_for, variant_labelled
from gcbench.scenario.schema import Scenario
from gcbench.twin.fit import scaled
from gcbench.twin.measured import MeasuredRun, recorded_message_arrivals

SIMULATED_ITERATIONS = 5000  # per variant, the long run: its mean's own error is then far below the measurement's
LONG_RUN_SEED = 1_000_003  # the long run's draws: a seed no run is likely to have used, so they are independent
COLUMNS = ["variant", "measured_mean", "ci_low", "ci_high", "measured_p50", "measured_p99", "simulated_mean",
           "simulated_p50", "simulated_p99", "error_mean", "error_p50", "error_p99", "bias", "long_run_mean",
           "error_long_run"]  # fmt: skip


def replay(run: MeasuredRun) -> pd.DataFrame:
    """Each variant's iterations again from their measured arrival times, through the policy's stop rule."""
    rows = []
    for label in run.variants:
        variant = _variant(run.scenario, label)
        rule = stop_rule(variant.policy)
        if rule is None:  # an asynchronous policy: a replay of recorded times cannot redo its updates
            continue
        scheme = scheme_for(run.scenario, variant)
        measured = run.iterations[run.iterations["variant"] == label]
        workers = run.workers[run.workers["variant"] == label]
        several = scheme.messages_per_worker > 1 and run.messages is not None
        stops = []
        for (point, seed), run_rows in workers.groupby(["point", "seed"], sort=True):  # (rounds in order)
            arrivals = []
            for _, group in run_rows.groupby("iteration", sort=True):
                row = np.full(run.scenario.workers, np.inf)
                arrived = group["arrival"].notna() & ~group["failed"]
                row[group["worker"].to_numpy()[arrived]] = (group["arrival"] - group["start"]).to_numpy()[arrived]
                arrivals.append(row)
            arrivals = message_arrivals(np.array(arrivals), scheme)
            if several:  # each message when it arrived, not when its worker's last one did
                sent = run.messages[(run.messages["variant"] == label) & (run.messages["point"] == point)
                                    & (run.messages["seed"] == seed)]  # fmt: skip
                starts = run_rows.groupby("iteration", sort=True)["start"].first()
                arrivals = recorded_message_arrivals(sent, starts.index.to_numpy(), starts, arrivals.shape[1])
            stops.append(replayed_stops(rule, scheme, arrivals))
        rows.append(_row(label, measured, np.concatenate(stops)))
    return pd.DataFrame(rows, columns=COLUMNS)


def compare(scenario: Scenario, run: MeasuredRun, iterations: int = SIMULATED_ITERATIONS) -> pd.DataFrame:
    """The scenario simulated with the run's variants (and its workers and injected models) against the run.

    The simulated columns are paired with the measurement: each of the run's seeds simulated for the run's
    iterations, so the injected models (straggling, failures, overhead) draw exactly what the run drew (each model
    has a stream of its own of the seed: gcbench/scenario/draws.py), and only what was fitted differs. The
    measured mean of a short run moves with the stragglers it happened to draw (persistent ones most: a Markov
    burst lasts many iterations), and the paired simulation moves with them. ``long_run_mean`` is the variant's
    mean over ``iterations`` simulated with another draw of everything: what the cluster does on average."""

    long_run = for_run(scenario, run, iterations)
    rows = []
    for label, simulated in paired(scenario, run).items():
        row = _row(label, run.iterations[run.iterations["variant"] == label], simulated)
        row["long_run_mean"] = float(_simulated(long_run, label, LONG_RUN_SEED).duration.mean())
        row["error_long_run"] = row["long_run_mean"] / row["measured_mean"] - 1.0
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def paired(scenario: Scenario, run: MeasuredRun, labels: list[str] | None = None,
           phase: bool = False) -> dict[str, np.ndarray]:  # fmt: skip
    """Per variant (``labels``, default every one the run's master ran): the scenario's iteration times simulated
    with the run's seeds for the run's iterations, in the order of the run's rows of that variant grouped by seed
    (with ``phase``, each iteration's compute phase instead: ``compute_phases``)."""
    scenario = for_run(scenario, run, int(run.iterations["iteration"].max()) + 1)
    out = {}
    for label in run.variants if labels is None else labels:
        measured = run.iterations[run.iterations["variant"] == label]
        simulated = []
        for seed, rows_of_seed in measured.groupby("seed", sort=True):
            rec = _simulated(scenario, label, int(seed))
            times = _compute_phase(rec.start, rec.compute_end, rec.used, rec.duration) if phase else rec.duration
            simulated.append(times[rows_of_seed["iteration"].to_numpy()])
        out[label] = np.concatenate(simulated) if simulated else np.zeros(0)
    return out


def compute_phases(run: MeasuredRun, label: str) -> tuple[np.ndarray, np.ndarray]:
    """The measured compute phase of each of the variant's iterations, in ``paired``'s order: from the
    iteration's start to the compute end of the last job whose message it used (its duration where it used none);
    and whether the iteration began clear of the previous one's abandoned work (a real run's abandoned job still
    computing, or its message still on the wire, slows the next iteration as no simulated one does)."""
    from gcbench.twin.decompose import after_leftovers

    rows = run.iterations[run.iterations["variant"] == label]
    jobs = run.workers[run.workers["variant"] == label]
    behind = after_leftovers(jobs, jobs) if run.cut_short else np.zeros(len(jobs), dtype=bool)
    late = set(map(tuple, jobs.loc[behind, ["seed", "iteration"]].drop_duplicates().to_numpy().tolist()))
    out, clear = [], []
    for seed, rows_of_seed in rows.groupby("seed", sort=True):
        clear.append(np.array([(seed, i) not in late for i in rows_of_seed["iteration"]], dtype=bool))
        iterations = rows_of_seed["iteration"].to_numpy()
        mine = jobs[jobs["seed"] == seed].assign(used=lambda f: f["used"].astype(float))
        grids = {column: mine.pivot_table(index="iteration", columns="worker", values=column, aggfunc="max")
                 .reindex(iterations).to_numpy(dtype=float) for column in ("compute_end", "used")}  # fmt: skip
        used = np.nan_to_num(grids["used"], nan=0.0).astype(bool)
        out.append(_compute_phase(rows_of_seed["start"].to_numpy(), grids["compute_end"], used,
                                  rows_of_seed["duration"].to_numpy()))  # fmt: skip
    if not out:
        return np.zeros(0), np.zeros(0, dtype=bool)
    return np.concatenate(out), np.concatenate(clear)


def _compute_phase(start, compute_end, used, duration) -> np.ndarray:
    """Per iteration, its start to the compute end of the last job it used (its duration where none was)."""
    last = np.where(used, compute_end, -np.inf).max(axis=1)
    return np.where(np.isfinite(last), last - start, duration)


def _simulated(scenario: Scenario, label: str, seed: int):
    from gcbench.sim.engines import engine_for, simulate_with

    variant = _variant(scenario, label)
    return simulate_with(engine_for(scenario, variant), scenario, variant, scheme_for(scenario, variant), seed)


def for_run(calibrated: Scenario, run: MeasuredRun, iterations: int) -> Scenario:
    """The calibrated cluster running the run's variants, workers and injected models (straggling, failures,
    overhead, what happens to stale work): what was measured of the cluster stays, what the run chose is the run's."""
    target = run.scenario
    check_shape(calibrated, run)
    compute = calibrated.compute.model_dump()
    if target.workers != calibrated.workers:
        compute["speeds"] = None  # per-worker speeds of other workers
    # a partition holds batch_size / workers samples: its compute scales with them (the fixed part does not)
    ratio = (target.training.batch_size / target.workers) / (calibrated.training.batch_size / calibrated.workers)
    if ratio != 1:
        compute["per_partition"] = scaled(compute["per_partition"], ratio)
    compute["overhead"] = _dumped(target.compute.overhead)
    update = {
        "workers": target.workers,
        "gradient": target.gradient,
        "variants": target.variants,
        "straggling": target.straggling,
        "failures": target.failures,
        "stale_work": target.stale_work,
        "compute": compute,
        "iterations": iterations,
        "sweep": {},
        "training": target.training.model_copy(update={"in_simulator": False}),
    }
    try:
        return Scenario.model_validate({**calibrated.model_dump(), **{k: _dumped(v) for k, v in update.items()}})
    except ValueError as error:
        raise GcbenchError(f"{run.path}: its variants do not fit the calibrated cluster ({error}).") from None


def check_shape(calibrated: Scenario, run: MeasuredRun) -> None:
    """A run the calibrated cluster can predict trains the same model on the same data (the compute fitted is
    that model's); its workers and batch size may differ, and its messages are its own (``gradient``: what the
    variants' compressors and the network see, which two scenarios of one model may state differently)."""
    cal, target = calibrated.training, run.scenario.training
    if (cal.model, cal.dataset) != (target.model, target.dataset):
        raise GcbenchError(
            f"{run.path}: trains {target.model} on {target.dataset}, and the calibration measured {cal.model} on "
            f"{cal.dataset}; predict a run of the model and data set calibrated."
        )


def _dumped(value):
    if isinstance(value, list):
        return [_dumped(item) for item in value]
    return value.model_dump() if hasattr(value, "model_dump") else value


def ranking(table: pd.DataFrame) -> tuple[float, bool]:
    """Kendall's tau between simulated and measured means, and whether the ranking is kept wherever the measured
    means differ by more than their 95% CIs (pairs whose intervals overlap may go either way)."""
    if len(table) < 2:
        return float("nan"), True
    tau = float(stats.kendalltau(table["simulated_mean"], table["measured_mean"]).statistic)
    kept = True
    rows = table.to_dict("records")
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            apart = a["ci_high"] < b["ci_low"] or b["ci_high"] < a["ci_low"]
            if apart and np.sign(a["measured_mean"] - b["measured_mean"]) != np.sign(
                a["simulated_mean"] - b["simulated_mean"]
            ):
                kept = False
    return tau, kept


def _variant(scenario: Scenario, label: str):
    variant = variant_labelled(scenario, label)
    if variant is None:
        raise GcbenchError(f"variant '{label}' of the run is not in its scenario.")
    return variant


def _row(label: str, measured: pd.DataFrame, simulated: np.ndarray) -> dict:
    durations = measured["duration"].to_numpy()
    low, high = mean_confidence_interval(measured)
    row = {
        "variant": label,
        "measured_mean": durations.mean(),
        "ci_low": low,
        "ci_high": high,
        "measured_p50": np.quantile(durations, 0.5),
        "measured_p99": np.quantile(durations, 0.99),
        "simulated_mean": simulated.mean(),
        "simulated_p50": np.quantile(simulated, 0.5),
        "simulated_p99": np.quantile(simulated, 0.99),
    }
    for what in ("mean", "p50", "p99"):
        row[f"error_{what}"] = row[f"simulated_{what}"] / row[f"measured_{what}"] - 1.0
    row["bias"] = row["simulated_mean"] - row["measured_mean"]
    return row


TTA_COLUMNS = ["variant", "target", "measured_seconds", "simulated_seconds", "error"]


def time_to_accuracy(calibrated: Scenario, run: MeasuredRun, target: float | None = None) -> pd.DataFrame:
    """The calibrated scenario trained in the simulator with the run's variants, iterations and seed, against the
    run: per variant, the seconds to the first evaluation reaching ``target`` (default: 90% of the best accuracy
    the run reached), measured and simulated, and the error. A variant that never reached it has NaN there."""
    from gcbench.sim.training import simulate_training

    check_evaluated(run)
    measured = run.iterations
    target = 0.9 * float(measured["accuracy"].max()) if target is None else target
    iterations = int(measured.groupby("variant")["iteration"].max().max()) + 1
    scenario = for_run(calibrated, run, iterations)
    scenario = scenario.model_copy(update={"training": run.scenario.training.model_copy(update={"in_simulator": True})})
    seed = int(measured["seed"].iloc[0])
    rows = []
    for label in run.variants:
        variant = _variant(scenario, label)
        rec = simulate_training(scenario, variant, scheme_for(scenario, variant), seed)
        simulated = _first_end(rec.end, rec.accuracy, target)
        frame = measured[(measured["variant"] == label) & (measured["seed"] == seed)].sort_values("iteration")
        real = _first_end(frame["end"].to_numpy(), frame["accuracy"].to_numpy(), target)
        rows.append({"variant": label, "target": target, "measured_seconds": real, "simulated_seconds": simulated,
                     "error": simulated / real - 1.0 if real > 0 else np.nan})  # fmt: skip
    return pd.DataFrame(rows, columns=TTA_COLUMNS)


def check_evaluated(run: MeasuredRun) -> None:
    """A run whose time to an accuracy can be compared: it was evaluated at least once."""
    measured = run.iterations
    if "accuracy" not in measured.columns or not measured["accuracy"].notna().any():
        raise GcbenchError(f"{run.path}: was never evaluated, so it has no time to an accuracy to compare.")


def _first_end(end: np.ndarray, accuracy: np.ndarray, target: float) -> float:
    reached = np.flatnonzero(np.nan_to_num(accuracy, nan=-1.0) >= target)
    return float(end[reached[0]]) if reached.size else np.nan
