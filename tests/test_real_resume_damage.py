"""`gcbench run --resume` on a damaged run directory: one sentence and exit 2, never a traceback (issue 9, item 19).

The run directory is made without Ray (FakeMaster); every damage is caught before anything would start.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")

import fakereal  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from gcbench.cli import app  # noqa: E402

fake_ray = fakereal.fake_ray  # the fixture
runner = CliRunner()


class NotAWeight:
    """Anything a weights-only loader must refuse to build."""


@pytest.fixture
def run_dir(tmp_path, fake_ray) -> Path:
    """An interrupted run with a checkpoint per variant (FakeMaster stands in for Ray)."""
    path = tmp_path / "fake.yaml"
    path.write_text(fakereal.SCENARIO)
    out = tmp_path / "run"
    fake_ray.events[("FR s=1", 0, 3)] = "interrupt"
    done = runner.invoke(app, ["run", str(path), "--out", str(out)])
    assert done.exit_code == 130, done.output
    fake_ray.events.clear()
    fake_ray.log.clear()
    return out


def resume(out: Path):
    done = runner.invoke(app, ["run", "--resume", str(out)])
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    return done


def edit_json(out: Path, change) -> None:
    meta = json.loads((out / "run.json").read_text())
    change(meta)
    (out / "run.json").write_text(json.dumps(meta))


RUN_JSON_DAMAGE = {
    "not JSON": (lambda out: (out / "run.json").write_text('{"mode": "real",'), "is not valid JSON"),
    "not UTF-8": (lambda out: (out / "run.json").write_bytes(b"\xff\xfe{"), "cannot be read as text"),
    "nested too deeply": (lambda out: (out / "run.json").write_text("[" * 100_000), "nested too deeply"),
    "a list": (lambda out: (out / "run.json").write_text("[1, 2]"), "holds a JSON array, not an object"),
    "missing keys": (lambda out: edit_json(out, lambda m: (m.pop("scenario"), m.pop("backend"))), "lacks 'scenario'"),
    "scenario not an object": (lambda out: edit_json(out, lambda m: m.update(scenario=[1])), "must be an object"),
    "invalid scenario": (
        lambda out: edit_json(out, lambda m: m["scenario"].update(workers=-3)),
        "its scenario is not valid: workers:",
    ),
    "bad backend": (
        lambda out: edit_json(out, lambda m: m.update(backend="mpi")),
        "'backend' must be 'ray', 'torch' or 'local'",
    ),
    "bad status": (lambda out: edit_json(out, lambda m: m.update(status=7)), "'status' must be one of"),
    "bad resumes": (lambda out: edit_json(out, lambda m: m.update(resumes="x")), "'resumes' must be a list"),
}


@pytest.mark.parametrize("damage", RUN_JSON_DAMAGE, ids=list(RUN_JSON_DAMAGE))
def test_a_damaged_run_json_is_one_sentence(run_dir, damage):
    make, expected = RUN_JSON_DAMAGE[damage]
    make(run_dir)
    done = resume(run_dir)
    assert done.exit_code == 2, done.output
    assert done.output.startswith(f"error: --resume: {run_dir / 'run.json'} is damaged (")
    assert expected in done.output and len(done.output.strip().splitlines()) == 1, done.output


def saved_state(out: Path) -> dict:
    return torch.load(out / "checkpoints" / "variant0-seed0.pt", weights_only=True)


def write_state(out: Path, state) -> None:
    torch.save(state, out / "checkpoints" / "variant0-seed0.pt")


CHECKPOINT_DAMAGE = {
    "random bytes": (lambda out: (out / "checkpoints" / "variant0-seed0.pt").write_bytes(b"\x00garbage" * 9), "read"),
    "a plain pickle": (
        lambda out: (out / "checkpoints" / "variant0-seed0.pt").write_bytes(pickle.dumps({"rows": []})),
        "cannot be read as a weights-only torch file",
    ),
    "arbitrary objects": (lambda out: write_state(out, {"model": NotAWeight()}), "weights-only torch file"),
    "truncated": (
        lambda out: (out / "checkpoints" / "variant0-seed0.pt").write_bytes(
            (out / "checkpoints" / "variant0-seed0.pt").read_bytes()[:500]
        ),
        "weights-only torch file",
    ),
    "a list": (lambda out: write_state(out, [1, 2]), "must be a mapping with the keys"),
    "next_iteration past the end": (
        lambda out: write_state(out, {**saved_state(out), "next_iteration": 99}),
        "next_iteration must be an integer from 0 to the scenario's 6 iterations",
    ),
    "rows that do not match": (
        lambda out: write_state(out, {**saved_state(out), "rows": [{"iteration": "x"}]}),
        "its rows must be iterations 0 to 3",
    ),
    "worker rows missing": (lambda out: write_state(out, {**saved_state(out), "workers": []}), "4 per iteration"),
    "another model": (
        lambda out: write_state(out, {**saved_state(out), "model": torch.nn.Linear(2, 3).state_dict()}),
        "its model or optimizer state does not fit training.model 'small_cnn'",
    ),
    "a bad random state": (lambda out: write_state(out, {**saved_state(out), "torch_rng": torch.zeros(3)}), "uint8"),
}


@pytest.mark.parametrize("damage", CHECKPOINT_DAMAGE, ids=list(CHECKPOINT_DAMAGE))
def test_a_damaged_checkpoint_is_one_sentence_before_anything_starts(run_dir, damage, fake_ray):
    make, expected = CHECKPOINT_DAMAGE[damage]
    make(run_dir)
    done = resume(run_dir)
    assert done.exit_code == 2, done.output
    path = run_dir / "checkpoints" / "variant0-seed0.pt"
    assert done.output.startswith(f"error: {path} is not a checkpoint of this run ("), done.output
    assert expected in done.output and "weights_only=False" not in done.output
    assert "delete it to run its variant from iteration 0" in done.output
    assert len(done.output.strip().splitlines()) == 1 and fake_ray.log == []
