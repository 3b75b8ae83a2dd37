"""Fuzz: `gcbench run --resume` on run directories damaged at random ends in one sentence and exit 2, or (where
the damage left a usable run) resumes; never a traceback, never a hang (issue 9, item 19; the slow lane).

FakeMaster stands in for Ray, so a directory that is still usable resumes in a second.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")

import fakereal  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from gcbench.cli import app  # noqa: E402

pytestmark = pytest.mark.slow
runner = CliRunner()
HANG_SECONDS = 60

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
    """An interrupted run (a checkpoint per variant, FakeMaster for Ray), and the patch kept for the module."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        fake = fakereal.patch_ray(monkeypatch)
        folder = tmp_path_factory.mktemp("fuzz")
        (folder / "fake.yaml").write_text(fakereal.SCENARIO)
        fake.events[("FR s=1", 0, 3)] = "interrupt"
        done = runner.invoke(app, ["run", str(folder / "fake.yaml"), "--out", str(folder / "run")])
        assert done.exit_code == 130, done.output
        fake.events.clear()
        yield folder / "run"


def paths(value, prefix=()):
    """Every path into a JSON value (mappings and lists), the value's own included."""
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, inner in items:
        yield from paths(inner, (*prefix, key))


def set_at(value, path, new):
    if not path:
        return new
    node = value
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return value


@st.composite
def damages(draw):
    """(file, how) pairs: what to do to run.json or to a checkpoint."""
    kind = draw(st.sampled_from(["bytes", "json", "truncate", "drop", "set", "state", "row"]))
    target = draw(st.sampled_from(["run.json", "checkpoints/variant0-seed0.pt", "checkpoints/variant1-seed0.pt"]))
    if kind in ("state", "row"):
        target = draw(st.sampled_from(["checkpoints/variant0-seed0.pt", "checkpoints/variant1-seed0.pt"]))
    if kind in ("drop", "set"):
        target = "run.json"
    return kind, target, draw(st.randoms(use_true_random=False)), draw(json_values)


def damage(run: Path, kind: str, target: str, rng, value) -> None:
    path = run / target
    if kind == "bytes":
        path.write_bytes(rng.randbytes(rng.randrange(0, 300)))
    elif kind == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: rng.randrange(0, len(data))])
    elif kind == "json":
        path.write_text(json.dumps(value)) if target == "run.json" else torch.save(value, path)
    elif kind == "drop":
        meta = json.loads(path.read_text())
        for key in rng.sample(sorted(meta), rng.randrange(1, len(meta) + 1)):
            del meta[key]
        path.write_text(json.dumps(meta))
    elif kind == "set":
        meta = json.loads(path.read_text())
        where = rng.choice(list(paths(meta))[1:])
        path.write_text(json.dumps(set_at(meta, where, value)))
    else:
        state = torch.load(path, weights_only=True)
        tree = {key: state[key] for key in ("next_iteration", "rows", "workers")} if kind == "row" else state
        where = rng.choice([p for p in paths(tree) if p][:200])
        set_at(state, where, value)
        torch.save(state, path)


def on_alarm(signum, frame):
    raise TimeoutError(f"gcbench run --resume took more than {HANG_SECONDS} s: a hang")


@settings(max_examples=150)
@given(damages())
@example(("set", "run.json", random.Random(3), {}))
@example(("json", "run.json", random.Random(0), [[[]]]))
@example(("state", "checkpoints/variant0-seed0.pt", random.Random(1), None))
@example(("state", "checkpoints/variant0-seed0.pt", random.Random(32), None))  # found: SGD's dampening None
@example(("state", "checkpoints/variant0-seed0.pt", random.Random(123), None))  # found: an optimizer group None
def test_a_damaged_run_directory_never_ends_in_a_traceback_or_a_hang(base_run, case):
    kind, target, rng, value = case
    run = Path(tempfile.mkdtemp()) / "run"
    try:
        shutil.copytree(base_run, run)
        damage(run, kind, target, rng, value)
        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(HANG_SECONDS)
        try:
            done = runner.invoke(app, ["run", "--resume", str(run)])
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
        assert done.exception is None or isinstance(done.exception, SystemExit), repr(done.exception)
        assert done.exit_code in (0, 2), done.output
        if done.exit_code == 2:
            errors = [line for line in done.output.splitlines() if line.startswith("error: ")]
            assert len(errors) == 1 and "Traceback" not in done.output, done.output
    finally:
        shutil.rmtree(run.parent, ignore_errors=True)
