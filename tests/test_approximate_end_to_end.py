"""The approximate, stochastic and random schemes in `gcbench simulate`: both engines, training, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.coding import make_scheme

runner = CliRunner()
NEW_SCHEMES = [
    {"scheme": "is_gc", "s": 2, "d": 3},
    {"scheme": "frc", "s": 3, "d": 3},
    {"scheme": "bgc", "s": 3, "d": 2, "seed": 1},
    {"scheme": "expander", "s": 3, "d": 4},
    {"scheme": "expander", "s": 3, "d": 4, "decoder": "fixed"},
    {"scheme": "sgc", "s": 3, "d": 3},
    {"scheme": "bcc", "s": 1, "b": 3},
    {"scheme": "bcc", "s": 0, "b": 4, "policy": {"name": "deadline", "deadline": 0.5, "fallback": "approximate"}},
]


def scenario(variants: list[dict], **fields) -> dict:
    return {
        "name": "approximate",
        "workers": 12,
        "iterations": 25,
        "seeds": [0, 1],
        "compute": {"per_partition": {"distribution": "shifted_exponential", "shift": 0.1, "rate": 10}},
        "straggling": {"model": "independent", "probability": 0.25, "slowdown": 5},
        "variants": variants,
        **fields,
    }


def gcbench(tmp_path: Path, data: dict, *args: str):
    path = tmp_path / "approximate.yaml"
    path.write_text(yaml.safe_dump(data))
    return runner.invoke(app, ["simulate", str(path), *args])


def test_both_engines_run_every_new_scheme_to_the_same_tables(tmp_path):
    tables = {}
    for engine in ("vectorised", "event"):
        out = tmp_path / engine
        done = gcbench(tmp_path, scenario(NEW_SCHEMES), "--engine", engine, "--out", str(out))
        assert done.exit_code == 0, done.output
        tables[engine] = [pd.read_parquet(out / f"{t}.parquet") for t in ("iterations", "workers")]
    for fast, event in zip(tables["vectorised"], tables["event"], strict=True):
        # the engines add the same times in other orders (1e-9, as tests/test_event_engine.py); the residuals come
        # from one decoder on one machine, the same bits
        pd.testing.assert_frame_equal(fast, event, rtol=1e-9)
    iterations = tables["event"][0]
    exact = iterations.groupby("variant")["exact"].mean()
    assert exact["bcc(s=1,b=3)/decodable"] == 1.0  # exact whenever it decodes, and it waits until it does
    assert 0.0 < exact["bcc(s=0,b=4)/deadline"] < 1.0  # the deadline's approximate fallback: batches missing
    assert exact["sgc(s=3,d=3)/decodable"] == 0.0 and (iterations[iterations.scheme == "sgc"].residual > 0).all()
    assert (iterations[~iterations.exact].residual > 0).all()


def test_the_recorded_residual_is_the_schemes_own_for_the_messages_used(tmp_path):
    done = gcbench(tmp_path, scenario(NEW_SCHEMES[2:4]), "--out", str(tmp_path / "run"))
    assert done.exit_code == 0, done.output
    iterations = pd.read_parquet(tmp_path / "run" / "iterations.parquet")
    workers = pd.read_parquet(tmp_path / "run" / "workers.parquet")
    for variant in NEW_SCHEMES[2:4]:
        params = {k: v for k, v in variant.items() if k not in ("scheme", "s")}
        scheme = make_scheme(variant["scheme"], n=12, s=variant["s"], **params)
        rows = iterations[iterations.scheme == variant["scheme"]]
        for row in rows.itertuples():
            used = workers[(workers.variant == row.variant) & (workers.seed == row.seed)]
            used = used[(used.iteration == row.iteration) & used.used].worker.to_numpy()
            assert (row.exact, row.residual) == pytest.approx(scheme.decode_quality(np.sort(used)))


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ({"scheme": "frc", "s": 2, "d": 5}, "frc needs d to divide n: d=5 does not divide n=12."),
        ({"scheme": "expander", "s": 2, "decoder": "lsq"}, "The 'decoder' parameter of expander must be optimal or"),
        ({"scheme": "bcc", "s": 3, "b": 4}, "The 'b' parameter of bcc must be an int in [1, 3]"),
        ({"scheme": "sgc", "s": 1, "d": 2.5}, "The 'd' parameter of sgc must be an int. Got 2.5 instead."),
    ],
)
def test_a_bad_scheme_parameter_in_a_scenario_is_one_sentence_and_exit_2(tmp_path, variant, message):
    done = gcbench(tmp_path, scenario([variant]), "--out", str(tmp_path / "run"))
    assert done.exit_code == 2, done.output
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr


TRAINING = {
    "in_simulator": True, "dataset": "synthetic", "model": "softmax", "batch_size": 60,
    "learning_rate": 3e-5, "eval_every": 4,
}  # fmt: skip


@pytest.mark.slow
def test_every_new_scheme_trains_inside_the_simulator(tmp_path):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    variants = [{**v, "s": min(v["s"], 2)} for v in NEW_SCHEMES if v["scheme"] != "frc"] + [
        {"scheme": "frc", "s": 2, "d": 2}
    ]
    data = scenario(variants, iterations=8, seeds=[0], training=TRAINING, gradient={"length": 30730})
    data["workers"] = 6
    for variant in data["variants"]:
        variant.update({"b": 2} if variant["scheme"] == "bcc" else {})
        variant.update({"d": 3} if variant["scheme"] == "expander" else {})
    done = gcbench(tmp_path, data, "--out", str(tmp_path / "run"))
    assert done.exit_code == 0, done.output
    iterations = pd.read_parquet(tmp_path / "run" / "iterations.parquet")
    assert np.isfinite(iterations.loss).all()
    assert set(iterations.scheme) == {v["scheme"] for v in variants}
    approximate = iterations[~iterations.exact]
    assert (approximate.residual > 0).all() and set(approximate.scheme) >= {"sgc", "bgc"}
