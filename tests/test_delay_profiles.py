"""Delay profiles of Sequential-Gradient-Coding-2 as a trace source: pickles written here in that repository's
format are replayed exactly (its load model included), and a pickle naming anything but data is refused without
running it."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.errors import GcbenchError
from gcbench.models.delay_profiles import read_base_compute, read_profile

runner = CliRunner()
WORKERS, ROUNDS = 4, 12


def profile_rounds(seed: int = 0, workers: int = WORKERS, rounds: int = ROUNDS) -> tuple[list, np.ndarray]:
    """Rounds as the repository pickles them (results in completion order, numpy scalars, the Lambda response),
    and the delays they hold (rounds x workers, by worker id)."""
    rng = np.random.default_rng(seed)
    delays = rng.uniform(0.5, 2.0, (rounds, workers))
    out = []
    for r in range(rounds):
        started = rng.uniform(0, 1, workers)
        results = [
            {"worker_id": np.int32(w), "started": float(started[w]), "finished": np.float64(started[w] + delays[r, w]),
             "response": {"StatusCode": 200, "ResponseMetadata": {"HTTPHeaders": {"date": "x"}}}, "payload": "removed"}
            for w in rng.permutation(workers)
        ]  # fmt: skip
        out.append({"round": r, "started": 0.0, "finished": float(delays[r].max()), "results": results})
    exact = np.array([[r["results"][i]["finished"] - r["results"][i]["started"] for i in np.argsort(
        [int(x["worker_id"]) for x in r["results"]])] for r in out])  # fmt: skip
    return out, exact


def write(path: Path, data) -> Path:
    path.write_bytes(pickle.dumps(data))
    return path


def test_a_profile_is_every_workers_finish_minus_start_by_worker_id(tmp_path):
    rounds, exact = profile_rounds()
    assert np.array_equal(read_profile(write(tmp_path / "p.pkl", rounds)), exact)


def test_base_comp_gives_the_slope_of_the_regions_line(tmp_path):
    path = write(tmp_path / "base_comp.pkl", {"Canada": [np.float64(1.1217530061354162), np.float64(0.71)]})
    assert read_base_compute(path, "Canada") == 1.1217530061354162
    with pytest.raises(GcbenchError, match="has no line for region 'London' \\(it has Canada\\)"):
        read_base_compute(path, "London")


class Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_pickle_naming_anything_but_data_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    path = write(tmp_path / "evil.pkl", [{"round": 0, "results": [Evil(marker)]}])
    with pytest.raises(GcbenchError, match="names io.open, and a delay profile holds only lists"):
        read_profile(path)
    assert not marker.exists()
    numpy_object = write(tmp_path / "object.pkl", [np.array([1], dtype=object)[0:1]])
    with pytest.raises(GcbenchError, match="names numpy"):
        read_profile(numpy_object)
    truncated = tmp_path / "truncated.pkl"
    truncated.write_bytes(pickle.dumps(profile_rounds()[0])[:200])
    with pytest.raises(GcbenchError, match="is not a readable pickle"):
        read_profile(truncated)
    with pytest.raises(GcbenchError, match="holds no list of rounds"):
        read_profile(write(tmp_path / "dict.pkl", {"rounds": 1}))
    with pytest.raises(GcbenchError, match="round 0 lacks a numeric worker_id, started or finished"):
        read_profile(write(tmp_path / "bad.pkl", [{"results": [{"worker_id": 0, "started": 1.0}]}]))


def scenario_file(tmp_path: Path, trace: str, variants: str) -> Path:
    path = tmp_path / "profile.yaml"
    path.write_text(
        f"name: profile\nworkers: {WORKERS}\niterations: {ROUNDS}\n"
        f"compute: {{trace: {trace}}}\n"
        "network: {latency: 0.0, bandwidth: null}\n"
        f"variants:\n{variants}"
    )
    return path


def test_a_profile_replays_exactly_with_the_repositorys_load_model(tmp_path):
    rounds, exact = profile_rounds()
    write(tmp_path / "w4-n12-l0_000-b256-cno_forloop-Canada.pkl", rounds)
    write(tmp_path / "base_comp.pkl", {"Canada": [np.float64(0.5), np.float64(0.7)]})
    trace = (
        "{path: w4-n12-l0_000-b256-cno_forloop-Canada.pkl, load_scaling: base_compute, "
        "base_compute: {path: base_comp.pkl, region: Canada}}"
    )
    variants = "  - {label: uncoded, scheme: uncoded, policy: wait_all}\n  - {label: FR, scheme: fr, s: 1}\n"
    out = tmp_path / "run"
    result = runner.invoke(app, ["simulate", str(scenario_file(tmp_path, trace, variants)), "--out", str(out)])
    assert result.exit_code == 0, result.output
    workers = pd.read_parquet(out / "workers.parquet")
    for label, load in (("uncoded", 1), ("FR", 2)):
        rows = workers[workers["variant"] == label].sort_values(["iteration", "worker"])
        took = (rows["compute_end"] - rows["compute_start"]).to_numpy().reshape(ROUNDS, WORKERS)
        # the delay at load L/n: the profile's (measured at load 0) plus L/n times the base compute
        np.testing.assert_allclose(took, exact + load / WORKERS * 0.5, rtol=1e-12, atol=0)
    iterations = pd.read_parquet(out / "iterations.parquet")
    uncoded = iterations[iterations["variant"] == "uncoded"]["duration"].to_numpy()
    np.testing.assert_allclose(uncoded, exact.max(axis=1) + 0.125, rtol=1e-12)


def test_a_profile_replays_as_measured_without_a_load_model(tmp_path):
    rounds, exact = profile_rounds(seed=1)
    write(tmp_path / "p.pkl", rounds)
    variants = "  - {label: uncoded, scheme: uncoded, policy: wait_all}\n"
    path = scenario_file(tmp_path, "{path: p.pkl, load_scaling: none}", variants)
    out = tmp_path / "run"
    assert runner.invoke(app, ["simulate", str(path), "--out", str(out)]).exit_code == 0
    iterations = pd.read_parquet(out / "iterations.parquet")
    assert np.array_equal(iterations["duration"].to_numpy(), exact.max(axis=1))


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        ("{path: evil.pkl}", "names io.open, and a delay profile holds only lists"),
        ("{path: p.pkl, load_scaling: base_compute}", "load_scaling: base_compute and base_compute"),
        ("{path: p.pkl, base_compute: 0.5}", "give load_scaling: base_compute, not proportional"),
        ("{path: p.pkl, load_scaling: base_compute, base_compute: {path: p.pkl, region: Canada}}",
         "has no line for region 'Canada'"),
        ("{path: small.pkl}", "small.pkl profiles 2 workers, the scenario needs 4"),
    ],
)  # fmt: skip
def test_a_profile_the_scenario_cannot_replay_is_one_sentence(tmp_path, trace, message):
    write(tmp_path / "p.pkl", profile_rounds()[0])
    write(tmp_path / "small.pkl", profile_rounds(workers=2)[0])
    write(tmp_path / "evil.pkl", [{"round": 0, "results": [Evil(tmp_path / "ran")]}])
    path = scenario_file(tmp_path, trace, "  - {label: uncoded, scheme: uncoded, policy: wait_all}\n")
    result = runner.invoke(app, ["simulate", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and message in result.output, result.output
    assert result.output.count("\n") == 1 and not (tmp_path / "ran").exists()
