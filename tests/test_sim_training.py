"""Training inside the simulator (gcbench/sim/training.py): real gradients in simulated time.

Exact schemes train exactly as uncoded SGD on the same mini-batches (the loss of every iteration equal to
float tolerance), whatever set of workers each iteration decodes from; approximate decodes and asynchronous
updates train differently and say how (residual, staleness). The times are the models', as untrained.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.coding import available_schemes, scheme_class
from gcbench.errors import GcbenchError
from gcbench.master import SynchronousMaster
from gcbench.results import summarize
from gcbench.results.recorder import RunRecorder
from gcbench.scenario.build import scheme_for
from gcbench.scenario.draws import draw_run
from gcbench.scenario.schema import Scenario
from gcbench.sim.engines import engine_for
from gcbench.sim.event import simulate_event
from gcbench.testing import valid_parameter_sets
from gcbench.testing.tables import assert_tables_equal

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")

from gcbench.sim.training import TrainingCluster, cached_data, simulate_training  # noqa: E402
from gcbench.training.gradients import shard_gradient, share_flat_storage  # noqa: E402
from gcbench.training.models import build_model  # noqa: E402

runner = CliRunner()
N = 6
TRAINING = {
    "in_simulator": True, "dataset": "synthetic", "model": "softmax", "batch_size": 60,
    "learning_rate": 3e-5, "eval_every": 4,
}  # fmt: skip


def trained(iterations: int = 12, **fields) -> Scenario:
    data = {
        "name": "trained",
        "workers": N,
        "iterations": iterations,
        "compute": {"per_partition": {"distribution": "shifted_exponential", "shift": 0.01, "rate": 100}},
        "straggling": {"model": "independent", "probability": 0.3, "slowdown": 6},
        "gradient": {"length": 30730},
        "variants": [{"scheme": "uncoded", "policy": "wait_all"}],
        "training": dict(TRAINING),
    }
    data.update(fields)
    return Scenario.model_validate(data)


def run(variant: dict, seed: int = 0, **fields) -> RunRecorder:
    sc = trained(variants=[variant], **fields)
    return simulate_training(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), seed)


def exact_variants() -> list[dict]:
    """Every registered exact scheme, with the most demanding parameters it takes for N workers (s <= 2); not the
    pipelined ones, whose stale partition gradients train otherwise (tests/test_pipelined.py), nor the sequential
    ones, which do not train yet (tests/test_sequential.py)."""
    variants = []
    for name in available_schemes():
        if not scheme_class(name).exact or scheme_class(name).pipelined or scheme_class(name).sequential:
            continue
        sets = [(s, p) for s, p in valid_parameter_sets(name, N) if s <= 2]
        s, params = max(sets, key=lambda sp: (sp[0], sp[1].get("m", 1)))
        variants.append({"scheme": name, "s": s, **params})
    return variants


@pytest.fixture(scope="module")
def uncoded() -> RunRecorder:
    return run({"scheme": "uncoded", "policy": "wait_all"})


@pytest.mark.blas  # torch's losses of two computations, to 1e-5
@pytest.mark.parametrize("variant", exact_variants(), ids=lambda v: f"{v['scheme']}-s{v['s']}")
def test_every_exact_scheme_trains_as_uncoded_on_the_same_mini_batches(variant, uncoded):
    rec = run(variant)
    assert rec.exact.all() and np.isfinite(rec.loss).all()
    # The decoded float32 gradient is the plain sum's up to gain * r * eps32 (1e-6 of its norm here); stepped at a
    # learning rate of 3e-5 that moves the weights, and so the loss, far less than the loss's own float32 rounding:
    # a few ulp of float32 (1.2e-7 each; measured 4.4e-8 relative at most), held to 1e-5 on any kernel of numpy's
    # BLAS or torch's. Accuracy counts test samples: equal unless a prediction flips, one of 1024 at most.
    np.testing.assert_allclose(rec.loss, uncoded.loss, rtol=1e-5, atol=1e-7)
    evaluated = ~np.isnan(uncoded.accuracy)
    assert evaluated.sum() == 3 and np.array_equal(evaluated, ~np.isnan(rec.accuracy))
    np.testing.assert_allclose(rec.accuracy[evaluated], uncoded.accuracy[evaluated], atol=1 / 1024)
    assert uncoded.loss[-1] < uncoded.loss[0]  # it learns


@pytest.mark.blas
@pytest.mark.parametrize("stale_work", ["abandon", "finish"])
def test_exact_training_survives_crashes_and_redone_work(stale_work):
    """Crashed workers redo the iteration on the weights of the iteration they redo; with ``finish`` late work
    is delivered (with its times) but never decoded into a later iteration."""
    failures = {"model": "crash", "probability": 0.15, "downtime": 0.05}
    fields = {"failures": failures, "stale_work": stale_work}
    reference = run({"scheme": "uncoded", "policy": "wait_all"}, **fields)
    rec = run({"scheme": "cr", "s": 2}, **fields)
    assert rec.failed.any() and rec.exact.all()
    # a decoded gradient against the plain sum, as in the test above: float32 rounding of the loss, held to 1e-5
    np.testing.assert_allclose(rec.loss, reference.loss, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(reference.loss, run({"scheme": "uncoded", "policy": "wait_all"}).loss, rtol=1e-5)


@pytest.mark.blas
def test_training_on_a_topology_s_links_waits_for_the_weights_and_trains_as_without_them():
    """Jobs that wait for their copy of the weights (the master's egress, a node's downlink) still compute on
    them: the losses are those of a run whose weights take no time, the iterations longer."""
    variant = {"scheme": "cr", "s": 2}
    links = {"topology": {"nodes": 3}, "network": {"bandwidth": 2e6, "downlink": 1e6, "master": {"egress": 3e6}}}
    wired, plain = run(variant, **links), run(variant)
    assert wired.exact.all() and (wired.duration > plain.duration).all()
    np.testing.assert_allclose(wired.loss, plain.loss, rtol=1e-5, atol=1e-7)


def test_the_exact_schemes_decode_from_different_workers_each_iteration():
    """So their equal losses are not those of one set of workers: the straggling changes who is used."""
    rec = run({"scheme": "cr", "s": 2})
    assert len({tuple(row) for row in rec.used}) > 3 and (rec.used.sum(axis=1) < N).any()


def test_training_leaves_the_times_as_the_models_drew_them():
    for variant in ({"scheme": "fr", "s": 1}, {"scheme": "uncoded", "policy": {"name": "k_async", "k": 3}}):
        rec = run(variant)
        sc = trained(variants=[variant])
        plain = simulate_event(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
        for column in ("start", "end", "duration", "staleness"):
            np.testing.assert_array_equal(getattr(rec, column), getattr(plain, column))
        np.testing.assert_array_equal(rec.used, plain.used)


@pytest.mark.parametrize(
    "variant",
    [
        {"scheme": "ignore_stragglers", "s": 2},
        {"scheme": "uncoded", "policy": {"name": "fastest_k", "k": 4}},
        {"scheme": "cr", "s": 1, "policy": {"name": "deadline", "deadline": 0.02, "fallback": "approximate"}},
    ],
    ids=["ignore_stragglers", "fastest_k", "deadline-approximate"],
)
def test_approximate_decodes_train_differently_and_record_their_residual(variant, uncoded):
    rec = run(variant)
    approximate = ~rec.exact
    assert approximate.any() and (rec.residual[approximate] > 0).all()
    assert not np.allclose(rec.loss[1:], uncoded.loss[1:], rtol=1e-3)
    assert np.isfinite(rec.loss).all()


@pytest.mark.parametrize(
    "policy",
    [{"name": "k_async", "k": 3}, {"name": "k_batch_async", "k": 3}, "async"],
    ids=["k_async", "k_batch_async", "async"],
)
def test_asynchronous_updates_train_differently_and_record_their_staleness(policy, uncoded):
    rec = run({"scheme": "uncoded", "policy": policy})
    assert (rec.staleness > 0).any()
    assert not np.allclose(rec.loss, uncoded.loss, rtol=1e-3)
    assert np.isfinite(rec.loss).all() and rec.loss[-1] < rec.loss[0]


def started_cluster(sc: Scenario, variant: int = 0) -> tuple[TrainingCluster, object]:
    v = sc.variants[variant]
    scheme = scheme_for(sc, v)
    cluster = TrainingCluster(sc, scheme, draw_run(sc, scheme, 0), link_per_job=v.policy.synchronous, seed=0)
    cluster.start(cached_data(sc))
    return cluster, scheme


def test_a_partition_is_computed_once_per_version_and_abandoned_work_not_at_all():
    sc = trained(variants=[{"scheme": "cr", "s": 2}])
    cluster, scheme = started_cluster(sc)
    from gcbench.training.learner import Learner

    learner = Learner(scheme, sc.training, 10, 0)
    rec = RunRecorder(sc.iterations, N)
    draws = draw_run(sc, scheme, 0)
    SynchronousMaster(cluster, scheme, sc.variants[0], draws.crash, sc.stale_work, rec, learner).run()
    covered = [len({j for w in np.flatnonzero(row).tolist() for j in scheme.partitions(w)}) for row in rec.used]
    assert cluster.computed == sum(covered)  # each used worker holds s + 1 = 3 partitions: 3x fewer computed
    assert rec.used.sum() * 3 > cluster.computed and (rec.used.sum(axis=1) < N).any()  # some work was abandoned


def test_a_job_computes_on_the_weights_published_before_its_submission():
    sc = trained(variants=[{"scheme": "uncoded", "policy": {"name": "k_async", "k": 1}}])
    cluster, scheme = started_cluster(sc)
    d = 30730
    first, second = np.zeros(d, dtype=np.float32), np.full(d, 0.01, dtype=np.float32)
    cluster.publish(first)
    cluster.submit(0, 0, 0, False, batch=3)
    cluster.publish(second)
    second[:] = 5.0  # the cluster keeps a copy: stepping the learner's weights in place changes nothing
    cluster.submit(1, 1, 0, False, batch=3)
    results = {event.worker: event for event in cluster.drain() if hasattr(event, "messages")}
    model = build_model("softmax", 10, 0)
    flat = share_flat_storage(model)
    data = cached_data(sc)
    shards = cluster.sampler.shard_data(data.train_images, data.train_labels)
    for worker, weights in ((0, 0.0), (1, 0.01)):
        flat.numpy()[:] = weights
        gradient, loss = shard_gradient(model, shards[worker], cluster.sampler, 3, worker, torch.device("cpu"))
        np.testing.assert_array_equal(results[worker].messages[0], gradient.numpy())
        assert results[worker].losses == {worker: loss}
    cluster.shutdown()
    assert not cluster.published and not cluster.gradients


TINY = {
    "name": "tiny-trained",
    "workers": 4,
    "iterations": 8,
    "compute": {"per_partition": {"distribution": "shifted_exponential", "shift": 0.01, "rate": 100}},
    "straggling": {"model": "independent", "probability": 0.3, "slowdown": 6},
    "variants": [
        {"label": "uncoded", "scheme": "uncoded", "policy": "wait_all"},
        {"label": "FR s=1", "scheme": "fr", "s": 1},
        {"label": "2-async", "scheme": "uncoded", "policy": {"name": "k_async", "k": 2}},
    ],
    "training": {**TRAINING, "batch_size": 40, "eval_every": 2, "learning_rate": 3e-4, "target_accuracy": 0.5},
}


def write(tmp_path: Path, **changes) -> Path:
    data = json.loads(json.dumps(TINY))
    for key, value in changes.items():
        if key.startswith("training."):
            data["training"][key.split(".", 1)[1]] = value
        else:
            data[key] = value
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_cli_trains_and_writes_loss_and_accuracy(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["simulate", str(write(tmp_path)), "--out", str(out), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    iterations = pd.read_parquet(out / "iterations.parquet")
    assert {"loss", "accuracy"} <= set(iterations.columns)
    assert iterations["loss"].notna().all()
    assert iterations.groupby("variant")["accuracy"].count().tolist() == [4, 4, 4]  # iterations 1, 3, 5, 7
    assert json.loads((out / "run.json").read_text())["engines"] == dict.fromkeys(
        ("uncoded", "FR s=1", "2-async"), "event"
    )
    assert "final loss" in result.output and "final accuracy" in result.output and "time to 50.0%" in result.output
    assert "to the first test evaluation reaching it" in " ".join(result.output.split())
    summary = pd.read_csv(out / "summary.csv")
    first = iterations[iterations["accuracy"] >= 0.5].groupby("variant")["end"].min()
    assert summary.set_index("variant")["time_to_target"].to_dict() == pytest.approx(first.to_dict())


def test_an_unreached_target_says_so(tmp_path):
    path = write(tmp_path, iterations=2, **{"training.learning_rate": 1e-9, "training.target_accuracy": 0.99})
    result = runner.invoke(app, ["simulate", str(path), "--out", str(tmp_path / "run"), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert result.output.count("not reached") == 3


def test_summary_reports_time_to_target_per_variant_and_seed_counts():
    rows = []
    for seed, reached_at in ((0, 2), (1, None)):
        for t in range(4):
            accuracy = 0.9 if reached_at is not None and t >= reached_at else 0.2
            row = {"variant": "a", "point": 0, "seed": seed, "iteration": t, "duration": 1.0, "end": t + 1.0}
            rows.append({**row, "stop": "all_arrived", "exact": True, "staleness": 0.0, "loss": 4.0 - t})
            rows[-1]["accuracy"] = accuracy
    summary = summarize(pd.DataFrame(rows), target=0.8).iloc[0]
    assert summary["time_to_target"] == 3.0 and summary["target_reached"] == 1 and summary["seeds"] == 2
    assert summary["final_loss"] == 1.0 and summary["final_accuracy"] == pytest.approx(0.55)
    assert "time_to_target" not in summarize(pd.DataFrame(rows)).columns


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"training.target_accuracy": 1.5}, "training.target_accuracy"),
        ({"training.in_simulator": "sometimes"}, "training.in_simulator"),
        ({"engine": "vectorised"}, "engine: vectorised computes no gradients, and training.in_simulator is true"),
        ({"training.batch_size": 42}, "training.batch_size: 42 is not a multiple of the 4 data partitions"),
    ],
)
def test_a_bad_training_field_is_one_sentence_and_exit_2(tmp_path, changes, message):
    for command in (["simulate", "--check"], ["simulate"]):
        result = runner.invoke(app, [*command, str(write(tmp_path, **changes)), "--out", str(tmp_path / "o")])
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output
        assert result.output.strip().count("\n") <= 2


def test_the_engine_flag_cannot_make_a_trained_run_vectorised(tmp_path):
    result = runner.invoke(
        app, ["simulate", str(write(tmp_path)), "--engine", "vectorised", "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "engine: vectorised computes no gradients" in result.output


def test_a_stuck_trained_run_errors_cleanly(tmp_path):
    path = write(tmp_path, failures={"model": "crash", "probability": 0.6, "downtime": None},
                 variants=[{"label": "FR s=1", "scheme": "fr", "s": 1}])  # fmt: skip
    result = runner.invoke(app, ["simulate", str(path), "--out", str(tmp_path / "o"), "--jobs", "1"])
    assert result.exit_code == 2, result.output
    assert "can never finish" in result.output and "Traceback" not in result.output


def test_auto_takes_the_event_engine_for_every_variant_of_a_trained_scenario():
    sc = trained(variants=[{"scheme": "fr", "s": 1}])
    assert engine_for(sc, sc.variants[0]) == "event"
    forced = sc.model_copy(update={"engine": "vectorised"})  # past validation, which refuses it first
    with pytest.raises(GcbenchError, match="engine: vectorised computes no gradients"):
        engine_for(forced, forced.variants[0])


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("trained")
    out = folder / "tiny-trained"
    sweep = {"sweep": {"straggling.slowdown": [2, 6]}}
    result = runner.invoke(app, ["simulate", str(write(folder, **sweep)), "--out", str(out), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow  # (seconds: the everyday lane keeps its cheaper siblings)
def test_plot_draws_loss_and_accuracy_against_simulated_time(trained_run, tmp_path):
    from gcbench.plot import figures
    from gcbench.plot.runs import load_run
    from gcbench.plot.training import run_target

    result = runner.invoke(app, ["plot", str(trained_run), "-o", str(tmp_path), "--report"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tiny-trained-sim-training.png").is_file()
    report = (tmp_path / "tiny-trained-report.md").read_text()
    assert "final accuracy" in report and "Time to reach 50.0% test accuracy" in report  # the scenario's target
    run = load_run(trained_run)
    assert run_target(run.iterations, run.metadata) == 0.5
    fig = figures.training_curves(run.iterations, 0.5, run.mode)
    texts = {ax.get_xlabel() for ax in fig.axes} | {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {"simulated time (s)", "iteration", "target 50.0%"} <= texts
    last = run.iterations[(run.iterations["point"] == 1) & (run.iterations["variant"] == "uncoded")]
    drawn = fig.axes[0].lines[0].get_xdata()  # the last sweep point's curve only: one line per variant
    np.testing.assert_array_equal(drawn, last["end"].to_numpy())


class StartedTrainingCluster(TrainingCluster):
    """A TrainingCluster given data and weights as it is built, so the conformance suite's jobs compute."""

    @classmethod
    def from_scenario(cls, scenario, scheme, seed: int, synchronous: bool = True):
        training = scenario.training.model_copy(update={**TRAINING, "batch_size": 4 * scheme.k})
        cluster = super().from_scenario(scenario.model_copy(update={"training": training}), scheme, seed, synchronous)
        cluster.start(cached_data(trained()))
        cluster.publish(np.zeros(30730, dtype=np.float32))
        return cluster


def test_the_training_cluster_passes_the_cluster_conformance_suite(monkeypatch):
    """Its gradients computed as results are delivered change nothing the protocol promises."""
    from gcbench.cluster import _registry
    from gcbench.testing import cluster_checks, cluster_parameters

    # registered for this test only: an entry (virtual clock) and its class, as backend_class would set it
    entry = _registry.BackendEntry("simpy-trained", "gcbench.sim.training:TrainingCluster", clock="virtual")
    monkeypatch.setitem(_registry._ENTRIES, "simpy-trained", entry)
    monkeypatch.setitem(_registry._CLASSES, "simpy-trained", StartedTrainingCluster)
    monkeypatch.setattr(StartedTrainingCluster, "name", "simpy-trained", raising=False)
    parameters = cluster_parameters.ClusterTestParameters()
    monkeypatch.setitem(cluster_parameters.CLUSTER_TEST_PARAMETERS, "simpy-trained", parameters)
    computed = []
    compute = TrainingCluster._compute
    monkeypatch.setattr(TrainingCluster, "_compute", lambda self, *a: computed.append(1) or compute(self, *a))
    for check, reason in cluster_checks.cluster_checks("simpy-trained"):
        assert reason is None
        check("simpy-trained")
    assert computed  # the suite's results carried real messages


@pytest.mark.slow
def test_parallel_tasks_train_as_tasks_in_turn():
    """--jobs 2 (spawned processes, as torch is loaded here) gives the same tables, bit for bit."""
    from gcbench.scenario.loading import SweepPoint
    from gcbench.sim.runner import simulate_points

    sc = trained(iterations=6, variants=[{"scheme": "fr", "s": 1}, {"scheme": "uncoded", "policy": "async"}])
    serial, _ = simulate_points([SweepPoint({}, sc)], jobs=1, with_workers=False)
    parallel, _ = simulate_points([SweepPoint({}, sc)], jobs=2, with_workers=False)
    assert_tables_equal(serial, parallel)  # one machine and kernel: loss and accuracy too, bit for bit
    assert serial["loss"].notna().all()


def test_a_task_trains_on_one_torch_and_one_blas_thread_and_restores_them():
    from threadpoolctl import threadpool_info

    from gcbench.sim.training import one_torch_thread

    def blas_threads() -> list[int]:
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

    before, threads = blas_threads(), torch.get_num_threads()
    with one_torch_thread():
        assert torch.get_num_threads() == 1 and blas_threads() == [1] * len(before)
    assert torch.get_num_threads() == threads and blas_threads() == before
