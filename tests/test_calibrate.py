"""gcbench calibrate: the decomposition, the fits and the legs against ground truth from the simulator (tables
simulated from a known scenario are calibrated, and what made them is recovered), and the command's refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.errors import GcbenchError
from gcbench.scenario import load_scenario
from gcbench.scenario.loading import SweepPoint
from gcbench.scenario.schema import Scenario
from gcbench.sim.tasks import Task, run_task
from gcbench.twin.calibrate import calibrate, compute_scaled, matched_to_means, scenario_yaml
from gcbench.twin.decompose import decompose
from gcbench.twin.evaluate import compare, ranking, replay
from gcbench.twin.fit import fit_part, fitted, scaled
from gcbench.twin.measured import measured_run, read_measured

PER_PARTITION = {"distribution": "shifted_exponential", "shift": 0.05, "rate": 20.0}
FIXED, LATENCY = 0.03, 0.005
DISPATCH = {"distribution": "exponential", "rate": 100.0}
BETWEEN = {"distribution": "lognormal", "mu": -6.0, "sigma": 0.4}


def known(iterations: int = 1500, **fields) -> Scenario:
    """A cluster whose every modelled time is known: compute (fixed plus per partition), dispatch, upload, master."""
    data = {
        "name": "known",
        "workers": 6,
        "iterations": iterations,
        "compute": {"per_partition": PER_PARTITION, "fixed": {"distribution": "deterministic", "value": FIXED}},
        "straggling": {"model": "independent", "probability": 0.1, "delay": 0.3},
        "network": {"latency": LATENCY, "dispatch": DISPATCH},
        "master": {"between_iterations": BETWEEN},
        "variants": [
            {"label": "uncoded", "scheme": "uncoded", "policy": {"name": "wait_all"}},
            {"label": "FR s=1", "scheme": "fr", "s": 1},
        ],
    }
    return Scenario.model_validate({**data, **fields})


def simulated_run(scenario: Scenario, seed: int = 0, path: Path = Path("simulated")):
    """The scenario's tables, simulated, as calibration reads a real run's."""
    frames = [
        run_task(SweepPoint({}, scenario), 0, Task(0, index, seed), True) for index in range(len(scenario.variants))
    ]
    iterations = pd.concat([pd.DataFrame(f[0]) for f in frames], ignore_index=True)
    workers = pd.concat([pd.DataFrame(f[1]) for f in frames], ignore_index=True)
    return measured_run(path, scenario, iterations, workers, "simulated", cut_short=False)


@pytest.fixture(scope="module")
def truth():
    scenario = known()
    run = simulated_run(scenario)
    return scenario, run, calibrate([run])


def test_the_decomposition_gives_back_each_part_the_simulator_drew(truth):
    scenario, run, _ = truth
    parts = decompose(run)
    assert parts.upload == pytest.approx(np.full(len(parts.upload), LATENCY), abs=1e-9)  # constant latency
    assert parts.dispatch.mean() == pytest.approx(1 / DISPATCH["rate"], rel=0.05)
    assert np.mean(np.log(parts.between)) == pytest.approx(BETWEEN["mu"], abs=0.03)
    assert not parts.unexplained
    complete = ~parts.censored
    assert complete.all()  # the simulator gives a job the master stopped waiting for the time it would have had
    # a complete job's work is the fixed part plus its load's per-partition draws (straggling's delay removed)
    assert (parts.work[complete] >= FIXED + parts.loads[complete] * PER_PARTITION["shift"] - 1e-9).all()


def test_every_fitted_parameter_is_recovered(truth):
    """6 workers x 1500 iterations x 2 variants: the tolerances are about 4 standard errors of each estimate."""
    _, _, calibration = truth
    assert calibration.fixed == pytest.approx(FIXED, abs=0.006)
    per_partition = calibration.fits["per_partition"].distribution
    assert per_partition["distribution"] == "shifted_exponential"
    assert per_partition["shift"] == pytest.approx(PER_PARTITION["shift"], abs=0.006)
    assert per_partition["rate"] == pytest.approx(PER_PARTITION["rate"], rel=0.08)
    dispatch = calibration.fits["dispatch"].distribution
    assert dispatch["distribution"] in ("exponential", "shifted_exponential")
    assert 1 / dispatch["rate"] + dispatch.get("shift", 0.0) == pytest.approx(1 / DISPATCH["rate"], rel=0.05)
    between = calibration.fits["between"].distribution
    assert between["distribution"] == "lognormal"
    assert between["mu"] == pytest.approx(BETWEEN["mu"], abs=0.04)
    assert between["sigma"] == pytest.approx(BETWEEN["sigma"], rel=0.08)
    assert calibration.scenario.network.latency == pytest.approx(LATENCY, abs=1e-9)
    assert calibration.speeds is None  # the workers are alike


def test_replay_is_exact_on_simulated_tables(truth):
    _, run, _ = truth
    table = replay(run)
    assert table["error_mean"].abs().max() < 1e-9
    assert table["error_p99"].abs().max() < 1e-9


def test_replay_steps_a_sequential_schemes_rounds():
    """sr_sgc's rounds depend on the rounds before them: the replay steps them and gives the run back exactly."""
    variants = [{"label": "SR-SGC", "scheme": "sr_sgc", "s": 1, "burst": 1, "window": 2, "lam": 2},
                {"label": "SR-SGC mu", "scheme": "sr_sgc", "s": 1, "burst": 1, "window": 2, "lam": 2,
                 "policy": {"name": "relative_deadline", "mu": 1.0}}]  # fmt: skip
    run = simulated_run(known(iterations=300, variants=variants, master={}))
    table = replay(run)
    assert table["error_mean"].abs().max() < 1e-9 and table["error_p99"].abs().max() < 1e-9


def test_replay_takes_each_message_of_a_multi_message_scheme_when_it_arrived(tmp_path):
    """partial_cr and chunked_cr send several messages a worker, each when it is done: the replay reads them from
    messages.parquet (taking each at its worker's last arrival made partial_cr 43% slow) and gives the run back."""
    import yaml

    variants = [
        {"label": "partial", "scheme": "partial_cr", "s": 1},
        {"label": "chunked", "scheme": "chunked_cr", "s": 1},
    ]
    scenario = known(iterations=200, variants=variants)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario.model_dump(mode="json", exclude_none=True)))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["simulate", str(tmp_path / "s.yaml"), "--out", str(out), "--seeds", "0"])
    assert result.exit_code == 0, result.output
    tables = [pd.read_parquet(out / f"{name}.parquet") for name in ("iterations", "workers", "messages")]
    run = measured_run(out, scenario, *tables[:2], "simulated", cut_short=False, messages=tables[2])
    table = replay(run)
    assert list(table["variant"]) == ["partial", "chunked"]
    assert table["error_mean"].abs().max() < 1e-9 and table["error_p99"].abs().max() < 1e-9


def test_replay_leaves_out_an_asynchronous_variant_whose_updates_it_cannot_redo():
    """k_async has no stop rule to replay (it raised AttributeError here before); the synchronous variant beside it
    is replayed exactly."""
    variants = [{"label": "uncoded", "scheme": "uncoded", "policy": {"name": "wait_all"}},
                {"label": "async", "scheme": "uncoded", "policy": {"name": "k_async", "k": 3}}]  # fmt: skip
    table = replay(simulated_run(known(iterations=100, variants=variants)))
    assert list(table["variant"]) == ["uncoded"]
    assert abs(table["error_mean"].iloc[0]) < 1e-9


def test_an_m_sgc_run_is_decomposed_in_uncoded_partitions_and_its_rounds_replayed():
    """M-SGC's partitions are n / k of an uncoded one (k = 24 at n = 6, B = 1, W = 2, lambda = 2: a job of 6 of them
    is 1.5 uncoded partitions): calibrated beside uncoded, the fixed and per-partition parts come back."""
    variants = [{"label": "uncoded", "scheme": "uncoded", "policy": {"name": "wait_all"}},
                {"label": "M-SGC", "scheme": "m_sgc", "burst": 1, "window": 2, "lam": 2}]  # fmt: skip
    run = simulated_run(known(iterations=800, variants=variants))
    assert set(decompose(run, ["M-SGC"]).loads) == {1.5}
    table = replay(run)
    assert table["error_mean"].abs().max() < 1e-9 and table["error_p99"].abs().max() < 1e-9
    calibration = calibrate([run])
    assert calibration.fixed == pytest.approx(FIXED, abs=0.006)
    assert calibration.fits["per_partition"].distribution["shift"] == pytest.approx(PER_PARTITION["shift"], abs=0.006)


def test_the_calibrated_scenario_predicts_the_run_and_another_seed(truth):
    scenario, run, calibration = truth
    for target in (run, simulated_run(scenario, seed=1)):
        table = compare(calibration.scenario, target)
        assert table["error_mean"].abs().max() < 0.02, table
        assert table["error_p99"].abs().max() < 0.10, table
        assert ranking(table) == (1.0, True)


def test_the_compute_factor_gives_the_calibrating_variants_their_measured_mean():
    """A compute model 25% too slow is brought back by the factor (about 1 / 1.25: the injected delays, dispatch
    and upload do not scale), and the calibrating variants then simulate, paired, to their measured mean."""
    scenario = known(iterations=300)
    run = simulated_run(scenario, seed=2)
    matched, note = matched_to_means(compute_scaled(scenario, 1.25), [run], None)
    factor = float(note.split("the fit scaled by ")[1].split(":")[0])
    assert 0.75 < factor < 0.85, note
    assert compare(matched, run)["error_mean"].abs().max() < 0.005
    assert "it differs by +0.0% after the scaling" in note or "it differs by -0.0% after the scaling" in note, note
    assert note.startswith("The written compute.per_partition and compute.fixed are the fit scaled by"), note


def test_the_calibrated_scenario_says_its_compute_factor_and_needs_almost_none_on_its_own_tables(truth):
    _, _, calibration = truth
    note = next(note for note in calibration.notes if "the fit scaled by" in note)
    assert abs(float(note.split("the fit scaled by ")[1].split(":")[0]) - 1.0) < 0.03, note


def test_the_simulated_columns_are_paired_with_the_run_and_the_long_run_is_not():
    """The scenario that made a run, compared with it, gives its very iterations back: the run's seeds and
    iterations, the same draws of everything (persistent stragglers included). The long run's mean is another
    draw of it, near but not equal."""
    scenario = known(iterations=200, straggling={"model": "markov", "enter": 0.1, "leave": 0.3, "delay": 0.3})
    run = simulated_run(scenario, seed=3)
    table = compare(scenario, run)
    assert table["error_mean"].abs().max() < 1e-12 and table["error_p99"].abs().max() < 1e-12, table
    assert table["error_long_run"].abs().max() > 1e-4, table
    assert table["error_long_run"].abs().max() < 0.15, table


def test_a_prediction_of_other_variants_and_workers(truth):
    """Calibrated on uncoded and FR with 6 workers; predicting CR and fastest-k on 8 (same batch per partition)."""
    _, _, calibration = truth
    variants = [
        {"label": "CR s=2", "scheme": "cr", "s": 2},
        {"label": "fastest 6", "scheme": "uncoded", "policy": {"name": "fastest_k", "k": 6}},
        {"label": "deadline", "scheme": "cr", "s": 1,
         "policy": {"name": "deadline", "deadline": 0.4, "fallback": "approximate"}},
    ]  # fmt: skip
    training = {"batch_size": 256 * 8 // 6}  # (a partition then holds as many samples as in the calibration)
    other = known(workers=8, variants=variants, training=training, iterations=1500)
    table = compare(calibration.scenario, simulated_run(other, seed=2))
    assert table["error_mean"].abs().max() < 0.03, table


def test_a_prediction_sends_the_predicted_runs_messages(truth):
    """The same model stated with another gradient length (what compressors and the network see): predicted with
    the target's messages, so a per-entry compress cost costs what it cost in the target run."""
    _, _, calibration = truth
    compressed = {"name": "randomk", "ratio": 0.5, "compress_cost": 2e-5}  # 0.02 s a message of 1000 entries
    variants = [{"label": "FR randomk", "scheme": "fr", "s": 1, "compression": compressed}]
    other = known(variants=variants, gradient={"length": 1000}, iterations=600)
    table = compare(calibration.scenario, simulated_run(other, seed=4))
    assert table["error_mean"].abs().max() < 0.05, table


def test_workers_of_different_speeds_get_speed_factors():
    speeds = [1.0, 1.0, 1.0, 1.0, 1.5, 0.5]
    scenario = known(iterations=600, compute={"per_partition": PER_PARTITION, "speeds": speeds})
    calibration = calibrate([simulated_run(scenario)])
    got = np.asarray(calibration.speeds)
    assert got / got[:4].mean() == pytest.approx(speeds, rel=0.08)  # (relative to the others': a common scale)
    assert calibration.fixed == 0.0 or calibration.fixed < 0.005  # none made these tables


def test_slowness_shared_within_iterations_is_recovered():
    """A lognormal factor per iteration (mean 1, sd 0.25 of log time) multiplying every worker's compute: the
    random-effects split finds its sd, and without one it models none."""
    shared = {"distribution": "lognormal", "mu": -(0.25**2) / 2, "sigma": 0.25}
    compute = {"per_partition": PER_PARTITION, "fixed": {"distribution": "deterministic", "value": FIXED}}
    with_shared = calibrate([simulated_run(known(iterations=800, compute={**compute, "shared": shared}))])
    assert with_shared.scenario.compute.shared.sigma == pytest.approx(0.25, abs=0.04)
    assert with_shared.scenario.compute.shared.mu == pytest.approx(-(with_shared.scenario.compute.shared.sigma**2) / 2)
    without = calibrate([simulated_run(known(iterations=800))])
    assert without.scenario.compute.shared is None
    assert any("no slowness shared within iterations" in note for note in without.notes)


@pytest.mark.parametrize("load", ["scale", "sum"])
def test_the_load_model_that_made_the_tables_is_told_from_the_spread_at_each_load(load):
    """Uncoded (load 1) and CR s=2 (load 3): under ``sum`` a load-3 job's time per partition spreads 1/sqrt(3) as
    wide as a load-1 job's, under ``scale`` as wide; calibration writes the model that made the tables, and under
    sum fits one partition's draw (its mean and standard deviation), not the narrower mean of three."""
    variants = [{"label": "uncoded", "scheme": "uncoded", "policy": {"name": "wait_all"}},
                {"label": "CR s=2", "scheme": "cr", "s": 2}]  # fmt: skip
    compute = {"per_partition": {"distribution": "lognormal", "mu": -3.0, "sigma": 0.4}, "load": load}
    scenario = known(iterations=600, compute=compute, variants=variants)
    calibration = calibrate([simulated_run(scenario)])
    assert calibration.scenario.compute.load == load
    assert any(note.startswith(f"load: {load}") for note in calibration.notes[:2])  # (the compute's comment)
    draws = calibration.scenario.compute.per_partition.sample(np.random.default_rng(0), (20000,))
    truth = np.random.default_rng(1).lognormal(-3.0, 0.4, 20000)
    assert draws.mean() == pytest.approx(truth.mean(), rel=0.05)
    assert draws.std() == pytest.approx(truth.std(), rel=0.12)
    assert f"load: {load}" in scenario_yaml(calibration)


def test_with_one_load_the_load_model_stays_scale_and_says_why():
    variants = [{"label": "uncoded", "scheme": "uncoded", "policy": {"name": "wait_all"}}]
    compute = {"per_partition": PER_PARTITION, "load": "sum"}
    calibration = calibrate([simulated_run(known(iterations=200, compute=compute, variants=variants))])
    assert calibration.scenario.compute.load == "scale"
    assert any("fewer than two loads" in note for note in calibration.notes)


@settings(max_examples=6, deadline=None)
@given(
    shift=st.floats(0.01, 0.2),
    mean_excess=st.floats(0.01, 0.2),
    censor_at=st.floats(0.5, 0.95),
)
def test_censored_shifted_exponentials_are_recovered(shift, mean_excess, censor_at):
    """Right-censoring at a quantile (the stop cutting slow jobs short) leaves the maximum-likelihood fit unbiased."""
    rng = np.random.default_rng(7)
    x = shift + rng.exponential(mean_excess, 4000)
    cut = np.quantile(x, censor_at)
    fit = fitted("shifted_exponential", np.minimum(x, cut), x > cut)
    assert fit["shift"] == pytest.approx(shift, abs=mean_excess * 0.01)
    assert 1 / fit["rate"] == pytest.approx(mean_excess, rel=0.08)


@pytest.mark.parametrize(
    "distribution",
    [
        {"distribution": "exponential", "rate": 4.0},
        {"distribution": "shifted_exponential", "shift": 0.1, "rate": 3.0},
        {"distribution": "lognormal", "mu": -1.0, "sigma": 0.5},
        {"distribution": "weibull", "shape": 1.5, "scale": 0.2},
        {"distribution": "empirical", "samples": [0.1, 0.2, 0.4]},
    ],
)
def test_scaling_a_distribution_scales_its_draws(distribution):
    from gcbench.twin.fit import frozen

    p = np.array([0.1, 0.5, 0.9])
    assert frozen(scaled(distribution, 2.5)).ppf(p) == pytest.approx(2.5 * np.asarray(frozen(distribution).ppf(p)))


def test_the_fit_is_judged_at_the_order_statistics_and_picks_the_family_that_made_the_data():
    rng = np.random.default_rng(3)
    lognormal = rng.lognormal(-2.0, 0.6, 3000)
    assert fit_part(lognormal, n=8).distribution["distribution"] == "lognormal"
    weibull = 0.3 * rng.weibull(2.5, 3000)
    assert fit_part(weibull, n=8).distribution["distribution"] == "weibull"
    with pytest.raises(GcbenchError, match="too few measurements of the dispatch"):
        fit_part(np.array([0.1, 0.2]), what="the dispatch")


def test_the_written_scenario_loads_and_says_where_each_fit_came_from(truth, tmp_path):
    _, _, calibration = truth
    path = tmp_path / "calibrated.yaml"
    path.write_text(scenario_yaml(calibration))
    text = path.read_text()
    assert "# per_partition: shifted_exponential fitted to" in text and "# dispatch:" in text
    assert "# between_iterations:" in text and "# latency: the mean upload" in text
    result = CliRunner().invoke(app, ["simulate", str(path), "--check"])
    assert result.exit_code == 0, result.output


def test_train_compares_the_time_to_the_target_accuracy():
    """--train: the calibrated cluster trains in the simulator with the run's variants, iterations and seed; the
    seconds to the first evaluation reaching the target, measured and simulated, per variant. (The measured
    accuracies here are made up: the test is of the comparison, not of the training.)"""
    from gcbench.twin.evaluate import time_to_accuracy

    training = {"dataset": "synthetic", "model": "softmax", "batch_size": 60, "eval_every": 5, "learning_rate": 0.05}
    run = simulated_run(known(iterations=30, training=training))
    evaluated = run.iterations["iteration"] % 5 == 4
    accuracy = np.where(evaluated, 0.1 + run.iterations["iteration"] / 40, np.nan)
    run = measured_run(run.path, run.scenario, run.iterations.assign(accuracy=accuracy),
                       run.workers.drop(columns=["start", "end"]), "simulated", cut_short=False)  # fmt: skip
    table = time_to_accuracy(calibrate([run]).scenario, run, target=0.3)
    assert list(table["variant"]) == ["uncoded", "FR s=1"]
    measured = run.iterations.query("variant == 'uncoded' and accuracy >= 0.3")["end"].min()
    assert table["measured_seconds"].iloc[0] == measured
    reached = table["simulated_seconds"].notna()
    assert np.allclose(
        table["error"][reached], table["simulated_seconds"][reached] / table["measured_seconds"][reached] - 1
    )
    with pytest.raises(GcbenchError, match="was never evaluated"):
        time_to_accuracy(calibrate([run]).scenario, simulated_run(known(iterations=30)))


# -- the command ---------------------------------------------------------------------------------------------------


def write_run(directory: Path, run, mode: str = "real", **extra) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    keep = [c for c in run.iterations.columns]
    run.iterations[keep].to_parquet(directory / "iterations.parquet", index=False)
    workers = run.workers.drop(columns=["start", "end"])
    workers.to_parquet(directory / "workers.parquet", index=False)
    meta = {"mode": mode, "scenario": run.scenario.model_dump(mode="json"), "backend": "torch", **extra}
    (directory / "run.json").write_text(json.dumps(meta))
    return directory


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    small = simulated_run(known(iterations=300))
    return write_run(tmp_path_factory.mktemp("runs") / "real", small)


def test_the_cores_a_run_recorded_are_modelled_and_cores_overrides_them(tmp_path):
    """run.json's cores (fewer than the 6 workers) make calibrate write compute.cores; --cores 6 (as many as the
    workers) models none; a run that recorded none takes --cores."""
    sc = known(iterations=300)
    sc = sc.model_copy(update={"compute": sc.compute.model_copy(update={"cores": 2})})
    recorded = write_run(tmp_path / "recorded", simulated_run(sc), cores=2)
    plain = write_run(tmp_path / "plain", simulated_run(sc))
    for run, extra, cores in ((recorded, [], 2), (recorded, ["--cores", "6"], None), (plain, ["--cores", "2"], 2),
                              (plain, [], None)):  # fmt: skip
        out = tmp_path / "cal.yaml"
        result = CliRunner().invoke(app, ["calibrate", str(run), "-o", str(out), "--force", *extra])
        assert result.exit_code == 0, result.output
        assert load_scenario(out)[0].scenario.compute.cores == cores, (run, extra)
        assert ("shared 2 cores" in result.output) == (cores == 2)


def test_calibrate_writes_a_scenario_and_prints_every_leg(written, tmp_path):
    out, report = tmp_path / "cal.yaml", tmp_path / "report"
    args = ["calibrate", str(written), "-o", str(out), "--predict", str(written), "--report", str(report)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert out.is_file()
    text = (report / "report.md").read_text()
    for part in ("per_partition", "dispatch", "between"):
        assert (report / f"{part}.png").stat().st_size > 0 and (report / f"{part}.pdf").is_file()
        assert f"| {part} |" in text and f"![{part}]({part}.png)" in text
    assert "## replay:" in text and "## fitted:" in text and "## predicted:" in text
    assert text.count("long-run error |") == 2 and "the very ones the run drew" in text  # (fitted and predicted)
    assert text.count("Verdicts:") == 2 and "the measurement's 95% CI; predicted " in text
    for title in ("fitted parts", "replay:", "fitted:", "predicted:", "Kendall's tau", "long-run error"):
        assert title in result.output
    # one verdict per variant and leg, with the CI and the leg: the run injected its stragglers, so the paired one
    assert f"Verdicts, predicted {written} (it injected straggling (independent)" in result.output
    table = compare(calibrate([read_measured(written)]).scenario, read_measured(written))
    for row in table.itertuples():
        inside = "within" if row.ci_low <= row.simulated_mean <= row.ci_high else "outside"
        assert (
            f"  {row.variant}: {inside} the measurement's 95% CI; predicted {row.simulated_mean:.4g} s, measured "
            f"{row.measured_mean:.4g} s (95% CI {row.ci_low:.4g} to {row.ci_high:.4g}, ±"
        ) in result.output
    assert result.output.count("from the paired simulation (the run's seeds and injected draws): the machine model's "
                               "error") == 2 * len(table)  # fmt: skip
    assert "fewer than 50 iterations per variant" not in result.output  # (the run has more)
    again = CliRunner().invoke(app, ["calibrate", str(written), "-o", str(out)])
    assert again.exit_code == 2 and "exists already; add --force" in again.output


def test_a_short_run_is_calibrated_with_a_warning_about_its_tails(tmp_path):
    short = write_run(tmp_path / "short", simulated_run(known(iterations=20)))
    result = CliRunner().invoke(app, ["calibrate", str(short), "-o", str(tmp_path / "c.yaml")])
    assert result.exit_code == 0, result.output
    assert "fewer than 50 iterations per variant and seed" in result.output
    assert "no measured mean has a 95% CI" in result.output and "n/a" in result.output
    assert "uncoded: cannot be judged: the measurement has no 95% CI" in result.output


def test_without_injected_stragglers_the_verdict_is_the_long_runs():
    from gcbench.twin.verdict import injected_models, verdicts

    scenario = known(iterations=300, straggling={"model": "none"})
    run = simulated_run(scenario)
    assert injected_models(scenario) == []
    assert injected_models(known()) == ["straggling (independent)"]
    table = compare(calibrate([run]).scenario, run, iterations=2000)
    judged = verdicts(table, injected=False)
    assert [v.leg for v in judged] == ["long run", "long run"]
    assert [v.predicted for v in judged] == table["long_run_mean"].tolist()
    assert "from the long run (other draws): the prediction for a cluster whose stragglers are its own" in (
        judged[0].sentence()
    )
    # the twin of a cluster it was fitted to predicts it within the measurement's noise
    assert all(v.inside for v in judged), [v.sentence() for v in judged]


def _damaged(written: Path, tmp_path: Path, how: str) -> Path:
    run = tmp_path / "run"
    shutil.copytree(written, run)
    if how == "simulated":
        meta = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**meta, "mode": "simulated"}))
    elif how == "no workers":
        (run / "workers.parquet").unlink()
    elif how == "no run.json":
        (run / "run.json").unlink()
    elif how == "missing column":
        frame = pd.read_parquet(run / "workers.parquet").drop(columns=["compute_start"])
        frame.to_parquet(run / "workers.parquet", index=False)
    elif how == "damaged parquet":
        (run / "iterations.parquet").write_bytes(b"not parquet")
    elif how == "damaged run.json":
        (run / "run.json").write_text('{"mode": "real",\n oops}')
    elif how == "few iterations":
        frame = pd.read_parquet(run / "iterations.parquet")
        frame[frame["iteration"] < 3].to_parquet(run / "iterations.parquet", index=False)
    elif how == "none finished":
        frame = pd.read_parquet(run / "iterations.parquet")
        frame.assign(end=np.nan).to_parquet(run / "iterations.parquet", index=False)
    return run


@pytest.mark.parametrize(
    "how,sentence",
    [
        ("simulated", "is a simulated run, not a real one"),
        ("no workers", "has no workers.parquet"),
        ("no run.json", "has no run.json"),
        ("missing column", "its workers table lacks the columns compute_start"),
        ("damaged parquet", "its results tables are not readable Parquet (damaged or truncated)."),
        ("damaged run.json", "run.json is not valid JSON (Expecting property name enclosed in double quotes at line 2"),
        ("few iterations", "only 6 iterations finished; calibration needs at least 10"),
        ("none finished", "no iteration finished"),
    ],
)
def test_bad_runs_are_refused_in_one_sentence(written, tmp_path, how, sentence):
    run = _damaged(written, tmp_path, how)
    result = CliRunner().invoke(app, ["calibrate", str(run), "-o", str(tmp_path / "c.yaml")])
    assert result.exit_code == 2, result.output
    assert sentence in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_missing_directory_and_a_prediction_of_another_model_are_refused(written, tmp_path):
    result = CliRunner().invoke(app, ["calibrate", str(tmp_path / "nowhere"), "-o", str(tmp_path / "c.yaml")])
    assert result.exit_code == 2 and "no such results directory" in result.output
    other = simulated_run(known(iterations=40, training={"model": "resnet18"}))
    other_dir = write_run(tmp_path / "other", other)
    args = ["calibrate", str(written), "-o", str(tmp_path / "c.yaml"), "--predict", str(other_dir)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "trains resnet18 on cifar10" in result.output and "predict a run of the model and data set" in result.output
    assert not (tmp_path / "c.yaml").exists()  # refused before anything was written
    eight = write_run(tmp_path / "eight", simulated_run(known(iterations=40, workers=8)))
    mixed = CliRunner().invoke(app, ["calibrate", str(written), str(eight), "-o", str(tmp_path / "m.yaml")])
    assert (
        mixed.exit_code == 2 and "has 8 workers and" in mixed.output and "runs of one cluster together" in mixed.output
    )
    bad = CliRunner().invoke(app, ["calibrate", str(written), "-o", str(tmp_path / "d.yaml"), "--variants", "CR"])
    assert bad.exit_code == 2 and "--variants: CR not among the runs' variants" in bad.output
    untrained = CliRunner().invoke(app, ["calibrate", str(written), "-o", str(tmp_path / "e.yaml"), "--train"])
    assert untrained.exit_code == 2 and "was never evaluated, so it has no time to an accuracy" in untrained.output
    args = ["calibrate", str(written), "-o", str(tmp_path / "f.yaml"), "--train", "--target-accuracy", "1.5"]
    target = CliRunner().invoke(app, args)
    assert target.exit_code == 2 and "--target-accuracy must be in (0, 1], got 1.5" in target.output


def test_read_measured_reads_what_write_run_wrote(written):
    run = read_measured(written)
    assert run.variants == ["uncoded", "FR s=1"] and run.backend == "torch"


def test_recommend_weighs_the_candidates_on_a_real_run_calibrated_first(written, tmp_path):
    out = tmp_path / "recommend"
    args = ["recommend", str(written), "--schemes", "uncoded,cr", "--max-s", "1", "--iterations", "200",
            "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"{written} (calibrated): 3 candidates" in result.output
    document = json.loads((out / "recommend.json").read_text())
    assert document["source"] == f"{written} (calibrated)" and document["scenario"]["calibrated_from"] == [str(written)]
    assert {row["candidate"] for row in document["ranked"]} == {"uncoded", "cr(s=1)", "uncoded/fastest-5"}


def test_the_dispatch_leaves_out_iterations_begun_behind_abandoned_work_still_going():
    """A real run: worker 1's message of every even iteration is abandoned and still on the wire when the next
    iteration starts, whose jobs then begin 0.2 s late; the dispatch is the other iterations' 0.01 s. A simulated
    run's abandoned jobs stop at once, so every job's dispatch counts there."""
    scenario = known(iterations=20, workers=2, variants=[{"label": "uncoded", "scheme": "uncoded",
                                                           "policy": {"name": "wait_all"}}])  # fmt: skip
    iterations, workers = [], []
    for i in range(20):
        start = i * 1.0
        late = i % 2 == 1  # the previous (even) iteration left a message on the wire past this start
        dispatch = 0.2 if late else 0.01
        end = start + dispatch + 0.3
        iterations.append({"variant": "uncoded", "seed": 0, "point": 0, "iteration": i, "start": start, "end": end,
                           "duration": end - start, "policy": "wait_all", "scheme": "uncoded", "s": 0})  # fmt: skip
        for worker in range(2):
            abandoned = worker == 1 and not late
            arrival = start + 1.1 if abandoned else end  # (into the next iteration, which starts at start + 1)
            workers.append({"variant": "uncoded", "seed": 0, "point": 0, "iteration": i, "worker": worker,
                            "partitions": 1, "compute_start": start + dispatch, "compute_end": start + dispatch + 0.2,
                            "injected_delay": 0.0, "arrival": arrival, "used": not abandoned, "straggling": False,
                            "failed": False})  # fmt: skip
    tables = pd.DataFrame(iterations), pd.DataFrame(workers)
    real = decompose(measured_run(Path("real"), scenario, *tables, "torch", cut_short=True))
    assert real.dispatch == pytest.approx(np.full(20, 0.01))  # 10 iterations x 2 jobs
    simulated = decompose(measured_run(Path("sim"), scenario, *tables, "simulated", cut_short=False))
    assert sorted(simulated.dispatch) == pytest.approx([0.01] * 20 + [0.2] * 20)


def test_a_job_whose_message_was_late_on_the_wire_computed_all_of_it():
    """On a slow wire an abandoned job may have ended its compute long before the stop, its message still on the
    link: its work is whole, not cut short (censored); a job still computing at the stop is."""
    scenario = known(iterations=20, workers=2, variants=[{"label": "uncoded", "scheme": "uncoded",
                                                           "policy": {"name": "wait_all"}}])  # fmt: skip
    iterations, workers = [], []
    for i in range(20):
        start, end = i * 1.0, i * 1.0 + 0.5
        iterations.append({"variant": "uncoded", "seed": 0, "point": 0, "iteration": i, "start": start, "end": end,
                           "duration": 0.5, "policy": "wait_all", "scheme": "uncoded", "s": 0})  # fmt: skip
        for worker, compute_end, arrival in ((0, 0.2, 0.5), (1, 0.3 if i % 2 else 0.6, 0.9)):
            workers.append({"variant": "uncoded", "seed": 0, "point": 0, "iteration": i, "worker": worker,
                            "partitions": 1, "compute_start": start + 0.01, "compute_end": start + compute_end,
                            "injected_delay": 0.0, "arrival": start + arrival, "used": worker == 0,
                            "straggling": False, "failed": False})  # fmt: skip
    parts = decompose(measured_run(Path("real"), scenario, *map(pd.DataFrame, (iterations, workers)), "torch"))
    # worker 1's late messages: computed by 0.3 (odd iterations, whole) or still computing at 0.5 (even, censored)
    assert parts.censored.sum() == 10
    assert sorted(parts.work[parts.censored]) == pytest.approx([0.59] * 10)
