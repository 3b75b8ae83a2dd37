"""`pip install -e '.[dev]' && pytest` without the [real] extra: real-mode tests skip, saying why, never error.

The extra cannot be uninstalled from a shared environment, so a child pytest runs
with a sitecustomize that makes torch, torchvision and ray unimportable, exactly as
a missing package is (ModuleNotFoundError).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
BLOCKER = """
import sys

class _WithoutRealExtra:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "torchvision", "ray"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, _WithoutRealExtra())
"""


def pytest_without_real_extra(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    command = [sys.executable, "-m", "pytest", "-n0", "-q", "-rs", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_the_blocker_hides_the_extra(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    probe = "try:\n import torch\nexcept ModuleNotFoundError:\n print('hidden')"
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "hidden", done.stderr


def test_every_test_module_collects_and_real_ones_skip_with_the_reason(tmp_path):
    done = pytest_without_real_extra(tmp_path, "--collect-only", "tests")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "error" not in done.stdout.splitlines()[-1].lower(), done.stdout[-3000:]
    skipped = re.findall(r"SKIPPED \[\d+\] (tests/\S+?):\d+: (.*)", done.stdout)
    assert {path for path, _ in skipped} >= {"tests/test_real_ray.py", "tests/test_real_resume.py"}
    assert all(reason.endswith("is part of the [real] extra") for _, reason in skipped), skipped


def test_the_real_mode_tests_run_to_skips_not_failures(tmp_path):
    real = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_real_*.py"))
    done = pytest_without_real_extra(tmp_path, "-m", "not slow", *real)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert "skipped" in summary and not re.search(r"failed|error", summary), summary
